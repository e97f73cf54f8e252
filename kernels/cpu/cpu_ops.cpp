#include "kernels/cpu/cpu_ops.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "kernels/common/philox.h"
#include "kernels/cpu/bf16_gemm.h"
#include "kernels/cpu/onednn_conv.h"
#include "kernels/cpu/onednn_matmul.h"
#include "kernels/dispatch.h"

namespace noeira {

bool CpuOps::supports_bf16() const { return Bf16Gemm::unavailable_reason().empty(); }

CpuOps::CpuOps(int threads)
    : threads_(std::max(1, threads)),
      gemm_(std::make_unique<OnednnGemm>(threads_)),
      bf16_gemm_(std::make_unique<Bf16Gemm>()),
      conv_(std::make_unique<OnednnConv>(threads_)) {}

CpuOps::~CpuOps() = default;

void cpu_op_failed(const char* op, const Error& e) {
  std::fflush(stdout);
  std::fprintf(stderr, "noeira: internal error: %s: %s\n", op, e.message.c_str());
  std::fflush(stderr);
  std::abort();
}

// ---- GEMMs ----

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

// ---- Data ----

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
  else if (src.dtype == DType::kI32 && dst.dtype == DType::kI32)
    gather_rows_impl(threads_, src.as<int32_t>(), idx, rows, row_elems, dst.as<int32_t>());
  else
    unsupported_dtypes(op, src.dtype, dst.dtype);
}

Result<size_t> CpuOps::shuffle_workspace_bytes(int64_t n) const {
  // perm is int32 and the Philox key takes a uint32 index.
  if (n < 0 || n > INT32_MAX)
    return make_error("shuffle of " + std::to_string(n) +
                      " samples: the shuffle handles 0 to 2147483647 samples (int32 "
                      "permutation); use a smaller training set");
  return static_cast<size_t>(n) * sizeof(uint64_t);
}

void CpuOps::shuffle(uint64_t seed, uint32_t epoch, int64_t n, int32_t* perm, void* workspace) {
  uint64_t* keys = static_cast<uint64_t*>(workspace);
  for (int64_t i = 0; i < n; ++i) {
    keys[i] = shuffle_key(seed, epoch, static_cast<uint32_t>(i));
    perm[i] = static_cast<int32_t>(i);
  }
  std::stable_sort(perm, perm + n, [keys](int32_t a, int32_t b) { return keys[a] < keys[b]; });
}

// ---- Counters and memory ----

void CpuOps::advance(StepCounters* counters) {
  counters->step += 1;
  counters->batch_in_epoch += 1;
}

// Zero bytes are a no-op whatever the pointers, as on the GPU: an empty arena (a model
// without parameters) has a null base, and memset/memcpy must not be given null.
void CpuOps::fill_zero(void* p, size_t bytes) {
  if (bytes > 0) std::memset(p, 0, bytes);
}

void CpuOps::copy_to_device(void* dst, const void* host_src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, host_src, bytes);
}

void CpuOps::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  if (bytes > 0) std::memcpy(host_dst, src, bytes);
}

}  // namespace noeira
