// Builds a model from its recipe's "layers" list.
#pragma once
#include <memory>

#include "models/recipe.h"
#include "nn/module.h"

namespace noeira {

Result<std::unique_ptr<Module>> build_model(const Recipe& recipe);

}  // namespace noeira
