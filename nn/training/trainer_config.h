// How a trainer is configured: device, seed, batch, task, optimizer, initialisation,
// precision, augmentation, graph capture and timers (TrainerCore and the trainers built on
// it; models/trainer_factory.h fills it from a recipe).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/device.h"
#include "kernels/ops.h"
#include "kernels/profiling/op_profiler.h"
#include "nn/amp.h"
#include "nn/init.h"
#include "nn/loss.h"
#include "nn/optimizer.h"
#include "nn/training/augmenter.h"

namespace noeira {

struct TrainerConfig {
  Device device = Device::kCpu;
  int threads = 0;  // CPU: 0 = every core this process may use
  uint64_t seed = 0;
  int64_t batch = 128;
  bool drop_last = true;
  Task task = Task::kClassification;
  float label_smoothing = 0.0f;  // softmax cross-entropy's (recipe "label_smoothing")
  OptimizerConfig optimizer;
  InitConfig init;
  AmpPolicy amp = NoAMP;
  // Random crop + flip of the training images before every epoch (nn/training/augmenter.h);
  // its count and image shape are filled in from the data set.
  std::optional<AugmentSpec> augment;
  bool use_train_cuda_graph = false;
  bool graph_fallback = false;   // if capture fails: run eager (true) or fail create (false)
  // Device step timers to create before any capture (CUPTI must be enabled first).
  std::vector<DeviceTimerKind> device_timers;
  // Per-op attribution (noeira-bench profile): the ops are called through ProfilingOps,
  // which records each call with this profiler (not owned). Null: called directly.
  OpProfiler* op_profiler = nullptr;
  std::string model_name;        // goes into checkpoints
  nlohmann::json recipe;         // hashed into checkpoints; resuming checks it
};

}  // namespace noeira
