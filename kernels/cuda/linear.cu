// CudaOps' matrix products, gemm, linear_forward, linear_backward_data and
// linear_backward_params (contracts: kernels/op_list.inc), through cuBLASLt (gemm_lt.h):
// A/B fp32 (TF32 when on) or bf16 (CUDA_R_16BF, plain fp32 accumulation whatever the TF32
// switch says), one algorithm per shape, chosen once and reused by eager and captured
// runs. The linear passes write a bf16 output straight from cuBLASLt (one rounding, bias
// and activation fused) where kernels/cuda/gemm_lt_choice.h says so. Our one kernel here
// is the K == 0 case, which cuBLASLt does not take.
#include <string>
#include <type_traits>

#include "kernels/composed_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/gemm_lt.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/launchers.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace cuda {

namespace {

// C(M,N), row stride ldc: C = beta * C; beta == 0 writes zeros (BLAS: C is not read).
__global__ void scale_rows_kernel(float* C, int64_t M, int64_t N, int64_t ldc, float beta) {
  const int64_t n = M * N;
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    float& c = C[(i / N) * ldc + i % N];
    c = beta == 0.0f ? 0.0f : beta * c;
  }
}

cudaError_t launch_scale_rows(cudaStream_t stream, float* C, int64_t M, int64_t N, int64_t ldc,
                              float beta) {
  if (M * N == 0 || beta == 1.0f) return cudaSuccess;
  scale_rows_kernel<<<grid_for(M * N), kBlock, 0, stream>>>(C, M, N, ldc, beta);
  return cudaGetLastError();
}

}  // namespace

}  // namespace cuda

// The dtype of A and B picks cuBLASLt's: fp32 in CUBLAS_COMPUTE_32F (_FAST_TF32 with TF32
// on), bf16 in CUBLAS_COMPUTE_32F whatever the TF32 switch says. The algorithm is chosen
// once per shape and cached, and runs in the backend's workspace.
void CudaOps::gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                   ConstView A, int64_t lda, ConstView B, int64_t ldb, float beta, float* C,
                   int64_t ldc) {
  OpScope scope(*state_, "gemm");
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

namespace {

// Our storage dtype as cuBLASLt's (fp32, bf16); false for any other.
bool lt_type_of(DType d, cuda::LtType* t) {
  if (d == DType::kF32) *t = cuda::LtType::kF32;
  else if (d == DType::kBF16) *t = cuda::LtType::kBF16;
  else return false;
  return true;
}

cudaDataType_t cuda_type(cuda::LtType t) {
  return t == cuda::LtType::kBF16 ? CUDA_R_16BF : CUDA_R_32F;
}

}  // namespace

// y(M,N) = act(x(M,K) W(N,K)^T + b) in one cuBLASLt call where gemm_lt_choice.h says so:
// the epilogue BIAS, RELU[_BIAS] or GELU[_BIAS] into fp32 y, or into bf16 y straight from
// the fp32 accumulator with one rounding (bias in fp32; a GELU into bf16 only with
// CudaOptions::lt_gelu_bf16, cuBLASLt's GELU being its own code: gemm_lt_choice.h).
// Elsewhere (a dact asked for, which cuBLASLt's epilogues do not write; a bf16 buffer not
// 16-byte aligned, a GELU into bf16 by default, or no algorithm for the combination) it is
// the GEMM into fp32 (y or acc) followed by our bias_act kernel, as on the CPU.
void CudaOps::linear_forward(ConstView x, ConstView W, const float* b, View y, View dact,
                             float* acc, int64_t M, int64_t N, int64_t K, Act act) {
  OpScope scope(*state_, "linear_forward");
  if (M == 0 || N == 0) return;
  const cuda::LinearEpilogue e = cuda::linear_epilogue(act, b != nullptr, !dact.empty());
  cuda::LtRequest r;
  const bool types =
      x.dtype == W.dtype && lt_type_of(x.dtype, &r.ab) && lt_type_of(y.dtype, &r.d);
  if (e.fits && types) {
    r.tf32 = gemm_->tf32();
    r.epilogue = e.epilogue;
    r.lt_gelu_bf16 = lt_gelu_bf16_;
    r.K = K;
    r.align_d = cuda::lt_alignment(y.data);
    r.align_bias = cuda::lt_alignment(b);
    const cuda::LtLayoutChoice choice = cuda::choose_lt_types(r);
    if (choice.direct) {
      expect_elems("linear_forward", M * N, {y});
      // (M, N) = (M, K) x (N, K)^T, epilogue on the (M, N) result
      const cuda::GemmCall c{.trans_a = false, .trans_b = true, .M = M, .N = N, .K = K,
                             .alpha = 1.0f, .A = x.data, .lda = K, .B = W.data, .ldb = K,
                             .beta = 0.0f, .C = y.data, .ldc = N,
                             .epilogue = cuda::cublas_epilogue(choice.epilogue), .bias = b,
                             .ab_type = cuda_type(choice.ab),
                             .cd_type = cuda_type(choice.cd)};
      if (run_gemm(c)) return;
    }
  }
  composed_linear_forward(*this, x, W, b, y, dact, acc, M, N, K, act);  // gemm + bias_act
}

// dx(M,K) = dz(M,N) W(N,K). A bf16 dx (bf16 dz, W) straight from cuBLASLt: fp32
// accumulation, one rounding on the store, no fp32 product in memory and no cast kernel.
// fp32 dx, a dx not 16-byte aligned, or a refusal: the GEMM into fp32 (dx or acc), then
// our cast.
// The product (below), then dact's multiply by act_backward_saved's kernel in place, in
// its own scope.
void CudaOps::linear_backward_data(ConstView dz, ConstView W, View dx, float* acc, int64_t M,
                                   int64_t N, int64_t K, ConstView dact) {
  if (!dact.empty() && (dact.n != M * K || dact.dtype != DType::kF32)) {
    OpScope scope(*state_, "linear_backward_data");
    return fail("dact needs " + std::to_string(M * K) + " fp32 elements (dx's); it has " +
                std::to_string(dact.n) + " " + dtype_name(dact.dtype));
  }
  linear_product_into_dx(dz, W, dx, acc, M, N, K);
  if (dact.empty() || M == 0 || K == 0) return;
  OpScope scope(*state_, "act_backward_saved");
  check(cuda::launch_act_backward_saved(stream_, dx, dact, dx), "act_backward_saved_kernel");
}

void CudaOps::linear_product_into_dx(ConstView dz, ConstView W, View dx, float* acc, int64_t M,
                                     int64_t N, int64_t K) {
  OpScope scope(*state_, "linear_backward_data");
  if (M == 0 || K == 0) return;
  cuda::LtRequest r;
  if (dx.dtype == DType::kBF16 && dz.dtype == W.dtype && lt_type_of(dz.dtype, &r.ab)) {
    r.d = cuda::LtType::kBF16;
    r.tf32 = gemm_->tf32();
    r.K = N;
    r.align_d = cuda::lt_alignment(dx.data);
    const cuda::LtLayoutChoice choice = cuda::choose_lt_types(r);
    if (choice.direct) {
      expect_elems("linear_backward_data", M * K, {dx});
      // (M, K) = (M, N) x (N, K)
      const cuda::GemmCall c{.trans_a = false, .trans_b = false, .M = M, .N = K, .K = N,
                             .alpha = 1.0f, .A = dz.data, .lda = N, .B = W.data, .ldb = K,
                             .beta = 0.0f, .C = dx.data, .ldc = K,
                             .ab_type = cuda_type(choice.ab), .cd_type = cuda_type(choice.cd)};
      if (run_gemm(c)) return;
    }
  }
  composed_linear_backward_data(*this, dz, W, dx, acc, M, N, K);  // gemm + cast
}

// The composed path below needs no workspace.
size_t CudaOps::linear_params_workspace_bytes(int64_t, int64_t, DType) const { return 0; }

// dW(N,K) += dz(M,N)^T x(M,K) with beta = 1 (overwrite_dw: beta = 0), then db(N) += column sums of dz by our
// bias_grad kernel. cuBLASLt's BGRADB epilogue would fuse the bias gradient, but it
// overwrites db (our contract accumulates: a parameter may be used twice) and documents
// no reduction order, so the deterministic kernel does it.
void CudaOps::linear_backward_params(ConstView dz, ConstView x, float* dW, float* db, int64_t M,
                                     int64_t N, int64_t K, void* /*workspace*/,
                                     bool overwrite_dw) {
  OpScope scope(*state_, "linear_backward_params");
  composed_linear_backward_params(*this, dz, x, dW, db, M, N, K, overwrite_dw);
}

}  // namespace noeira
