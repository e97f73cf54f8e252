// Default bodies of the bf16 ops for backends without bf16 support. The Trainer checks
// Ops::supports_bf16() when it is built, so reaching one of these is a programming error.
#include <cstdio>
#include <cstdlib>

#include "kernels/ops.h"

namespace noeira {

namespace {
[[noreturn]] void no_bf16(const char* op) {
  std::fprintf(stderr, "noeira: internal error: %s called on a backend without bf16 support\n", op);
  std::abort();
}
}  // namespace

void Ops::gemm_bf16(bool, bool, int64_t, int64_t, int64_t, float, const bf16_t*, int64_t,
                    const bf16_t*, int64_t, float, float*, int64_t) { no_bf16("gemm_bf16"); }
void Ops::cast_to_bf16(const float*, bf16_t*, int64_t) { no_bf16("cast_to_bf16"); }
void Ops::cast_to_f32(const bf16_t*, float*, int64_t) { no_bf16("cast_to_f32"); }
void Ops::bias_act_bf16(const float*, const float*, bf16_t*, bf16_t*, int64_t, int64_t, Act) {
  no_bf16("bias_act_bf16");
}
void Ops::act_forward_bf16(const bf16_t*, bf16_t*, int64_t, Act) { no_bf16("act_forward_bf16"); }
void Ops::act_backward_bf16(const bf16_t*, const bf16_t*, const bf16_t*, bf16_t*, int64_t, Act) {
  no_bf16("act_backward_bf16");
}
void Ops::bias_grad_bf16(const bf16_t*, float*, int64_t, int64_t) { no_bf16("bias_grad_bf16"); }
void Ops::add_bf16(const bf16_t*, const bf16_t*, bf16_t*, int64_t) { no_bf16("add_bf16"); }
void Ops::softmax_xent_bf16(const bf16_t*, const int32_t*, int64_t, int64_t, bf16_t*, LossStats*,
                            float*, const StepCounters*) { no_bf16("softmax_xent_bf16"); }
void Ops::mse_bf16(const bf16_t*, const float*, int64_t, int64_t, bf16_t*, LossStats*, float*,
                   const StepCounters*) { no_bf16("mse_bf16"); }
void Ops::gather_rows_bf16(const float*, const int32_t*, int64_t, int64_t, const StepCounters*,
                           bf16_t*) { no_bf16("gather_rows_bf16"); }

}  // namespace noeira
