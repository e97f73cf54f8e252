// CudaOps' matrix products through cuBLASLt (gemm_lt.h); contracts in kernels/ops.h.
#include <string>
#include <type_traits>

#include "kernels/cuda/gemm_lt.h"
#include "kernels/cuda/op_scope.h"
#include "kernels/dispatch.h"

namespace noeira {

bool CudaOps::run_gemm(const cuda::GemmCall& call) {
  std::string error;
  switch (gemm_->run(call, stream_, &error)) {
    case cuda::GemmLt::Outcome::kDone: return true;
    case cuda::GemmLt::Outcome::kUnsupported: return false;
    case cuda::GemmLt::Outcome::kFailed: break;
  }
  fail(error);
  return true;  // reported; nothing to fall back to
}

// The dtype of A and B picks cuBLASLt's: fp32 in CUBLAS_COMPUTE_32F (_FAST_TF32 with TF32
// on), bf16 in CUBLAS_COMPUTE_32F whatever the TF32 switch says. The algorithm is chosen
// once per shape and cached, and runs in the backend's workspace.
void CudaOps::gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                   ConstView A, int64_t lda, ConstView B, int64_t ldb, float beta, float* C,
                   int64_t ldc) {
  OpScope scope(*this, "gemm");
  const cudaDataType_t ab_type = dispatch_float("gemm", {A, B}, [](auto storage) {
    return std::is_same<typename decltype(storage)::type, bf16_t>::value ? CUDA_R_16BF
                                                                          : CUDA_R_32F;
  });
  if (M == 0 || N == 0) return;
  if (K == 0) {  // cuBLASLt needs k >= 1; C = beta * C is all that is left
    check(cuda::launch_scale_rows(stream_, C, M, N, ldc, beta), "scale_rows_kernel");
    return;
  }
  run_gemm({.trans_a = trans_a, .trans_b = trans_b, .M = M, .N = N, .K = K, .alpha = alpha,
            .A = A.data, .lda = lda, .B = B.data, .ldb = ldb, .beta = beta, .C = C, .ldc = ldc,
            .ab_type = ab_type});
}

// fp32: y(M,N) = act(x(M,K) W(N,K)^T + b) in one cuBLASLt call: BIAS, RELU_BIAS or
// GELU_AUX_BIAS (the GELU input lands in `pre`). cuBLASLt's GELU is the same tanh
// approximation as ours (kernels/common/math.h). Where no epilogue fits (pre requested for
// ReLU/identity, a GELU aux row stride N not a multiple of 8, or no algorithm for the
// epilogue), and for bf16, it is a plain GEMM followed by our bias_act kernel, as on the CPU.
void CudaOps::linear_forward(ConstView x, ConstView W, const float* b, View y, View pre,
                             float* acc, int64_t M, int64_t N, int64_t K, Act act) {
  OpScope scope(*this, "linear_forward");
  if (M == 0 || N == 0) return;
  const bool fp32 = x.dtype == DType::kF32 && W.dtype == DType::kF32 && y.dtype == DType::kF32 &&
                    (pre.empty() || pre.dtype == DType::kF32);
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  bool fusable = fp32 && K > 0;
  switch (act) {
    case Act::kNone:
      epilogue = b ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
      fusable = fusable && pre.empty();
      break;
    case Act::kReLU:
      epilogue = b ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
      fusable = fusable && pre.empty();
      break;
    case Act::kGELU:
      if (!pre.empty())
        epilogue = b ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
      else
        epilogue = b ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
      fusable = fusable && (pre.empty() || N % 8 == 0);  // cuBLASLt: aux ld divisible by 8
      break;
  }
  if (fusable) {
    expect_elems("linear_forward", M * N, {y, pre});
    // (M, N) = (M, K) x (N, K)^T, epilogue on the (M, N) result
    const cuda::GemmCall c{.trans_a = false, .trans_b = true, .M = M, .N = N, .K = K,
                           .alpha = 1.0f, .A = x.data, .lda = K, .B = W.data, .ldb = K,
                           .beta = 0.0f, .C = y.as<float>(), .ldc = N, .epilogue = epilogue,
                           .bias = b, .aux = pre.as<float>()};
    if (run_gemm(c)) return;
  }
  Ops::linear_forward(x, W, b, y, pre, acc, M, N, K, act);  // gemm + bias_act
}

// dW(N,K) += dz(M,N)^T x(M,K) with beta = 1, then db(N) += column sums of dz by our
// bias_grad kernel. cuBLASLt's BGRADB epilogue would fuse the bias gradient, but it
// overwrites db (our contract accumulates: a parameter may be used twice) and documents
// no reduction order, so the deterministic kernel does it.
void CudaOps::linear_backward_params(ConstView dz, ConstView x, float* dW, float* db, int64_t M,
                                     int64_t N, int64_t K) {
  OpScope scope(*this, "linear_backward_params");
  Ops::linear_backward_params(dz, x, dW, db, M, N, K);
}

}  // namespace noeira
