// `noeira-bench train`: its options and the pieces its two paths share (the classifiers'
// epochs in harness/train/train_classifier.cpp, the gpt family's steps in train_lm.cpp).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "models/trainer_factory.h"
#include "parallel/process_group.h"

namespace noeira {

struct TrainOptions {
  std::string model = "mlp";
  int epochs = 0;  // 0 = the recipe's
  int64_t steps = 0;  // the gpt family: 0 = the recipe's
  bool host_batch = false;
  uint64_t seed = 0;
  DataOptions data;
  std::string save, resume;
  int64_t save_every = 0;  // steps between checkpoints to `save` (0: only at the end)
  int threads = 0;
  std::string target = "cpu";
  std::string dtype = "fp32";
  bool graph = false;
  int zero = -1;  // data parallel over MPI ranks: ZeRO stage (0 = DDP); -1 = as launched
  bool check_replicas = false;
  int64_t batch = 0;  // 0 = the recipe's
  std::string timing_json;  // the scaling benchmark's per-run summary (rank 0 writes it)
};

// Ctrl-C during training: the state after the last whole step goes to --save (if given),
// so that --resume continues exactly; returns the exit code (128 + the signal).
int stopped(const TrainOptions& o, int64_t step, const std::function<Status()>& save);

// `noeira-bench train`: loads the recipe and data and trains (a language model through
// run_train_lm); returns the exit code.
int run_train(const TrainOptions& o);

// Reports the error; on a data-parallel run (group not null) ends every rank with `code`,
// so no rank waits forever in a collective. Returns `code`.
int train_failed(ProcessGroup* group, const std::string& message, int code);

// The data-parallel run's layout, printed by rank 0: ranks, engine, ZeRO stage, global
// batch, slices (and ZeRO-2/3's per-rank windows).
void print_data_parallel(const ProcessGroup& group, const DataParallelSync& d, int64_t batch);

// The gpt family: steps, not epochs, on one process or data-parallel over the ranks of
// `group` (null: one process) with `sync` (its DataParallelSync; null on one process).
int run_train_lm(const TrainOptions& o, const Recipe& recipe, const DataSplit& data,
                 TrainerOptions to, ProcessGroup* group, std::unique_ptr<GradientSync> sync);

}  // namespace noeira
