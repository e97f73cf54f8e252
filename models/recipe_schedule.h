// A recipe's optimizer section: the optimizer's hyper-parameters, and its learning-rate
// schedule as the recipe states it (milestones and warm-up in epochs or steps), resolved
// into steps once the run's length is known.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/common/schedule.h"
#include "nn/error.h"
#include "nn/optimizer.h"

namespace noeira {

struct ScheduleSpec {
  ScheduleKind kind = ScheduleKind::kConstant;
  std::vector<int64_t> milestones;  // multistep, in `milestone_unit_epochs ? epochs : steps`
  bool milestone_unit_epochs = true;
  double gamma = 0.1;
  double min_lr = 0.0;  // cosine: the rate it decays to
  int64_t warmup = 0;  // in `warmup_unit_epochs ? epochs : steps`
  bool warmup_unit_epochs = false;
};

// optimizer: {"type": "adam"|"adamw"|"sgd", "lr", ... , "schedule": "constant" | "cosine" |
//   {"type": "constant"|"cosine"|"multistep", "milestone_epochs" | "milestones": [...],
//    "gamma", "min_lr" (cosine), "warmup_epochs" | "warmup_steps"}}. `where` prefixes errors.
Status parse_optimizer(const nlohmann::json& o, const std::string& where, OptimizerConfig& out,
                       ScheduleSpec& schedule);

// The schedule of a run of `total_steps` steps with `steps_per_epoch` steps per epoch:
// epochs become steps, a cosine decays over the steps after the warm-up.
LrSchedule resolve_schedule(const ScheduleSpec& s, int64_t steps_per_epoch, int64_t total_steps);

// Sets the resolved schedule on the optimizer that runs.
void set_schedule(OptimizerConfig& o, const LrSchedule& s);

}  // namespace noeira
