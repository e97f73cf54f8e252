// Batch gathers from the resident data set through the epoch permutation. The batch
// index is read from the device counter, so a captured step gathers the next batch at
// every replay. Under BF16Policy the gather is also the input's boundary cast.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/vec8.cuh"

namespace noeira::cuda {

namespace {

// One element (or vector of elements) of a gather: a copy, or a round to bf16.
__device__ __forceinline__ void convert(const float& s, float& d) { d = s; }
__device__ __forceinline__ void convert(const float4& s, float4& d) { d = s; }
__device__ __forceinline__ void convert(const float& s, bf16_t& d) { store_f32(d, s); }
__device__ __forceinline__ void convert(const Float8& s, Bf16x8& d) {
  float v[kVec];
  unpack8(s, v);
  pack8(v, d);
}

// dst(rows, row_vecs) = convert(src[perm[batch * rows + r]]); (S, D) is (float, float) or
// (float4, float4) (a copy), or (float, bf16_t) or (Float8, Bf16x8) (gather + cast).
template <class S, class D>
__global__ void gather_rows_kernel(const S* src, const int32_t* perm, int64_t rows,
                                   int64_t row_vecs, const StepCounters* counters, D* dst) {
  const int32_t* idx = perm + counters->batch_in_epoch * rows;  // (rows)
  const int64_t n = rows * row_vecs;
  for (int64_t t = global_thread(); t < n; t += grid_stride()) {
    const int64_t r = t / row_vecs, k = t - r * row_vecs;
    convert(src[static_cast<int64_t>(idx[r]) * row_vecs + k], dst[t]);
  }
}

__global__ void gather_labels_kernel(const int32_t* src, const int32_t* perm, int64_t rows,
                                     const StepCounters* counters, int32_t* dst) {
  const int32_t* idx = perm + counters->batch_in_epoch * rows;  // (rows)
  for (int64_t r = global_thread(); r < rows; r += grid_stride()) dst[r] = src[idx[r]];
}

}  // namespace

cudaError_t launch_gather_rows(cudaStream_t stream, const float* src, const int32_t* perm,
                               int64_t rows, int64_t row_elems, const StepCounters* counters,
                               float* dst) {
  if (rows * row_elems == 0) return cudaSuccess;
  if (row_elems % 4 == 0 && aligned16(src) && aligned16(dst)) {
    const int64_t row_vecs = row_elems / 4;  // 16-byte copies
    gather_rows_kernel<<<grid_for(rows * row_vecs), kBlock, 0, stream>>>(
        reinterpret_cast<const float4*>(src), perm, rows, row_vecs, counters,
        reinterpret_cast<float4*>(dst));
  } else {
    gather_rows_kernel<<<grid_for(rows * row_elems), kBlock, 0, stream>>>(
        src, perm, rows, row_elems, counters, dst);
  }
  return cudaGetLastError();
}

cudaError_t launch_gather_rows_bf16(cudaStream_t stream, const float* src, const int32_t* perm,
                                    int64_t rows, int64_t row_elems,
                                    const StepCounters* counters, bf16_t* dst) {
  if (rows * row_elems == 0) return cudaSuccess;
  if (row_elems % kVec == 0 && aligned16(src) && aligned16(dst)) {
    const int64_t row_vecs = row_elems / kVec;  // 8 elements: 32 bytes in, 16 bytes out
    gather_rows_kernel<<<grid_for(rows * row_vecs), kBlock, 0, stream>>>(
        reinterpret_cast<const Float8*>(src), perm, rows, row_vecs, counters,
        reinterpret_cast<Bf16x8*>(dst));
  } else {
    gather_rows_kernel<<<grid_for(rows * row_elems), kBlock, 0, stream>>>(
        src, perm, rows, row_elems, counters, dst);
  }
  return cudaGetLastError();
}

cudaError_t launch_gather_labels(cudaStream_t stream, const int32_t* src, const int32_t* perm,
                                 int64_t rows, const StepCounters* counters, int32_t* dst) {
  if (rows == 0) return cudaSuccess;
  gather_labels_kernel<<<grid_for(rows), kBlock, 0, stream>>>(src, perm, rows, counters, dst);
  return cudaGetLastError();
}

}  // namespace noeira::cuda
