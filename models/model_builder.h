// Builds a model from its recipe: the recipe's "family" picks one builder (models/mlp.cpp,
// convnet.cpp, resnet.cpp), which turns each entry of "layers" into modules. Every family
// walks the list the same way (models/layer_list.h), so parameter names and their
// registration order — which the twin and the checkpoints rely on — follow one rule.
#pragma once
#include <memory>

#include "models/recipe.h"
#include "nn/module.h"

namespace noeira {

Result<std::unique_ptr<Module>> build_model(const Recipe& recipe);

}  // namespace noeira
