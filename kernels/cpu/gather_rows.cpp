// CpuOps::gather_rows (contract: kernels/op_list.inc): the step's batch, one row per
// OpenMP iteration.
#include <cstring>
#include <type_traits>

#include "kernels/common/bf16.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

// Same-type rows are copied as bytes; fp32 -> bf16 rows are rounded element by element.
template <class S, class D>
void gather_rows_impl(int threads, const S* src, const int32_t* idx, int64_t rows,
                      int64_t row_elems, D* dst) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const S* s = src + static_cast<int64_t>(idx[r]) * row_elems;
    D* d = dst + r * row_elems;
    if constexpr (std::is_same_v<S, D>)
      std::memcpy(d, s, static_cast<size_t>(row_elems) * sizeof(S));
    else
      for (int64_t k = 0; k < row_elems; ++k) store_f32(d[k], s[k]);
  }
}

}  // namespace

void CpuOps::gather_rows(ConstView src, const int32_t* perm, int64_t rows, int64_t row_elems,
                         const StepCounters* counters, View dst) {
  const char* op = "gather_rows";
  expect_elems(op, rows * row_elems, {dst});
  const int32_t* idx = perm + counters->batch_in_epoch * rows;
  if (src.dtype == DType::kF32 && dst.dtype == DType::kF32)
    gather_rows_impl(threads_, src.as<float>(), idx, rows, row_elems, dst.as<float>());
  else if (src.dtype == DType::kF32 && dst.dtype == DType::kBF16)
    gather_rows_impl(threads_, src.as<float>(), idx, rows, row_elems, dst.as<bf16_t>());
  else if (src.dtype == DType::kBF16 && dst.dtype == DType::kBF16)  // BF16Policy's resident images
    gather_rows_impl(threads_, src.as<bf16_t>(), idx, rows, row_elems, dst.as<bf16_t>());
  else if (src.dtype == DType::kI32 && dst.dtype == DType::kI32)
    gather_rows_impl(threads_, src.as<int32_t>(), idx, rows, row_elems, dst.as<int32_t>());
  else
    unsupported_dtypes(op, src.dtype, dst.dtype);
}

}  // namespace noeira
