// Recipes (models/recipes/*.json; models/recipe.h): load_recipe on the input as a file,
// then what every run does with a loaded recipe: hash it (checkpoints record the hash) and
// build its model (build_model, or build_gpt for the gpt family), which reads the "layers"
// list or the "model" section. Contract: a Recipe and a model, or an Error naming the
// recipe and the field; never a crash, a hang or undefined behaviour. Planning the model
// (sizes, memory) is not part of this target.
//
// Input: the recipe file. Cap: recipes are small; no allocation above 64 MiB, RSS below
// 1 GiB for inputs up to 64 KiB (long enough for deeply nested JSON).
// libFuzzer flags: -max_len=65536 -malloc_limit_mb=64 -rss_limit_mb=1024 -timeout=10
#include "fuzz/fuzz_support.h"
#include "models/model_builder.h"
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
  if (model) FUZZ_EXPECT(*model != nullptr);
  else FUZZ_EXPECT(!model.error().message.empty());
  return 0;
}
