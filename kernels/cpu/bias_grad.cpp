// CpuOps::bias_grad (contract and order: kernels/op_list.inc): each column of dy summed
// over its rows in order, in fp32, by one thread; fp32 or bf16 storage.
#include "kernels/common/bf16.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

template <class T>
void bias_grad_impl(int threads, const T* dy, float* db, int64_t M, int64_t N) {
  // Each column summed over rows in order: one thread owns a column.
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t j = 0; j < N; ++j) {
    float s = 0.0f;
    for (int64_t i = 0; i < M; ++i) s += load_f32(dy[i * N + j]);
    db[j] += s;
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
