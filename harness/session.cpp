#include "harness/session.h"

#include "models/model_builder.h"

namespace noeira {

DataSource make_data_source(const DataOptions& o) {
  DataSource s;
  if (!o.data_dir.empty()) s.data_dir = o.data_dir;
  return s;
}

int64_t steps_per_epoch(const Recipe& recipe, const DataSplit& data) {
  return epoch_steps(data.train.count, recipe.batch, recipe.drop_last);
}

Result<std::unique_ptr<Trainer>> make_trainer(const Recipe& recipe, const DataSplit& data,
                                              const TrainerOptions& o) {
  Result<std::unique_ptr<Module>> model = build_model(recipe);
  if (!model) return model.error();
  TrainerConfig cfg;
  cfg.device = o.device;
  cfg.threads = o.threads;
  cfg.seed = o.seed;
  cfg.batch = recipe.batch;
  cfg.drop_last = recipe.drop_last;
  cfg.task = recipe.task;
  cfg.optimizer = recipe.optimizer;
  const int64_t spe = steps_per_epoch(recipe, data);
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
  cfg.init.kind = recipe.init;
  cfg.use_train_cuda_graph = o.use_train_cuda_graph;
  cfg.device_timers = o.device_timers;
  cfg.amp = o.amp;
  cfg.model_name = recipe.name;
  cfg.recipe = recipe.json;
  return Trainer::create(std::move(model).value(), cfg, data.train, data.test);
}

}  // namespace noeira
