#include "models/recipe.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <iterator>

#include "models/install_root.h"
#include "nn/json_input.h"

namespace noeira {

std::string above_limit(const std::string& what, int64_t value, int64_t max) {
  return what + " is " + std::to_string(value) + "; the most this tool takes is " +
         std::to_string(max);
}

std::filesystem::path recipe_dir() {
  if (const char* env = std::getenv("NOEIRA_RECIPES"); env && *env) return env;
  return install_root() / "models" / "recipes";
}

std::vector<std::string> list_recipes() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(recipe_dir(), ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

Result<Recipe> load_recipe_for_model(const std::string& model) {
  const auto path = recipe_dir() / (model + ".json");
  if (!std::filesystem::exists(path)) {
    std::string known;
    for (const auto& n : list_recipes()) known += (known.empty() ? "" : ", ") + n;
    return make_error("unknown model '" + model + "' (no " + path.string() +
                      "); known models: " + known);
  }
  return load_recipe(path);
}

namespace {

struct Limit {
  const char* what;
  int64_t value, max;
};

// The first field above its limit, as an error naming the recipe.
Status check_limits(const std::string& where, std::initializer_list<Limit> limits) {
  for (const Limit& l : limits)
    if (l.value > l.max) return make_error(where + ": " + above_limit(l.what, l.value, l.max));
  return {};
}

// The GPT family (language models over a token corpus): its own sections ("model",
// "steps", "eval_interval") instead of layers and epochs.
Result<Recipe> load_gpt_recipe(Recipe r, const std::string& where) {
  try {
    const auto& j = r.json;
    r.task = Task::kLanguageModel;
    r.dataset = j.at("dataset").at("name").get<std::string>();
    r.batch = integer_field<int64_t>(j, "batch");
    GptSpec& g = r.gpt;
    const auto& m = j.at("model");
    g.layers = integer_field<int64_t>(m, "layers");
    g.heads = integer_field<int64_t>(m, "heads");
    g.width = integer_field<int64_t>(m, "width");
    g.context = integer_field<int64_t>(m, "context");
    g.bias = m.value("bias", false);
    g.tied_head = m.value("tied_head", true);
    g.dropout = m.value("dropout", 0.0);
    g.init_std = j.value("init_std", 0.02);
    r.init_std = g.init_std;
    g.steps = integer_field<int64_t>(j, "steps");
    g.eval_interval = integer_field<int64_t>(j, "eval_interval", g.steps);
    g.eval_windows = integer_field<int64_t>(j, "eval_windows", 0);
    g.quick_steps = j.contains("quick") ? integer_field<int64_t>(j["quick"], "steps", g.steps) : g.steps;
    if (r.batch <= 0 || g.steps <= 0 || g.context <= 0 || g.layers <= 0 || g.heads <= 0 ||
        g.width <= 0 || g.eval_interval <= 0 || g.quick_steps <= 0 || g.eval_windows < 0)
      return make_error(where + ": batch, steps, eval_interval, quick.steps and model.layers, "
                        "heads, width, context must be positive (eval_windows >= 0)");
    NOEIRA_TRY(check_limits(where, {{"batch", r.batch, kMaxRecipeSize},
                                     {"model.layers", g.layers, kMaxRecipeDepth},
                                     {"model.heads", g.heads, kMaxRecipeSize},
                                     {"model.width", g.width, kMaxRecipeSize},
                                     {"model.context", g.context, kMaxRecipeSize}}));
    if (g.width % g.heads != 0)
      return make_error(where + ": model.width " + std::to_string(g.width) +
                        " is not a multiple of model.heads " + std::to_string(g.heads));
    if (!g.tied_head)
      return make_error(where + ": model.tied_head false is not supported (the gpt family ties "
                        "the LM head to the token embedding, as nanoGPT)");
    if (g.dropout != 0.0)
      return make_error(where + ": model.dropout " + std::to_string(g.dropout) +
                        " is not supported yet in the gpt family; set it to 0");
    if (!(g.init_std > 0.0)) return make_error(where + ": init_std must be positive");
    if (j.value("init", "normal") != "normal")
      return make_error(where + ": the gpt family initialises with \"normal\" (init_std)");
    r.init = InitKind::kNormal;
    r.input_shape = Shape{g.context};
    if (j.contains("parity")) {
      r.parity_steps = integer_field<int64_t>(j["parity"], "steps", r.parity_steps);
      r.parity_bound = j["parity"].value("bound", r.parity_bound);
    }
    NOEIRA_TRY(parse_optimizer(j.at("optimizer"), where, r.optimizer, r.schedule));
  } catch (const nlohmann::json::exception& e) {
    return make_error(where + ": missing or mistyped field (" + std::string(e.what()) + ")");
  }
  return r;
}

// The vit family's "model" section; the image input must split into whole patches.
Status parse_vit_model(Recipe& r, const std::string& where) {
  const auto& m = r.json.at("model");
  VitSpec& v = r.vit;
  v.patch = integer_field<int64_t>(m, "patch");
  v.width = integer_field<int64_t>(m, "width");
  v.heads = integer_field<int64_t>(m, "heads");
  v.mlp_ratio = integer_field<int64_t>(m, "mlp_ratio", 4);
  v.layers = integer_field<int64_t>(m, "layers");
  v.bias = m.value("bias", true);
  if (v.patch <= 0 || v.width <= 0 || v.heads <= 0 || v.mlp_ratio <= 0 || v.layers <= 0)
    return make_error(where + ": model.patch, width, heads, mlp_ratio and layers must be positive");
  NOEIRA_TRY(check_limits(where, {{"model.patch", v.patch, kMaxRecipeSize},
                                   {"model.width", v.width, kMaxRecipeSize},
                                   {"model.heads", v.heads, kMaxRecipeSize},
                                   {"model.mlp_ratio", v.mlp_ratio, kMaxRecipeSize},
                                   {"model.layers", v.layers, kMaxRecipeDepth}}));
  if (v.width % v.heads != 0)
    return make_error(where + ": model.width " + std::to_string(v.width) +
                      " is not a multiple of model.heads " + std::to_string(v.heads));
  const Shape& in = r.input_shape;
  if (in.rank != 3 || in[1] % v.patch != 0 || in[2] % v.patch != 0)
    return make_error(where + ": the vit family needs input_shape [C, H, W] with H and W "
                      "multiples of model.patch (" + std::to_string(v.patch) + "), got " +
                      in.str());
  if (r.init != InitKind::kNormal)
    return make_error(where + ": the vit family initialises with \"normal\" (init_std)");
  if (r.task != Task::kClassification)
    return make_error(where + ": the vit family is a classifier (task \"classification\")");
  return {};
}

}  // namespace

// "target": {"score": S, "quick": Q, "basis": "..."} (both scores optional numbers).
static Status read_target(const nlohmann::json& j, const std::string& where, Recipe& r) {
  if (!j.contains("target")) return {};
  const nlohmann::json& t = j["target"];
  if (!t.is_object()) return make_error(where + ": target must be an object {score, quick, basis}");
  for (const char* key : {"score", "quick"}) {
    if (!t.contains(key)) continue;
    if (!t[key].is_number() || !std::isfinite(t[key].get<double>()))
      return make_error(where + ": target." + key + " must be a number");
    (std::string(key) == "score" ? r.target_score : r.quick_target_score) = t[key].get<double>();
  }
  return {};
}

Result<Recipe> load_recipe(const std::filesystem::path& path) {
  const std::string where = "recipe " + path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(where + ": cannot open it");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return make_error(where + ": cannot read it");
  Recipe r;
  r.path = path;
  Result<nlohmann::json> parsed = parse_json_input(text);
  if (!parsed || !parsed->is_object())
    return make_error(where + ": " + (parsed ? "not a JSON object" : parsed.error().message) +
                      "; check it with `python3 -m json.tool`");
  r.json = std::move(parsed).value();
  try {
    const auto& j = r.json;
    r.name = j.at("name").get<std::string>();
    r.description = j.value("description", "");
    r.family = j.value("family", "mlp");
    NOEIRA_TRY(read_target(j, where, r));
    if (r.family == "gpt") return load_gpt_recipe(std::move(r), where);
    const std::string task = j.value("task", "classification");
    if (task == "classification") r.task = Task::kClassification;
    else if (task == "regression") r.task = Task::kRegression;
    else return make_error(where + ": task '" + task + "' is not classification or regression");
    const auto& ds = j.at("dataset");
    r.dataset = ds.at("name").get<std::string>();
    if (ds.contains("normalize")) {
      // One number, or one per channel.
      auto per_channel = [&](const char* key, std::vector<float>& out) -> Status {
        const auto& v = ds["normalize"].at(key);
        if (v.is_number()) {
          out = {v.get<float>()};
          return {};
        }
        bool numbers = v.is_array() && !v.empty();
        for (const auto& x : v) numbers = numbers && x.is_number();
        if (!numbers)
          return make_error(where + ": dataset.normalize." + key +
                            " must be a number or a non-empty list of numbers, one per channel "
                            "(e.g. [0.4914, 0.4822, 0.4465])");
        out = v.get<std::vector<float>>();
        return {};
      };
      NOEIRA_TRY(per_channel("mean", r.norm_mean));
      NOEIRA_TRY(per_channel("std", r.norm_std));
      if (r.norm_mean.size() > 1 && r.norm_std.size() > 1 &&
          r.norm_mean.size() != r.norm_std.size())
        return make_error(where + ": dataset.normalize has " +
                          std::to_string(r.norm_mean.size()) + " means but " +
                          std::to_string(r.norm_std.size()) +
                          " stds; give one number or one per channel for each");
      for (float sd : r.norm_std)
        if (!(sd > 0.0f))
          return make_error(where + ": dataset.normalize.std must be positive (got " +
                            std::to_string(sd) + ")");
    }
    // One dimension short of a Shape's most: a batch dimension goes in front of it.
    const auto shape = integer_list(j.at("input_shape"), "input_shape");
    if (shape.empty() || shape.size() > static_cast<size_t>(Shape::kMaxDims - 1) ||
        std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d <= 0; }))
      return make_error(where + ": input_shape must be a list of 1 to " +
                        std::to_string(Shape::kMaxDims - 1) + " positive sizes");
    for (int64_t d : shape) {
      NOEIRA_TRY(check_limits(where, {{"an input_shape size", d, kMaxRecipeSize}}));
      r.input_shape.dims[static_cast<size_t>(r.input_shape.rank++)] = d;
    }
    r.num_classes = integer_field<int>(j, "num_classes", 0);
    r.batch = integer_field<int64_t>(j, "batch");
    r.drop_last = j.value("drop_last", true);
    r.epochs = integer_field<int>(j, "epochs");
    if (j.contains("quick")) {
      r.quick_epochs = integer_field<int>(j["quick"], "epochs", 1);
      r.quick_max_steps = integer_field<int64_t>(j["quick"], "max_steps", 0);
      r.quick_dataset = j["quick"].value("dataset", "");
    }
    if (j.contains("augment")) {
      r.augment_crop_pad = integer_field<int>(j["augment"], "random_crop_pad", 0);
      r.augment_flip = j["augment"].value("horizontal_flip", false);
      if (r.augment_crop_pad < 0 || r.augment_crop_pad > 16)
        return make_error(where + ": augment.random_crop_pad must be in [0, 16]");
      if (r.input_shape.rank != 3)
        return make_error(where + ": augment needs image samples (input_shape [C, H, W])");
    }
    if (j.contains("parity")) {
      r.parity_steps = integer_field<int64_t>(j["parity"], "steps", r.parity_steps);
      r.parity_bound = j["parity"].value("bound", r.parity_bound);
      r.parity_early_steps = integer_field<int64_t>(j["parity"], "early_steps", r.parity_early_steps);
      r.parity_early_bound = j["parity"].value("early_bound", r.parity_early_bound);
      if (r.parity_early_steps < 0 || r.parity_early_steps > r.parity_steps ||
          !(r.parity_early_bound > 0.0))
        return make_error(where + ": parity.early_steps must be in [0, steps] and "
                          "parity.early_bound positive");
      if (r.parity_steps <= 0 || !(r.parity_bound > 0.0))
        return make_error(where + ": parity.steps and parity.bound must be positive");
    }
    Result<InitKind> init = parse_init_kind(j.value("init", "kaiming_uniform"));
    if (!init) return make_error(where + ": " + init.error().message);
    r.init = *init;
    r.init_std = j.value("init_std", 0.02);
    if (!(r.init_std > 0.0)) return make_error(where + ": init_std must be positive");
    r.label_smoothing = j.value("label_smoothing", 0.0);
    if (!(r.label_smoothing >= 0.0 && r.label_smoothing < 1.0))
      return make_error(where + ": label_smoothing must be in [0, 1)");
    if (r.label_smoothing != 0.0 && r.task != Task::kClassification)
      return make_error(where + ": label_smoothing applies to classification only");
    NOEIRA_TRY(parse_optimizer(j.at("optimizer"), where, r.optimizer, r.schedule));
    if (r.family == "vit") {
      NOEIRA_TRY(parse_vit_model(r, where));
    } else if (!j.at("layers").is_array() || j["layers"].empty()) {
      return make_error(where + ": 'layers' must be a non-empty list");
    }
  } catch (const nlohmann::json::exception& e) {
    return make_error(where + ": missing or mistyped field (" + std::string(e.what()) + ")");
  }
  if (r.batch <= 0 || r.epochs <= 0)
    return make_error(where + ": batch and epochs must be positive");
  NOEIRA_TRY(check_limits(where, {{"batch", r.batch, kMaxRecipeSize}}));
  return r;
}

}  // namespace noeira
