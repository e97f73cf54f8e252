// fp32 GEMM on the CPU through oneDNN's matmul (or, where that runs oneDNN's gemm kernel, the
// kernel itself: onednn_matmul.cpp DirectGemm): CpuOps::gemm's fp32 path (brgemm
// AVX-512 kernels on this project's Intel build machines, where Debian's OpenBLAS, used
// before, ran its SSE3 'Prescott' kernels; DESIGN.md section 7).
//
// Results do not depend on the thread count (DESIGN.md rule 3): C is cut into slabs of
// rows, their size a function of M alone (onednn_gemm_slab_rows), that OpenMP spreads
// over `threads`; each slab is one single-threaded oneDNN call whose reduction order
// depends on its shape only. A transposed B (a Linear layer's x W^T) over 8 slabs or more
// is reordered once per call into the blocked layout the kernels read, instead of by every
// slab (same kernels, same bits; onednn_matmul.cpp). A small batch is cut by columns
// instead, in slabs of a function of N alone: x W^T at M <= 256 rows, dz W at M <= 128.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

#include "kernels/common/error.h"

namespace noeira {

// Rows of C per slab for an M-row product: a function of M alone, so results never depend
// on the thread count. 64 rows up to M = 256; above, M / 256 slabs rounded up to a multiple
// of 4, their rows rounded up to a multiple of 8 (the last slab may be shorter): gpt-tiny's
// 768 rows in 4 slabs of 192, vit-tiny's 8320 in 35 of 232 and one of 200. Each call's
// start and each re-read (or packing) of B are then paid over more rows, and the slabs
// still split about evenly over 2 or 4 threads.
int64_t onednn_gemm_slab_rows(int64_t M);

// Called on a slab's thread once the slab's rows [m0, m0 + rows) of C are computed: work
// on those rows while they are in cache (a linear layer's bias and activation). Where C is
// cut by columns (x W^T at M <= 256), it runs on row slabs once every column is written.
using SlabEpilogue = std::function<void(int64_t m0, int64_t rows)>;

class OnednnGemm {
 public:
  explicit OnednnGemm(int threads);
  ~OnednnGemm();
  int threads() const { return threads_; }
  // Calls so far that packed B once for their slabs (tests check the path is taken).
  int64_t packed_calls() const { return packed_calls_; }
  // Calls so far that cut C by columns (onednn_matmul.cpp, use_column_slabs).
  int64_t column_calls() const { return column_calls_; }
  // Calls so far with a slab that called oneDNN's GEMM kernel directly (onednn_matmul.cpp,
  // DirectGemm).
  int64_t direct_calls() const { return direct_calls_; }

  // Row-major C(M,N) = alpha * op(A)(M,K) * op(B)(K,N) + beta * C, as Ops::gemm; with
  // beta == 0, C is not read. The first call with a shape (transposes, sizes, leading
  // dimensions, alpha, beta) creates its primitives and grows the per-thread
  // scratchpads and the packed-B buffer: slow and allocating, so a plan should make each
  // call once; later calls reuse them (oneDNN still news a few small objects per slab,
  // and its GEMM kernel, which it picks for strided slabs such as op(A) = A^T, mallocs
  // packing buffers).
  // alpha and beta are part of the shape: one primitive per value. One caller at a time. An Error
  // for negative sizes, a leading dimension smaller than its row, a call from inside an OpenMP
  // parallel region, or a oneDNN failure.
  // `after`, when not null, runs after each slab (K == 0: once, over all M rows).
  Status run(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
             const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
             int64_t ldc, const SlabEpilogue* after = nullptr);

 private:
  Status run_columns(bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                     int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc,
                     const SlabEpilogue* after);
  struct Impl;
  int threads_;
  int64_t packed_calls_ = 0;
  int64_t column_calls_ = 0;
  int64_t direct_calls_ = 0;
  std::unique_ptr<Impl> impl_;
};

}  // namespace noeira
