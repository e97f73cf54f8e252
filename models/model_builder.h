// Builds a model from its recipe: the recipe's "family" picks one builder (models/mlp.cpp,
// convnet.cpp, resnet.cpp turn each entry of "layers" into modules; models/vit.cpp and
// gpt.cpp read a "model" section). The "layers" families walk the list the same way
// (models/layer_list.h), so parameter names and their registration order — which the twin
// and the checkpoints rely on — follow one rule; the "model" families name theirs as
// nanoGPT (gpt) and timm (vit) do.
#pragma once
#include <memory>

#include "models/recipe.h"
#include "nn/module.h"

namespace noeira {

// Every family but gpt, whose model needs the vocabulary size (build_gpt).
Result<std::unique_ptr<Module>> build_model(const Recipe& recipe);

// The vit family (models/vit.cpp): input (C, H, W) images, output (num_classes) logits.
Result<std::unique_ptr<Module>> build_vit(const Recipe& recipe);

// The gpt family (models/gpt.cpp): input (T) int32 ids, output (T, vocab) logits.
Result<std::unique_ptr<Module>> build_gpt(const Recipe& recipe, int64_t vocab);
// Its initialisation: normal(init_std), the c_proj weights init_std / sqrt(2 layers).
InitConfig gpt_init(const Recipe& recipe);

}  // namespace noeira
