// CpuOps::bias_grad (contract and order: kernels/op_list.inc): each column of dy summed
// over its rows in order, in fp32, by one thread; fp32 or bf16 storage.
#include "kernels/common/bf16.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/parallel_chunks.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

// Columns per accumulator block: the block's sums stay in L1 while the rows stream by.
constexpr int64_t kColumns = 256;

template <class T>
void bias_grad_impl(int threads, const T* dy, float* db, int64_t M, int64_t N) {
  // Each column summed over its rows in order, in fp32, by one thread (the contract). The
  // loop walks row by row over a block of columns, so each row's block is one contiguous
  // read; walking a column at a time (N floats apart) cost vit-tiny's 8320 x 384 ~5 ms.
  // Per column the additions are the same, so are the bits.
  const int64_t width = chunk_width(N, threads, kColumns);
  const int64_t chunks = (N + width - 1) / width;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t j0 = c * width, n = j0 + width < N ? width : N - j0;
    float s[kColumns] = {};
    for (int64_t i = 0; i < M; ++i) {
      const T* __restrict row = dy + i * N + j0;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) s[j] += load_f32(row[j]);
    }
    for (int64_t j = 0; j < n; ++j) db[j0 + j] += s[j];
  }
}

}  // namespace

void CpuOps::bias_grad(ConstView dy, float* db, int64_t M, int64_t N) {
  const char* op = "bias_grad";
  expect_elems(op, M * N, {dy});
  dispatch_float(op, {dy}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    bias_grad_impl(threads_, dy.as<T>(), db, M, N);
  });
}

}  // namespace noeira
