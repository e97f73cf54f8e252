// CpuOps::bias_grad (contract and order: kernels/op_list.inc): each column of dy summed
// over its rows in order, in fp32, by one thread; fp32 or bf16 storage. add_column_sums:
// the same sums a run of rows at a time (linear_backward_params over many rows).
#include <algorithm>

#include "kernels/common/bf16.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/parallel_chunks.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

// Columns per accumulator block: the block's sums stay in L1 while the rows stream by.
constexpr int64_t kColumns = 256;

// Each column summed over its rows in order, in fp32, by one thread (the contract). The
// loop walks row by row over a block of columns, so each row's block is one contiguous
// read; walking a column at a time (N floats apart) cost vit-tiny's 8320 x 384 ~5 ms.
// Per column the additions are the same, so are the bits. Block c's running sums come
// from start(j0, n, s) and go to finish(j0, n, s).
template <class T, class Start, class Finish>
void column_sums(int threads, const T* dy, int64_t rows, int64_t N, const Start& start,
                 const Finish& finish) {
  const int64_t width = chunk_width(N, threads, kColumns);
  const int64_t chunks = (N + width - 1) / width;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t j0 = c * width, n = j0 + width < N ? width : N - j0;
    float s[kColumns];
    start(j0, n, s);
    for (int64_t i = 0; i < rows; ++i) {
      const T* __restrict row = dy + i * N + j0;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) s[j] += load_f32(row[j]);
    }
    finish(j0, n, s);
  }
}

}  // namespace

void CpuOps::bias_grad(ConstView dy, float* db, int64_t M, int64_t N) {
  const char* op = "bias_grad";
  expect_elems(op, M * N, {dy});
  dispatch_float(op, {dy}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    column_sums(
        threads_, dy.as<T>(), M, N, [](int64_t, int64_t n, float* s) { std::fill(s, s + n, 0.0f); },
        [db](int64_t j0, int64_t n, const float* s) {
          for (int64_t j = 0; j < n; ++j) db[j0 + j] += s[j];
        });
  });
}

void add_column_sums(int threads, ConstView dy, int64_t rows, int64_t N, float* sums) {
  const char* op = "bias_grad";
  expect_elems(op, rows * N, {dy});
  dispatch_float(op, {dy}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    column_sums(
        threads, dy.as<T>(), rows, N,
        [sums](int64_t j0, int64_t n, float* s) { std::copy(sums + j0, sums + j0 + n, s); },
        [sums](int64_t j0, int64_t n, const float* s) { std::copy(s, s + n, sums + j0); });
  });
}

}  // namespace noeira
