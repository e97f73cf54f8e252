// The gpt family: nanoGPT's GPT from the recipe's "model" section. Parameter names and
// their registration order follow nanoGPT's state dict (reference/twin/gpt.py lists them):
// wte, wpe, then per block h.{i}.ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj,
// then ln_f; the LM head is tied to wte and has no parameter of its own.
#include <cmath>

#include "models/model_builder.h"
#include "nn/embedding.h"
#include "nn/transformer_block.h"
#include "nn/layernorm.h"
#include "nn/sequential.h"
#include "nn/tied_head.h"

namespace noeira {

Result<std::unique_ptr<Module>> build_gpt(const Recipe& recipe, int64_t vocab) {
  if (recipe.family != "gpt")
    return make_error("model " + recipe.name + " is not a gpt-family recipe");
  if (vocab <= 0) return make_error("model " + recipe.name + ": the vocabulary is empty");
  const GptSpec& g = recipe.gpt;
  auto model = std::make_unique<Sequential>();
  auto embedding = std::make_unique<Embedding>(vocab, g.width, g.context);
  const Embedding& wte = *embedding;
  model->add("", std::move(embedding));  // (B, T) ids -> (B, T, C)
  for (int64_t i = 0; i < g.layers; ++i)
    model->add("h." + std::to_string(i), std::make_unique<TransformerBlock>(g.heads, g.bias));
  model->add("ln_f", std::make_unique<LayerNorm>(1e-5f, g.bias));
  model->add("", std::make_unique<TiedLmHead>(wte));  // (B, T, C) -> (B, T, V)
  return std::unique_ptr<Module>(std::move(model));
}

InitConfig gpt_init(const Recipe& recipe) {
  InitConfig init;
  init.kind = InitKind::kNormal;
  init.normal_std = recipe.gpt.init_std;
  // nanoGPT: the residual projections scaled by 1 / sqrt(2 * layers).
  init.std_overrides.push_back(
      {"c_proj.weight", recipe.gpt.init_std / std::sqrt(2.0 * static_cast<double>(recipe.gpt.layers))});
  return init;
}

}  // namespace noeira
