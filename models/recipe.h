// A recipe (models/recipes/<model>.json) is the single source of truth for a model's
// architecture and hyper-parameters; the C++ side and the twin both read it.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/error.h"
#include "nn/init.h"
#include "nn/loss.h"
#include "nn/optimizer.h"

namespace noeira {

struct Recipe {
  std::filesystem::path path;
  nlohmann::json json;  // the whole file, hashed into checkpoints
  std::string name;
  std::string description;
  Task task = Task::kClassification;
  std::string dataset;
  // dataset.normalize: x = (u8 / 255 - mean[c]) / std[c] for channel c; a recipe gives one
  // number (every channel) or a list with one per channel, e.g. CIFAR-10's three.
  std::vector<float> norm_mean = {0.0f}, norm_std = {1.0f};
  Shape input_shape;
  int num_classes = 0;
  int64_t batch = 0;
  bool drop_last = true;
  int epochs = 1;
  OptimizerConfig optimizer;
  bool cosine_schedule = false;  // optimizer.schedule: "cosine" (to 0 over the run) or "constant"
  InitKind init = InitKind::kKaimingUniform;
  int quick_epochs = 1;
  int64_t quick_max_steps = 0;  // 0 = whole epochs
};

// Where recipes live: $NOEIRA_RECIPES, else the source tree's models/recipes.
std::filesystem::path recipe_dir();
Result<Recipe> load_recipe(const std::filesystem::path& path);
// models/recipes/<model>.json
Result<Recipe> load_recipe_for_model(const std::string& model);
// Names of every recipe in recipe_dir(), sorted.
std::vector<std::string> list_recipes();

}  // namespace noeira
