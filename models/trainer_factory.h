// The recipe -> trainer factory: a model's recipe and loaded data become a DatasetTrainer
// (image and tabular families) or an AutoregressiveTrainer (the gpt family). Used by the
// harness's subcommands and by the tests.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "datasets/data_files.h"
#include "models/recipe.h"
#include "models/recipe_data.h"
#include "nn/training/autoregressive_trainer.h"
#include "nn/training/dataset_trainer.h"

namespace noeira {

struct DataOptions {
  std::string dataset;  // empty = the recipe's
  std::string data_dir; // empty = $NOEIRA_DATA / cache / download
};

DataSource make_data_source(const DataOptions& o);

struct TrainerOptions {
  Device device = Device::kCpu;
  int threads = 0;
  uint64_t seed = 0;
  bool use_train_cuda_graph = false;
  AmpPolicy amp = NoAMP;
  std::vector<DeviceTimerKind> device_timers;
  // The gpt family: build each batch on the host (the baseline) instead of the device.
  bool host_batch = false;
  // Steps the run will take: the length of a cosine schedule. 0 = the recipe's epochs
  // (the gpt family: its steps).
  // (A multistep schedule's milestones are in the recipe's epochs or steps, whatever the
  // run's length.)
  int64_t total_steps = 0;
  // noeira-bench profile: the ops are called through ProfilingOps recording into this
  // (kernels/profiling/op_profiler.h; not owned). Null: no profiling, no cost.
  OpProfiler* op_profiler = nullptr;
};

// Training steps per epoch of a recipe on a data set (the last partial batch dropped
// when the recipe says drop_last); for the gpt family, its eval_interval.
// Data parallel over `ranks`: an epoch of global batches of ranks x the recipe's batch.
int64_t steps_per_epoch(const Recipe& recipe, const DataSplit& data, int ranks = 1);

// A model's trainer on already-loaded data (load it once, train several seeds): a
// DatasetTrainer, or for the gpt family an AutoregressiveTrainer. sync: the data-parallel
// strategy (parallel/data_parallel_sync.h; null: one process).
Result<std::unique_ptr<TrainerCore>> make_trainer(const Recipe& recipe, const DataSplit& data,
                                                  const TrainerOptions& o,
                                                  std::unique_ptr<GradientSync> sync = nullptr);
// The gpt family's trainer, typed (sampling, tests).
Result<std::unique_ptr<AutoregressiveTrainer>> make_lm_trainer(const Recipe& recipe,
                                                               const DataSplit& data,
                                                               const TrainerOptions& o,
                                                               std::unique_ptr<GradientSync> sync = nullptr);
}  // namespace noeira
