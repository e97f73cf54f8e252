// CudaOps' global-norm gradient clipping (contract: kernels/op_list.inc; the math of
// kernels/common/clip.h). Each segment p = [segments[p], segments[p + 1]) is cut into
// kClipChunks equal chunks (ceil(len / kClipChunks) elements each, the last shorter, some
// empty when len is small); in a chunk, thread t of 256 sums g[begin + t], g[begin + t +
// 256], ... as double squares in order and the thread sums are folded pairwise (t += t +
// h, h = 128, ..., 1): the chunk's partial, in the workspace. One block then adds each
// segment's partials in chunk order (sq_p), norm_p = clip_segment_norm(sq_p), and one
// thread adds clip_norm_square(norm_p) in segment order: total, *norm, and the
// coefficient, which a last kernel multiplies into g[segments[0] .. segments[n_segments]).
//
// The segment offsets live on the device, so every kernel reads them there and the host
// needs only n_segments: the grid of the partial sums is (n_segments, kClipChunks), the
// combine is one block, and the scaling a fixed grid striding over the gradient arena.
// Workspace (clip_workspace_bytes): partials (n_segments * kClipChunks doubles), then the
// coefficient (one float).
#include <cstdint>
#include <string>

#include "kernels/common/clip.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"

namespace noeira {

namespace cuda {

namespace {

constexpr int kClipChunks = 32;
constexpr size_t kAlign = 256;
size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }
constexpr int kClipThreads = 256;
constexpr unsigned kClipScaleBlocks = 1024;

// Block (p, k): chunk k of segment p; the order is stated at the top of this file.
__global__ void clip_partials_kernel(const float* g, const int64_t* segments, int64_t n_segments,
                                     double* partials) {
  __shared__ double sums[kClipThreads];
  const int t = threadIdx.x;
  const int64_t k = blockIdx.y;
  for (int64_t p = blockIdx.x; p < n_segments; p += gridDim.x) {
    const int64_t b = segments[p], e = segments[p + 1];
    const int64_t len = e > b ? e - b : 0;
    const int64_t per = (len + kClipChunks - 1) / kClipChunks;
    const int64_t begin = b + k * per;
    const int64_t end = begin + per < e ? begin + per : e;
    double s = 0.0;
    for (int64_t i = begin + t; i < end; i += kClipThreads) {
      const double v = g[i];
      s += v * v;
    }
    sums[t] = s;
    __syncthreads();
    for (int h = kClipThreads / 2; h > 0; h /= 2) {
      if (t < h) sums[t] += sums[t + h];
      __syncthreads();
    }
    if (t == 0) partials[p * kClipChunks + k] = sums[0];
    __syncthreads();  // the next segment reuses the shared sums
  }
}

// One block: thread s turns segment s's partials (chunk order) into norm_p^2 (double, in
// partials[s * kClipChunks]); thread 0 then adds those in segment order.
__global__ void clip_combine_kernel(double* partials, int64_t n_segments, float max_norm,
                                    float* norm, float* coef) {
  for (int64_t p = threadIdx.x; p < n_segments; p += blockDim.x) {
    double sq = partials[p * kClipChunks];
    for (int k = 1; k < kClipChunks; ++k) sq += partials[p * kClipChunks + k];
    partials[p * kClipChunks] = clip_norm_square(clip_segment_norm(sq));
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double total_sq = 0.0;
    for (int64_t p = 0; p < n_segments; ++p) total_sq += partials[p * kClipChunks];
    const float total = clip_total_norm(total_sq);
    if (norm) *norm = total;
    *coef = clip_coefficient(total, max_norm);
  }
}

__global__ void clip_scale_kernel(float* g, const int64_t* segments, int64_t n_segments,
                                  const float* coef) {
  const float c = *coef;
  const int64_t begin = segments[0], end = segments[n_segments];
  for (int64_t i = begin + global_thread(); i < end; i += grid_stride()) g[i] *= c;
}

size_t clip_workspace_bytes(int64_t n_segments) {
  if (n_segments <= 0) return 0;
  return align_up(static_cast<size_t>(n_segments) * kClipChunks * sizeof(double)) + kAlign;
}

cudaError_t launch_clip_grad_norm(cudaStream_t stream, float* g, const int64_t* segments,
                                  int64_t n_segments, float max_norm, float* norm,
                                  void* workspace) {
  if (n_segments < 0) return cudaErrorInvalidValue;
  if (n_segments == 0) {  // no parameters: the total is 0
    if (norm) return cudaMemsetAsync(norm, 0, sizeof(float), stream);
    return cudaSuccess;
  }
  if (!workspace || reinterpret_cast<uintptr_t>(workspace) % 8 != 0) return cudaErrorInvalidValue;
  auto* partials = static_cast<double*>(workspace);
  auto* coef = reinterpret_cast<float*>(static_cast<char*>(workspace) +
                                        align_up(static_cast<size_t>(n_segments) * kClipChunks *
                                                 sizeof(double)));
  const dim3 grid(static_cast<unsigned>(n_segments < (1 << 30) ? n_segments : (1 << 30)),
                  kClipChunks);
  clip_partials_kernel<<<grid, kClipThreads, 0, stream>>>(g, segments, n_segments, partials);
  clip_combine_kernel<<<1, 1024, 0, stream>>>(partials, n_segments, max_norm, norm, coef);
  clip_scale_kernel<<<kClipScaleBlocks, kBlock, 0, stream>>>(g, segments, n_segments, coef);
  return cudaGetLastError();
}

}  // namespace

}  // namespace cuda

size_t CudaOps::clip_workspace_bytes(int64_t n_segments) const {
  return cuda::clip_workspace_bytes(n_segments);
}

void CudaOps::clip_grad_norm(float* g, const int64_t* segments, int64_t n_segments,
                             float max_norm, float* norm, void* workspace) {
  OpScope scope(*state_, "clip_grad_norm");
  if (n_segments < 0) return fail("negative n_segments " + std::to_string(n_segments));
  if (n_segments > 0 && (!workspace || reinterpret_cast<uintptr_t>(workspace) % 8 != 0))
    return fail("no 8-byte aligned workspace; plan clip_workspace_bytes(n_segments) bytes");
  check(cuda::launch_clip_grad_norm(stream_, g, segments, n_segments, max_norm, norm, workspace),
        "clip_grad_norm kernels");
}

}  // namespace noeira
