// Learning-rate schedules, written once for every optimizer and both backends: the rate
// of a step is a pure function of the 1-based step number, which the optimizer kernels
// read from the device counters, so a captured step follows the schedule on replay. The
// twin (reference/) computes the same function in Python doubles.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/hd.h"

namespace noeira {

enum class ScheduleKind : uint8_t { kConstant, kCosine, kMultiStep };

struct LrSchedule {
  static constexpr int kMaxMilestones = 4;
  ScheduleKind kind = ScheduleKind::kConstant;
  // Linear warm-up: steps t = 1..warmup_steps use lr * t / warmup_steps; the schedule
  // proper starts after them (its own step count u = t - warmup_steps).
  int64_t warmup_steps = 0;
  // kCosine: min_lr + (lr - min_lr) * (1 + cos(pi * (u - 1) / cosine_steps)) / 2, held at
  // min_lr after cosine_steps.
  int64_t cosine_steps = 0;
  double min_lr = 0.0;
  // kMultiStep: lr * gamma^k, k = how many milestones m satisfy u - 1 >= m (torch's
  // MultiStepLR with milestones counted in steps). Unused entries are 0 and n_milestones
  // says how many are set.
  int64_t milestones[kMaxMilestones] = {};
  int n_milestones = 0;
  double gamma = 0.1;
};

// The learning rate of 1-based step t for base rate lr, in double (rounded by the caller
// once, like torch's Python-float scalars).
NOEIRA_HD double scheduled_lr(double lr, const LrSchedule& s, int64_t t) {
  if (s.warmup_steps > 0 && t <= s.warmup_steps)
    return lr * static_cast<double>(t) / static_cast<double>(s.warmup_steps);
  const int64_t u = t - s.warmup_steps;  // >= 1
  switch (s.kind) {
    case ScheduleKind::kCosine: {
      if (s.cosine_steps <= 0) return lr;
      const double done = static_cast<double>(u - 1 < s.cosine_steps ? u - 1 : s.cosine_steps);
      // (With min_lr 0 this is lr * 0.5 * (...) bit for bit: lr - 0 and 0 + x are exact.)
      return s.min_lr + (lr - s.min_lr) * 0.5 *
                            (1.0 + cos(3.141592653589793 * done / static_cast<double>(s.cosine_steps)));
    }
    case ScheduleKind::kMultiStep: {
      double r = lr;
      for (int i = 0; i < s.n_milestones && i < LrSchedule::kMaxMilestones; ++i)
        if (u - 1 >= s.milestones[i]) r *= s.gamma;
      return r;
    }
    default: return lr;
  }
}

}  // namespace noeira
