#include "kernels/profiling/profiling_ops.h"

#include <string>

#include "kernels/profiling/op_cost.h"

namespace noeira {

#define NOEIRA_UNPACK(...) __VA_ARGS__
// The work and shapes are taken before the clock starts; outside profiled steps only the
// forwarding remains.
#define NOEIRA_OP(ret, name, params, args)                                                 \
  ret ProfilingOps::name params {                                                          \
    if (!profiler_.recording()) return inner_->name args;                                  \
    ProfiledCall scope(&profiler_, #name, op_cost::of(op_cost::name##_tag{}, NOEIRA_UNPACK args), \
                  profiler_.wants_shapes() ? op_cost::describe(#args, NOEIRA_UNPACK args)   \
                                           : std::string{});                               \
    return inner_->name args;                                                              \
  }
#define NOEIRA_QUERY(ret, name, params, args) \
  ret ProfilingOps::name params const { return inner_->name args; }
#include "kernels/op_list.inc"
#undef NOEIRA_UNPACK

}  // namespace noeira
