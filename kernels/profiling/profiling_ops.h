// The profiler's Ops: every call forwards to the backend's ops inside a scope that records
// its name, work and (first step) shapes with the OpProfiler (kernels/profiling/op_profiler.h).
// Generated from kernels/op_list.inc, so a new op is profiled without a line here. Only a
// profiling trainer holds one (TrainerConfig::op_profiler); queries just forward.
#pragma once
#include <memory>

#include "kernels/ops.h"
#include "kernels/profiling/op_profiler.h"

namespace noeira {

class ProfilingOps final : public Ops {
 public:
  ProfilingOps(std::unique_ptr<Ops> inner, OpProfiler& profiler)
      : inner_(std::move(inner)), profiler_(profiler) {}
  Ops& inner() const { return *inner_; }

#define NOEIRA_OP(ret, name, params, args) ret name params override;
#define NOEIRA_QUERY(ret, name, params, args) ret name params const override;
#include "kernels/op_list.inc"

 private:
  std::unique_ptr<Ops> inner_;
  OpProfiler& profiler_;
};

}  // namespace noeira
