// The op benchmarks of `noeira-bench micro`: every op call of harness/micro/op_cases.h in
// one traced training step of each recipe (harness/micro/op_trace.h), fp32 and, where
// the backend stores bf16, under BF16Policy. One benchmark per distinct (op, dtype,
// shape) across recipes, named
//   <op>/<recipes, '+'-joined>/<dtype>/<shape>
// e.g. batchnorm_forward_train/resnet20/f32/B=128/C=16/S=1024, labelled with each
// recipe's calls per step.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "harness/micro/micro_buffers.h"
#include "models/recipe.h"

namespace noeira {

// Returns how many were registered; `skipped` receives "<recipe> (<policy>): why" for
// steps that could not be traced.
int register_op_benchmarks(const std::shared_ptr<MicroShared>& sh,
                           const std::vector<Recipe>& recipes,
                           std::vector<std::string>& skipped);

}  // namespace noeira
