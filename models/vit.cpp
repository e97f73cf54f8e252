// The vit family: a Vision Transformer from the recipe's "model" section. Parameter names
// and their registration order (= Philox init streams = checkpoint order; the twin's
// reference/twin/vit.py lists the same): patch_embed, cls_token, pos_embed, then per block
// blocks.{i}.ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj (the GPT block's
// names), then norm and head.
#include "models/model_builder.h"
#include "nn/class_token.h"
#include "nn/layernorm.h"
#include "nn/linear.h"
#include "nn/patch_embedding.h"
#include "nn/sequential.h"
#include "nn/transformer_block.h"

namespace noeira {

Result<std::unique_ptr<Module>> build_vit(const Recipe& recipe) {
  if (recipe.family != "vit")
    return make_error("model " + recipe.name + " is not a vit-family recipe");
  const VitSpec& v = recipe.vit;
  if (recipe.num_classes <= 0)
    return make_error("model " + recipe.name + ": num_classes must be positive");
  auto model = std::make_unique<Sequential>();
  // (C, H, W) -> (N, width) -> (N + 1, width) with the class token first
  model->add("patch_embed", std::make_unique<PatchEmbedding>(v.patch, v.width));
  model->add("", std::make_unique<ClassToken>());
  for (int64_t i = 0; i < v.layers; ++i)
    model->add("blocks." + std::to_string(i),
               std::make_unique<TransformerBlock>(v.heads, v.bias, /*causal=*/false,
                                                  v.mlp_ratio));
  model->add("norm", std::make_unique<LayerNorm>(1e-5f, v.bias));
  model->add("", std::make_unique<ClassTokenPool>());  // (N + 1, width) -> (width)
  model->add("head", std::make_unique<Linear>(recipe.num_classes, Act::kNone, true));
  return std::unique_ptr<Module>(std::move(model));
}

}  // namespace noeira
