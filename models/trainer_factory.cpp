#include "models/trainer_factory.h"

#include "models/family.h"
#include "models/model_builder.h"

namespace noeira {

DataSource make_data_source(const DataOptions& o) {
  DataSource s;
  if (!o.data_dir.empty()) s.data_dir = o.data_dir;
  return s;
}

int64_t steps_per_epoch(const Recipe& recipe, const DataSplit& data, int ranks) {
  if (family_traits(recipe).language_model) return recipe.gpt.eval_interval;
  return epoch_steps(data.train.count, recipe.batch * ranks, recipe.drop_last);
}

namespace {

TrainerConfig common_config(const Recipe& recipe, const TrainerOptions& o) {
  TrainerConfig cfg;
  cfg.device = o.device;
  cfg.threads = o.threads;
  cfg.seed = o.seed;
  cfg.batch = recipe.batch;
  cfg.drop_last = recipe.drop_last;
  cfg.task = recipe.task;
  cfg.optimizer = recipe.optimizer;
  cfg.init.kind = recipe.init;
  cfg.init.normal_std = recipe.init_std;
  cfg.label_smoothing = static_cast<float>(recipe.label_smoothing);
  cfg.use_train_cuda_graph = o.use_train_cuda_graph;
  cfg.device_timers = o.device_timers;
  cfg.op_profiler = o.op_profiler;
  cfg.amp = o.amp;
  cfg.model_name = recipe.name;
  cfg.recipe = recipe.json;
  return cfg;
}

}  // namespace

namespace {

// What an AutoregressiveTrainer is made of, from the recipe.
struct LmParts {
  std::unique_ptr<Module> model;
  TrainerConfig cfg;
  AutoregressiveConfig lm;
};

Result<LmParts> lm_parts(const Recipe& recipe, const DataSplit& data, const TrainerOptions& o) {
  Result<std::unique_ptr<Module>> model =
      build_gpt(recipe, static_cast<int64_t>(data.corpus.vocab.size()));
  if (!model) return model.error();
  LmParts p;
  p.model = std::move(model).value();
  p.cfg = common_config(recipe, o);
  p.cfg.init = gpt_init(recipe);
  set_schedule(p.cfg.optimizer,
               resolve_schedule(recipe.schedule, recipe.gpt.eval_interval,
                                o.total_steps > 0 ? o.total_steps : recipe.gpt.steps));
  p.lm.context = recipe.gpt.context;
  p.lm.eval_interval = recipe.gpt.eval_interval;
  p.lm.eval_windows = recipe.gpt.eval_windows;
  p.lm.host_batch = o.host_batch;
  return p;
}

}  // namespace

Result<std::unique_ptr<AutoregressiveTrainer>> make_lm_trainer(const Recipe& recipe,
                                                               const DataSplit& data,
                                                               const TrainerOptions& o,
                                                               std::unique_ptr<GradientSync> sync) {
  Result<LmParts> p = lm_parts(recipe, data, o);
  if (!p) return p.error();
  return AutoregressiveTrainer::create(std::move(p->model), p->cfg, p->lm, data.corpus,
                                       std::move(sync));
}

Result<std::unique_ptr<TrainerCore>> make_trainer(const Recipe& recipe, const DataSplit& data,
                                                  const TrainerOptions& o,
                                                  std::unique_ptr<GradientSync> sync) {
  if (family_traits(recipe).language_model) {
    Result<std::unique_ptr<AutoregressiveTrainer>> t = make_lm_trainer(recipe, data, o, std::move(sync));
    if (!t) return t.error();
    return std::unique_ptr<TrainerCore>(std::move(t).value());
  }
  Result<std::unique_ptr<Module>> model = build_model(recipe);
  if (!model) return model.error();
  TrainerConfig cfg = common_config(recipe, o);
  const int64_t spe = steps_per_epoch(recipe, data, sync ? sync->ranks() : 1);
  set_schedule(cfg.optimizer,
               resolve_schedule(recipe.schedule, spe,
                                o.total_steps > 0 ? o.total_steps : recipe.epochs * spe));
  if (recipe.augments()) {
    AugmentSpec& a = cfg.augment.emplace();
    a.pad = recipe.augment_crop_pad;
    a.flip = recipe.augment_flip;
    // Zero in pixel space, as the normalisation maps it (models/recipe_data.cpp).
    for (size_t c = 0; c < data.fill.size() && c < AugmentSpec::kMaxChannels; ++c)
      a.fill[c] = data.fill[c];
  }
  Result<std::unique_ptr<DatasetTrainer>> t =
      DatasetTrainer::create(std::move(model).value(), cfg, data.train, data.test, std::move(sync));
  if (!t) return t.error();
  return std::unique_ptr<TrainerCore>(std::move(t).value());
}

}  // namespace noeira
