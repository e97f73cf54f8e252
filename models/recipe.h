// A recipe (models/recipes/<model>.json) is the single source of truth for a model's
// architecture and hyper-parameters; the C++ side and the twin both read it.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/error.h"
#include "nn/init.h"
#include "nn/loss.h"
#include "nn/optimizer.h"
#include "models/recipe_schedule.h"

namespace noeira {

// The largest size a recipe (or a --batch) may give: a batch, an input dimension, a width,
// channels, heads, a kernel, a context. 2^24: no model here comes near it, while past it
// products of three sizes leave 64 bits and libraries' int dimensions overflow (oneDNN
// divided by zero on a 2^40-pixel input). Refused at load, naming the field.
inline constexpr int64_t kMaxRecipeSize = int64_t{1} << 24;
// The most blocks a model may stack (gpt and vit layers, a resnet stage's blocks): each is
// a handful of modules built before planning, so a count of millions would exhaust memory
// before the plan could refuse it.
inline constexpr int64_t kMaxRecipeDepth = 1024;

// "<what> is <value>; the most is <max>" when value > max (the caller says where).
std::string above_limit(const std::string& what, int64_t value, int64_t max);

// The gpt family's "model" section (nanoGPT's GPTConfig) and its run lengths.
struct GptSpec {
  int64_t layers = 0, heads = 0, width = 0, context = 0;
  bool bias = false;
  bool tied_head = true;
  double dropout = 0.0;
  double init_std = 0.02;      // normal init; the c_proj weights get init_std / sqrt(2 layers)
  int64_t steps = 0;           // optimizer steps of the full recipe
  int64_t eval_interval = 0;   // validation every this many steps and at the end
  int64_t eval_windows = 0;    // fixed validation windows (0 = all that fit)
  int64_t quick_steps = 0;     // --quick
};

// The vit family's "model" section (a Vision Transformer on images): p x p patches, width C,
// heads, MLP hidden = mlp_ratio C, layers encoder blocks; bias for the blocks' Linear and
// LayerNorm layers and the final LayerNorm (the patch embedding and the head always have one).
struct VitSpec {
  int64_t patch = 0, width = 0, heads = 0, mlp_ratio = 4, layers = 0;
  bool bias = true;
};

struct Recipe {
  std::filesystem::path path;
  nlohmann::json json;  // the whole file, hashed into checkpoints
  std::string name;
  std::string description;
  // Which builder: mlp, convnet, resnet ("layers"), gpt or vit ("model").
  std::string family = "mlp";
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
  OptimizerConfig optimizer;  // its schedule is resolved per run (resolve_schedule)
  ScheduleSpec schedule;
  InitKind init = InitKind::kKaimingUniform;
  double init_std = 0.02;        // init "normal": the weights' standard deviation
  double label_smoothing = 0.0;  // softmax cross-entropy's, in [0, 1)
  // augment: random crop with this many pixels of padding (0 = none) and horizontal flips.
  int augment_crop_pad = 0;
  bool augment_flip = false;
  // parity: the twin comparison's length and bound (max relative deviation of the
  // per-step training losses, fp32); docs/parity.md.
  int64_t parity_steps = 50;
  double parity_bound = 1e-4;
  // A tighter bound for the first parity_early_steps steps (0 = none): where rounding
  // differences grow fast (BatchNorm at a high learning rate) the whole-run bound is loose,
  // and the first steps are what still tells a bug from rounding.
  int64_t parity_early_steps = 0;
  double parity_early_bound = 1e-5;
  GptSpec gpt;  // the gpt family only
  VitSpec vit;  // the vit family only
  int quick_epochs = 1;
  int64_t quick_max_steps = 0;  // 0 = whole epochs
  std::string quick_dataset;    // empty = the recipe's data set
  // "target": the score the full recipe reaches (test top-1 % for classifiers, validation
  // loss for the gpt family), for the time-to-target column; "quick": a score a --quick run
  // reaches (CI). Unset: not measured.
  std::optional<double> target_score, quick_target_score;
  bool augments() const { return augment_crop_pad > 0 || augment_flip; }
};

// Where recipes live: $NOEIRA_RECIPES, else the source tree's models/recipes.
std::filesystem::path recipe_dir();
Result<Recipe> load_recipe(const std::filesystem::path& path);
// models/recipes/<model>.json
Result<Recipe> load_recipe_for_model(const std::string& model);
// Names of every recipe in recipe_dir(), sorted.
std::vector<std::string> list_recipes();

}  // namespace noeira
