// What the code that trains, times and reports a model asks of its family, answered once
// here instead of by comparing family names at each place (models/model_builder.cpp maps
// a family's name to its builder; this file maps it to its traits).
#pragma once
#include <cstdint>
#include <string_view>

#include "models/recipe.h"
#include "models/recipe_data.h"

namespace noeira {

// What a family's runs are scored by, per seed.
enum class FamilyScore { kTestTop1, kValidationLoss };

// The work in one training step, for throughput columns.
struct StepWork {
  int64_t tokens_per_step = 0;
  int64_t params = 0;            // every parameter (the gpt family: the position table too)
  double flops_per_token = 0.0;  // forward + backward
  double flops_per_step = 0.0;
};

struct FamilyTraits {
  std::string_view name;
  // Token ids in, next-token logits out, over a text corpus: trains for steps (not
  // epochs) with an AutoregressiveTrainer and can sample text.
  bool language_model = false;
  // Builds its batches on the device and keeps a host-built batch as the baseline of that
  // (TrainerOptions::host_batch; the harness's "host-batch" variant).
  bool host_batch = false;
  // Trains data-parallel over ranks (parallel/: DDP, ZeRO-1/2/3).
  bool data_parallel = false;
  FamilyScore score = FamilyScore::kTestTop1;
  // FLOPs of one step by formula, where the family has one; null where they are counted
  // from the matrix products the model planned (TrainerCore::forward_flops_per_sample).
  StepWork (*analytic_work)(const Recipe&, const DataSplit&) = nullptr;
};

// The traits of the recipe's family. A name no builder knows gets a plain classifier's
// (models/model_builder.cpp refuses to build it, naming the families it knows).
const FamilyTraits& family_traits(const Recipe& recipe);

}  // namespace noeira
