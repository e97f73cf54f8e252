// Recipes (models/recipes/*.json; models/recipe.h): load_recipe on the input as a file,
// then what every run does with a loaded recipe: hash it (checkpoints record the hash) and
// build its model (build_model, or build_gpt for the gpt family), which reads the "layers"
// list or the "model" section, then plan it as a trainer does (every buffer's shape and
// offset at the recipe's batch, the CPU backend answering plan-time queries:
// models/plan_check.h). Contract: a Recipe, a model and a plan, or an Error naming the
// recipe, the field or the module; never a crash, a hang or undefined behaviour. A plan
// whose sizes pass 64 bits is marked overflowed (Arenas::allocate refuses it), never
// wrapped around.
//
// Input: the recipe file. Cap: recipes are small; no allocation above 64 MiB, RSS below
// 1 GiB for inputs up to 64 KiB (long enough for deeply nested JSON).
// libFuzzer flags: -max_len=65536 -malloc_limit_mb=64 -rss_limit_mb=1024 -timeout=10
#include "fuzz/fuzz_support.h"
#include "kernels/cpu/cpu_ops.h"
#include "models/model_builder.h"
#include "models/plan_check.h"
#include "nn/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const noeira::fuzz::MemFile file(noeira::fuzz::Bytes(data, size));
  auto recipe = noeira::load_recipe(file.path());
  if (!recipe) {
    FUZZ_EXPECT(!recipe.error().message.empty());
    return 0;
  }
  FUZZ_EXPECT(recipe->json.is_object());
  FUZZ_EXPECT(noeira::json_hash(recipe->json).size() == 16);
  FUZZ_EXPECT(recipe->batch > 0);
  auto model = recipe->family == "gpt" ? noeira::build_gpt(*recipe, 65)
                                       : noeira::build_model(*recipe);
  if (!model) {
    FUZZ_EXPECT(!model.error().message.empty());
    return 0;
  }
  FUZZ_EXPECT(*model != nullptr);
  static noeira::CpuOps ops(1);
  auto plan = noeira::plan_recipe_model(**model, *recipe, ops);
  if (!plan) {
    FUZZ_EXPECT(!plan.error().message.empty());
  } else if (!plan->overflowed()) {
    FUZZ_EXPECT(plan->total_bytes() >= plan->bytes(noeira::MemCategory::kActivations));
    FUZZ_EXPECT(plan->bytes(noeira::MemCategory::kParams) ==
                plan->bytes(noeira::MemCategory::kGrads));
  }
  return 0;
}
