// CpuOps' matrix products (contracts: kernels/op_list.inc): gemm through oneDNN
// (onednn_matmul.h fp32, bf16_gemm.h bf16); the linear layer's passes as gemm + bias_act
// (fused slab by slab here), gemm + cast (kernels/composed_ops.h), and the parameter
// gradients as gemm + bias_grad, by row chunks over many rows, transposed for fp32 layers
// that widen (below).
#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "kernels/composed_ops.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/onednn_matmul.h"
#include "kernels/dispatch.h"

namespace noeira {

// fp32: OnednnGemm cuts C into its own slabs (by M). bf16: fixed 64-row slabs of
// C here, spread over OpenMP threads, one single-threaded Bf16Gemm call each. The slabs
// do not depend on the thread count, so neither do the results.
void CpuOps::gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  ConstView A, int64_t lda, ConstView B, int64_t ldb, float beta, float* C,
                  int64_t ldc) {
  gemm_slabs(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, nullptr);
}

void CpuOps::gemm_slabs(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                        float alpha, ConstView A, int64_t lda, ConstView B, int64_t ldb,
                        float beta, float* C, int64_t ldc, const SlabEpilogue* after) {
  const char* op = "gemm";
  dispatch_float(op, {A, B}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    if constexpr (std::is_same_v<T, float>) {
      const Status s = gemm_->run(trans_a, trans_b, M, N, K, alpha, A.as<float>(), lda,
                                  B.as<float>(), ldb, beta, C, ldc, after);
      if (!s) cpu_op_failed(op, s.error());
    } else {
      const T* a_all = A.as<T>();
      const T* b = B.as<T>();
      const int64_t slabs = (M + kCpuGemmSlabRows - 1) / kCpuGemmSlabRows;
#pragma omp parallel for num_threads(threads_) schedule(static) if (slabs > 1)
      for (int64_t s = 0; s < slabs; ++s) {
        const int64_t m0 = s * kCpuGemmSlabRows, rows = std::min(kCpuGemmSlabRows, M - m0);
        // Row m of op(A) starts at A + m*lda (no transpose) or A + m (transposed).
        const T* a = trans_a ? a_all + m0 : a_all + m0 * lda;
        bf16_gemm_->run(trans_a, trans_b, rows, N, K, alpha, a, lda, b, ldb, beta, C + m0 * ldc,
                        ldc);
        if (after) (*after)(m0, rows);
      }
    }
  });
}

// The GEMM, then bias and activation on each slab of rows as soon as the GEMM has written
// it, while it is in cache (gemm then bias_act read the whole output back from memory:
// vit-tiny's bias-only 8320 x 384 layers gained ~4%; its GELU layer, bound by the GELU's
// arithmetic, did not). The same slabs and element-wise math as composed_linear_forward,
// so the same bits.
void CpuOps::linear_forward(ConstView x, ConstView W, const float* b, View y, View dact,
                            float* acc, int64_t M, int64_t N, int64_t K, Act act) {
  float* product = y.dtype == DType::kF32 ? y.as<float>() : acc;
  if (product == y.data && !b && act == Act::kNone && dact.empty()) {
    gemm(false, true, M, N, K, 1.0f, x, K, W, K, 0.0f, product, N);
    return;
  }
  const char* op = "linear_forward";
  expect_elems(op, M * N, {y, dact});
  if (!dact.empty()) expect_dtype(op, DType::kF32, {dact});
  dispatch_float(op, {y}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    T* yt = y.as<T>();
    float* da = dact.empty() ? nullptr : dact.as<float>();
    const SlabEpilogue after = [&](int64_t m0, int64_t rows) {
      bias_act_rows(product + m0 * N, b, yt + m0 * N, da ? da + m0 * N : nullptr, rows, N, act);
    };
    gemm_slabs(false, true, M, N, K, 1.0f, x, K, W, K, 0.0f, product, N, &after);
  });
}

// With a dact, the multiply on each GEMM slab of dx as soon as the GEMM has written it,
// while it is in cache (gemm, then act_backward_saved reading dx back: docs/cpu-runs/
// 2026-12-07-xeon-m167-gelu-grad.md). The same slabs as composed_linear_backward_data and
// act_backward_saved's element, so the same bits.
void CpuOps::linear_backward_data(ConstView dz, ConstView W, View dx, float* acc, int64_t M,
                                  int64_t N, int64_t K, ConstView dact) {
  if (dact.empty()) {
    composed_linear_backward_data(*this, dz, W, dx, acc, M, N, K);
    return;
  }
  const char* op = "linear_backward_data";
  expect_elems(op, M * K, {dx, dact});
  expect_dtype(op, DType::kF32, {dact});
  float* product = dx.dtype == DType::kF32 ? dx.as<float>() : acc;
  if (!product) cpu_op_failed(op, Error{"no fp32 scratch (acc) for a dx that is not fp32"});
  dispatch_float(op, {dx}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    T* out = dx.as<T>();
    const float* g = dact.as<float>();
    const SlabEpilogue after = [&](int64_t m0, int64_t rows) {
      act_backward_saved_rows(product + m0 * K, g + m0 * K, out + m0 * K, rows * K);
    };
    // dx (M, K) = dz (M, N) . W (N, K)
    gemm_slabs(false, false, M, K, N, 1.0f, dz, N, W, K, 0.0f, product, K, &after);
  });
}

namespace {

// Rows [r0, r0 + rows) of a (., cols) matrix.
ConstView rows_of(ConstView m, int64_t r0, int64_t rows, int64_t cols) {
  const size_t at = static_cast<size_t>(r0 * cols) * dtype_size(m.dtype);
  return ConstView{static_cast<const std::byte*>(m.data) + at, m.dtype, rows * cols};
}

// Over many rows (a ViT's 8320 token rows), the product and the bias sums take the rows a
// chunk of kParamsChunkRows at a time: the chunk's product joins dW (or its transpose,
// below), then the chunk's rows join the bias sums while they are still in L2 (summed
// after the whole product, they read dz back from memory), and bf16 products re-read only
// a chunk of x per slab of dW. vit-tiny at one thread: c_attn's fp32 weight gradients 34
// -> 29 ms per step, the bf16 step's GEMMs 100 -> 92 ms
// (docs/cpu-runs/2026-12-06-emr-chunked-weight-grads.md). fp32 products
// over x rows wider than 128 lost more to the chunking than the sums gained (vit's, 2
// threads: +2-5%), so they run whole. Chunks are a function of the shape alone, so the
// bits do not depend on the thread count; the bias sums keep bias_grad's order, so db has
// its bits. Fewer rows, or more columns than the running sums hold on the stack: one
// product over every row, then bias_grad (kernels/composed_ops.h where not transposed).
constexpr int64_t kParamsChunkRows = 512;
constexpr int64_t kParamsChunkMinRows = 4 * kParamsChunkRows;
constexpr int64_t kParamsChunkMaxCols = 4096;
constexpr int64_t kParamsChunkMaxF32K = 128;

bool chunks_params(DType dt, int64_t M, int64_t N, int64_t K) {
  return M >= kParamsChunkMinRows && N <= kParamsChunkMaxCols &&
         (dt == DType::kBF16 || K <= kParamsChunkMaxF32K);
}

// fp32 dz wider than x (N > K: a layer that widens, as attention's c_attn and the MLP's
// c_fc) takes its product transposed, dW^T(K,N) = x^T dz, into the workspace, then adds it
// to dW transposed. oneDNN reads the transposed operand by copying it; copying x's K
// columns instead of dz's N costs less, and the product's own slabs are rows of dW^T, 64
// each up to 256 (onednn_gemm_slab_rows): from K = 128, two or more, so two threads share
// it (K <= 64 would leave one; vit-tiny's 48-wide patches lost 0.4 ms a call at two
// threads). Between 65 and 127 not measured: those stay untransposed.
// In the step (`profile`, 4 layers): vit-tiny's c_attn at two threads 17.4-17.7 -> 14.0-14.4
// ms, gpt-tiny's at one 2.53-2.60 -> 2.37-2.41; the c_fc layers (N = 2K, 4K) unchanged
// within the noise. Alone with cold operands, one thread: gpt-tiny's c_attn 675-727 ->
// 596-616 us, c_fc 863-901 -> 765-771. Wider x (N < K) lost 9-22%; equal widths tied.
constexpr int64_t kTransposeMinK = 128;
bool transposes_params(DType dt, int64_t N, int64_t K) {
  return dt == DType::kF32 && N > K && K >= kTransposeMinK;
}

}  // namespace

size_t CpuOps::linear_params_workspace_bytes(int64_t N, int64_t K, DType dz_dtype) const {
  return transposes_params(dz_dtype, N, K) ? static_cast<size_t>(N * K) * sizeof(float) : 0;
}

void CpuOps::linear_backward_params(ConstView dz, ConstView x, float* dW, float* db, int64_t M,
                                    int64_t N, int64_t K, void* workspace, bool overwrite_dw) {
  const char* op = "linear_backward_params";
  const bool chunked = chunks_params(dz.dtype, M, N, K);
  const bool transposed = M > 0 && transposes_params(dz.dtype, N, K);
  if (!chunked && !transposed) {
    composed_linear_backward_params(*this, dz, x, dW, db, M, N, K, overwrite_dw);
    return;
  }
  expect_elems(op, M * N, {dz});
  expect_elems(op, M * K, {x});
  if (transposed && !workspace)
    cpu_op_failed(op, Error{"no workspace; plan linear_params_workspace_bytes(N, K, dtype) "
                            "bytes and pass them"});
  float* t = transposed ? static_cast<float*>(workspace) : nullptr;  // dW^T(K,N), chunks' sum
  const bool sums_here = db && chunked;
  float sums[kParamsChunkMaxCols];  // each column's running sum, as bias_grad's
  if (sums_here) std::fill(sums, sums + N, 0.0f);
  const int64_t chunk = chunked ? kParamsChunkRows : M;
  for (int64_t r0 = 0; r0 < M; r0 += chunk) {
    const int64_t rows = std::min(chunk, M - r0);
    const ConstView dz_rows = rows_of(dz, r0, rows, N);  // (rows, N)
    const ConstView x_rows = rows_of(x, r0, rows, K);    // (rows, K)
    if (transposed)  // t(K,N) (+)= x_rows^T (K, rows) . dz_rows (rows, N)
      gemm(true, false, K, N, rows, 1.0f, x_rows, K, dz_rows, N, r0 == 0 ? 0.0f : 1.0f, t, N);
    else  // dW(N,K) += dz_rows^T (N, rows) . x_rows (rows, K); overwritten by the first chunk
      gemm(true, false, N, K, rows, 1.0f, dz_rows, N, x_rows, K,
           overwrite_dw && r0 == 0 ? 0.0f : 1.0f, dW, K);
    if (sums_here) add_column_sums(threads_, dz_rows, rows, N, sums);
  }
  if (transposed) {
    // dW[n][k] += t[k][n]: one addition per element, so any split over threads has the
    // same bits; tiles of 16 x 16 keep both sides' lines in L1. Under 16384 elements (64
    // KiB) a parallel region costs more than the loop.
    constexpr int64_t kTile = 16;
#pragma omp parallel for num_threads(threads_) schedule(static) if (N * K >= 16384)
    for (int64_t n0 = 0; n0 < N; n0 += kTile)
      for (int64_t k0 = 0; k0 < K; k0 += kTile)
        for (int64_t n = n0; n < std::min(n0 + kTile, N); ++n)
          for (int64_t k = k0; k < std::min(k0 + kTile, K); ++k)
            dW[n * K + k] = (overwrite_dw ? 0.0f : dW[n * K + k]) + t[k * N + n];
  }
  if (sums_here)
    for (int64_t j = 0; j < N; ++j) db[j] += sums[j];
  else if (db)
    bias_grad(dz, db, M, N);
}

}  // namespace noeira
