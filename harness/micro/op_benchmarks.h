// The op benchmarks of `noeira-bench micro`: every op call of harness/micro/op_cases.h in
// one traced training step of each recipe (harness/micro/op_trace.h), fp32 and, where
// the backend stores bf16, under BF16Policy (micro_benchmarks.cpp traces them). One
// benchmark per distinct (op, dtype, shape) across recipes, named
//   <op>/<recipes, '+'-joined>/<dtype>/<shape>
// e.g. batchnorm_forward_train/resnet20/f32/B=128/C=16/S=1024, labelled with each
// recipe's calls per step.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "harness/micro/micro_buffers.h"
#include "harness/micro/op_trace.h"

namespace noeira {

// One recipe's traced step under one policy (harness/micro/op_trace.h).
struct TracedStep {
  std::string recipe;
  AmpPolicy amp = NoAMP;
  StepOps step;
};

// Registers the cases of every traced step, merged; returns how many.
int register_op_benchmarks(const std::shared_ptr<MicroShared>& sh,
                           const std::vector<TracedStep>& steps);

}  // namespace noeira
