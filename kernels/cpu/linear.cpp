// CpuOps' matrix products (contracts: kernels/op_list.inc): gemm through oneDNN
// (onednn_matmul.h fp32, bf16_gemm.h bf16); the linear layer's passes as gemm + bias_act,
// gemm + cast and gemm + bias_grad (kernels/composed_ops.h).
#include <algorithm>
#include <type_traits>

#include "kernels/composed_ops.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/onednn_matmul.h"
#include "kernels/dispatch.h"

namespace noeira {

// fp32: OnednnGemm cuts C into its own fixed 64-row slabs. bf16: fixed 64-row slabs of
// C here, spread over OpenMP threads, one single-threaded Bf16Gemm call each. The slabs
// do not depend on the thread count, so neither do the results.
void CpuOps::gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  ConstView A, int64_t lda, ConstView B, int64_t ldb, float beta, float* C,
                  int64_t ldc) {
  const char* op = "gemm";
  dispatch_float(op, {A, B}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    if constexpr (std::is_same_v<T, float>) {
      const Status s = gemm_->run(trans_a, trans_b, M, N, K, alpha, A.as<float>(), lda,
                                  B.as<float>(), ldb, beta, C, ldc);
      if (!s) cpu_op_failed(op, s.error());
    } else {
      const T* a_all = A.as<T>();
      const T* b = B.as<T>();
      const int64_t slabs = (M + kCpuGemmSlabRows - 1) / kCpuGemmSlabRows;
#pragma omp parallel for num_threads(threads_) schedule(static) if (slabs > 1)
      for (int64_t s = 0; s < slabs; ++s) {
        const int64_t m0 = s * kCpuGemmSlabRows;
        // Row m of op(A) starts at A + m*lda (no transpose) or A + m (transposed).
        const T* a = trans_a ? a_all + m0 : a_all + m0 * lda;
        bf16_gemm_->run(trans_a, trans_b, std::min(kCpuGemmSlabRows, M - m0), N, K, alpha, a,
                        lda, b, ldb, beta, C + m0 * ldc, ldc);
      }
    }
  });
}

void CpuOps::linear_forward(ConstView x, ConstView W, const float* b, View y, View pre,
                            float* acc, int64_t M, int64_t N, int64_t K, Act act) {
  composed_linear_forward(*this, x, W, b, y, pre, acc, M, N, K, act);
}

void CpuOps::linear_backward_data(ConstView dz, ConstView W, View dx, float* acc, int64_t M,
                                  int64_t N, int64_t K) {
  composed_linear_backward_data(*this, dz, W, dx, acc, M, N, K);
}

void CpuOps::linear_backward_params(ConstView dz, ConstView x, float* dW, float* db, int64_t M,
                                    int64_t N, int64_t K) {
  composed_linear_backward_params(*this, dz, x, dW, db, M, N, K);
}

}  // namespace noeira
