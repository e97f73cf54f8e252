#include "models/family.h"

#include <array>

namespace noeira {

namespace {

// nanoGPT's and PaLM's estimate: 6 N + 12 L H Q T FLOPs per token, N the parameters
// without the position table (it is a lookup, no multiply), H heads of Q dims, T the context.
StepWork gpt_step_work(const Recipe& recipe, const DataSplit& data) {
  const GptSpec& g = recipe.gpt;
  const int64_t C = g.width, V = static_cast<int64_t>(data.corpus.vocab.size());
  const int64_t b = g.bias ? 1 : 0;
  // Per block: ln_1, c_attn, c_proj, ln_2, c_fc, c_proj (biases only with bias).
  const int64_t block = (C + b * C) + (3 * C * C + b * 3 * C) + (C * C + b * C) + (C + b * C) +
                        (4 * C * C + b * 4 * C) + (4 * C * C + b * C);
  const int64_t without_wpe = V * C + g.layers * block + (C + b * C);
  StepWork w;
  w.params = without_wpe + g.context * C;
  w.tokens_per_step = recipe.batch * g.context;
  const double head_dim = static_cast<double>(C) / static_cast<double>(g.heads);
  w.flops_per_token = 6.0 * static_cast<double>(without_wpe) +
                      12.0 * static_cast<double>(g.layers * g.heads) * head_dim *
                          static_cast<double>(g.context);
  w.flops_per_step = w.flops_per_token * static_cast<double>(w.tokens_per_step);
  return w;
}

constexpr FamilyTraits kClassifier{"", false, false, false, FamilyScore::kTestTop1, nullptr};

const std::array<FamilyTraits, 5> kFamilies = {{
    {"mlp", false, false, false, FamilyScore::kTestTop1, nullptr},
    {"convnet", false, false, false, FamilyScore::kTestTop1, nullptr},
    {"resnet", false, false, false, FamilyScore::kTestTop1, nullptr},
    {"vit", false, false, false, FamilyScore::kTestTop1, nullptr},
    {"gpt", true, true, true, FamilyScore::kValidationLoss, gpt_step_work},
}};

}  // namespace

const FamilyTraits& family_traits(const Recipe& recipe) {
  for (const FamilyTraits& f : kFamilies)
    if (f.name == recipe.family) return f;
  return kClassifier;
}

}  // namespace noeira
