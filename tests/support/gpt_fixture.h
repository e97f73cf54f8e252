// gpt-tiny and TinyShakespeare ($NOEIRA_DATA), loaded once per test process, and
// AutoregressiveTrainers built from them.
#pragma once
#include <memory>

#include "tests/support/conv_fixture.h"

namespace noeira::test {

inline const DataSplit& shakespeare() { return recipe_data("gpt-tiny", ""); }

struct LmRun {
  Device device = Device::kCpu;
  int threads = 1;
  uint64_t seed = 1;
  AmpPolicy amp = NoAMP;
  bool graph = false;
  bool host_batch = false;
  int64_t total_steps = 0;  // the schedule's length (0 = the recipe's)
};

inline std::unique_ptr<AutoregressiveTrainer> lm_trainer(const LmRun& run,
                                                         const Recipe& r = recipe_named("gpt-tiny")) {
  TrainerOptions o;
  o.device = run.device;
  o.threads = run.threads;
  o.seed = run.seed;
  o.amp = run.amp;
  o.use_train_cuda_graph = run.graph;
  o.host_batch = run.host_batch;
  o.total_steps = run.total_steps;
  Result<std::unique_ptr<AutoregressiveTrainer>> t = make_lm_trainer(r, shakespeare(), o);
  if (!t) throw std::runtime_error(t.error().message);
  return std::move(t).value();
}

// `steps` steps in one interval (steps <= eval_interval), their losses.
inline std::vector<float> lm_steps(AutoregressiveTrainer& t, int64_t steps) {
  t.begin_epoch();
  for (int64_t i = 0; i < steps; ++i) t.train_step();
  return t.end_epoch(false).step_losses;
}

}  // namespace noeira::test
