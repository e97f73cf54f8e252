// CudaOps::gather_rows (contract: kernels/op_list.inc): the step's batch from the resident
// data set through the epoch permutation. The batch index is read from the device counter,
// so a captured step gathers the next batch at every replay. Under BF16Policy the gather
// is also the input's boundary cast; labels are gathered as int32 rows of one element.
// 16-byte (or, for the cast, 8-element) accesses when the rows and buffers allow; 32-bit
// index math below 2^31 vectors (index.cuh).
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/index.cuh"
#include "kernels/cuda/vec8.cuh"
#include "kernels/dispatch.h"

namespace noeira {

namespace cuda {

namespace {

// One element (or vector of elements) of a gather: a copy, or a round to bf16.
__device__ __forceinline__ void convert(const float& s, float& d) { d = s; }
__device__ __forceinline__ void convert(const float4& s, float4& d) { d = s; }
__device__ __forceinline__ void convert(const int32_t& s, int32_t& d) { d = s; }
__device__ __forceinline__ void convert(const int4& s, int4& d) { d = s; }
__device__ __forceinline__ void convert(const bf16_t& s, bf16_t& d) { d = s; }
__device__ __forceinline__ void convert(const float& s, bf16_t& d) { store_f32(d, s); }
__device__ __forceinline__ void convert(const Float8& s, Bf16x8& d) {
  float v[kVec];
  unpack8(s, v);
  pack8(v, d);
}

// dst(rows, row_vecs) = convert(src[perm[batch * rows + r]]); (S, D) is (float, float),
// (float4, float4), (int32_t, int32_t), (bf16_t, bf16_t) or (int4, int4) (a copy), or (float, bf16_t) or
// (Float8, Bf16x8) (gather + cast).
// I: the index type of t < rows * row_vecs (index.cuh).
template <class S, class D, class I>
__global__ void gather_rows_kernel(const S* src, const int32_t* perm, int64_t rows,
                                   Divider<I> row_vecs, I n, const StepCounters* counters,
                                   D* dst) {
  const int32_t* idx = perm + counters->batch_in_epoch * rows;  // (rows)
  for (I t = first_index<I>(); t < n; t += index_stride<I>()) {
    I k;
    const I r = row_vecs.divmod(t, k);
    convert(src[static_cast<int64_t>(idx[r]) * row_vecs.value() + k], dst[t]);
  }
}

template <class S, class D>
void gather_rows_launch(cudaStream_t stream, const S* src, const int32_t* perm, int64_t rows,
                        int64_t row_vecs, const StepCounters* counters, D* dst) {
  with_index(rows * row_vecs, [&](auto index) {
    using I = typename decltype(index)::type;
    gather_rows_kernel<<<grid_for(rows * row_vecs), kBlock, 0, stream>>>(
        src, perm, rows, Divider<I>(row_vecs), static_cast<I>(rows * row_vecs), counters, dst);
  });
}

// Launches gather_rows_kernel for storage (S, D), moving whole vectors (SV, DV: vec_elems
// elements each) when they tile the rows and both buffers are 16-byte aligned.
template <class S, class D, class SV, class DV>
cudaError_t gather_launch(cudaStream_t stream, const S* src, const int32_t* perm, int64_t rows,
                          int64_t row_elems, const StepCounters* counters, D* dst,
                          int64_t vec_elems) {
  if (rows * row_elems == 0) return cudaSuccess;
  if (row_elems % vec_elems == 0 && aligned16(src) && aligned16(dst)) {
    gather_rows_launch(stream, reinterpret_cast<const SV*>(src), perm, rows,
                       row_elems / vec_elems, counters, reinterpret_cast<DV*>(dst));
  } else {
    gather_rows_launch(stream, src, perm, rows, row_elems, counters, dst);
  }
  return cudaGetLastError();
}

cudaError_t launch_gather_rows(cudaStream_t stream, ConstView src, const int32_t* perm,
                               int64_t rows, int64_t row_elems, const StepCounters* counters,
                               View dst) {
  const char* op = "gather_rows";
  expect_elems(op, rows * row_elems, {dst});
  if (src.dtype == DType::kF32 && dst.dtype == DType::kF32)  // float4 copies
    return gather_launch<float, float, float4, float4>(stream, src.as<float>(), perm, rows,
                                                       row_elems, counters, dst.as<float>(), 4);
  if (src.dtype == DType::kF32 && dst.dtype == DType::kBF16)  // 32 bytes in, 16 bytes out
    return gather_launch<float, bf16_t, Float8, Bf16x8>(stream, src.as<float>(), perm, rows,
                                                        row_elems, counters, dst.as<bf16_t>(),
                                                        kVec);
  if (src.dtype == DType::kI32 && dst.dtype == DType::kI32)  // int4 copies
    return gather_launch<int32_t, int32_t, int4, int4>(stream, src.as<int32_t>(), perm, rows,
                                                       row_elems, counters,
                                                       dst.as<int32_t>(), 4);
  if (src.dtype == DType::kBF16 && dst.dtype == DType::kBF16)  // bf16 images: int4 = 8 values
    return gather_launch<bf16_t, bf16_t, int4, int4>(stream, src.as<bf16_t>(), perm, rows,
                                                     row_elems, counters, dst.as<bf16_t>(), 8);
  unsupported_dtypes(op, src.dtype, dst.dtype);
}

}  // namespace

}  // namespace cuda

void CudaOps::gather_rows(ConstView src, const int32_t* perm, int64_t rows, int64_t row_elems,
                          const StepCounters* counters, View dst) {
  OpScope scope(*state_, "gather_rows");
  check(cuda::launch_gather_rows(stream_, src, perm, rows, row_elems, counters, dst),
        "gather_rows_kernel");
}

}  // namespace noeira
