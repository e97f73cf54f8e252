// The kernels around the attention GEMMs (sequence_kernels.h): layout changes between the
// interface's (B, T, 3C) / (B, T, C) and per-head fp32 (B, nh, T, hd) buffers (one thread
// per element), and the softmax forward and backward, causal or not (one warp per row,
// the orders of kernels/cpu/cpu_attention.cpp with the lane sums folded by a butterfly).
// The GEMMs themselves run in CudaOps (cuda_sequence_ops.cpp) through cuBLASLt.
#include <cmath>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/sequence_kernels.h"
#include "kernels/dispatch.h"

namespace noeira::cuda {

namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kRowsPerBlock = kBlock / 32;
constexpr size_t kAlign = 256;
size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(kFullMask, v, off);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, off));
  return v;
}

// Element e of dst (parts, B, nh, T, hd) <- src (B, T, parts * C) at the same (part, b, t,
// h, d); parts = 3 for qkv, 1 for a (B, T, C) tensor.
template <class T>
__global__ void to_heads_kernel(const T* src, float* dst, int parts, int64_t B, int64_t T_,
                                int64_t C, int64_t nh) {
  const int64_t hd = C / nh;
  const int64_t n = parts * B * T_ * C;
  for (int64_t e = global_thread(); e < n; e += grid_stride()) {
    const int64_t d = e % hd;
    int64_t rest = e / hd;
    const int64_t t = rest % T_;
    rest /= T_;
    const int64_t h = rest % nh;
    rest /= nh;
    const int64_t b = rest % B;
    const int64_t part = rest / B;
    dst[e] = load_f32(src[(b * T_ + t) * parts * C + part * C + h * hd + d]);
  }
}

// Element i of y (B, T, parts * C) <- src (parts, B, nh, T, hd), rounded once.
template <class T>
__global__ void from_heads_kernel(const float* src, T* y, int parts, int64_t B, int64_t T_,
                                  int64_t C, int64_t nh) {
  const int64_t hd = C / nh;
  const int64_t row = parts * C;
  const int64_t n = B * T_ * row;
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    const int64_t bt = i / row, j = i - bt * row;
    const int64_t b = bt / T_, t = bt - b * T_;
    const int64_t part = j / C, h = (j - part * C) / hd, d = j - part * C - h * hd;
    store_f32(y[i], src[((((part * B + b) * nh + h) * T_) + t) * hd + d]);
  }
}

// Row r = (b, h, i) sees keys j < end: end = i + 1 when causal, T otherwise (no mask).
__device__ __forceinline__ int64_t visible_keys(int64_t r, int64_t T_, bool causal) {
  return causal ? r % T_ + 1 : T_;
}

__global__ void attention_softmax_kernel(float* att, int64_t rows, int64_t T_, float scale,
                                         bool causal) {
  const int lane = threadIdx.x % 32;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
       r < rows; r += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
    float* a = att + r * T_;
    const int64_t end = visible_keys(r, T_, causal);  // keys 0 .. end - 1 are visible
    float mx = -INFINITY;
    // __fmul_rn: the scaled score is rounded before the subtraction (no FMA contraction),
    // as the twin's (q @ k^T) * scale and the CPU's loop round it.
    for (int64_t j = lane; j < end; j += 32) mx = fmaxf(mx, __fmul_rn(a[j], scale));
    mx = warp_max(mx);
    float sum = 0.0f;
    for (int64_t j = lane; j < end; j += 32) sum += expf(__fmul_rn(a[j], scale) - mx);
    sum = warp_sum(sum);
    for (int64_t j = lane; j < T_; j += 32)
      a[j] = j < end ? expf(__fmul_rn(a[j], scale) - mx) / sum : 0.0f;
  }
}

__global__ void attention_softmax_backward_kernel(const float* att, float* datt, int64_t rows,
                                                  int64_t T_, float scale, bool causal) {
  const int lane = threadIdx.x % 32;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
       r < rows; r += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
    const float* a = att + r * T_;
    float* g = datt + r * T_;
    const int64_t end = visible_keys(r, T_, causal);
    float dot = 0.0f;
    for (int64_t j = lane; j < end; j += 32) dot += g[j] * a[j];
    dot = warp_sum(dot);
    for (int64_t j = lane; j < T_; j += 32) g[j] = j < end ? (a[j] * (g[j] - dot)) * scale : 0.0f;
  }
}

unsigned row_blocks(int64_t rows) {
  const int64_t b = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  return static_cast<unsigned>(b < 1 ? 1 : (b > (1 << 20) ? (1 << 20) : b));
}

cudaError_t to_heads(cudaStream_t stream, const char* op, ConstView src, float* dst, int parts,
                     int64_t B, int64_t T, int64_t C, int64_t nh) {
  const int64_t n = parts * B * T * C;
  expect_elems(op, n, {src});
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {src}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    to_heads_kernel<<<grid_for(n), kBlock, 0, stream>>>(src.as<S>(), dst, parts, B, T, C, nh);
    return cudaGetLastError();
  });
}

cudaError_t from_heads(cudaStream_t stream, const char* op, const float* src, View y, int parts,
                       int64_t B, int64_t T, int64_t C, int64_t nh) {
  const int64_t n = parts * B * T * C;
  expect_elems(op, n, {y});
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {y}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    from_heads_kernel<<<grid_for(n), kBlock, 0, stream>>>(src, y.as<S>(), parts, B, T, C, nh);
    return cudaGetLastError();
  });
}

}  // namespace

size_t attention_workspace_bytes(int64_t B, int64_t T, int64_t C, int64_t nh) {
  (void)nh;
  const size_t btc = static_cast<size_t>(B * T * C) * sizeof(float);
  const size_t att = static_cast<size_t>(B * nh * T * T) * sizeof(float);
  return kAlign /* to align the base */ + 2 * align_up(3 * btc) + align_up(btc) +
         align_up(att);
}

AttentionWorkspace attention_workspace(void* workspace, int64_t B, int64_t T, int64_t C,
                                       int64_t nh) {
  (void)nh;
  auto base = reinterpret_cast<uintptr_t>(workspace);
  base = (base + kAlign - 1) / kAlign * kAlign;
  const size_t btc = static_cast<size_t>(B * T * C) * sizeof(float);
  AttentionWorkspace w;
  w.qkv_h = reinterpret_cast<float*>(base);
  w.o_h = reinterpret_cast<float*>(base + align_up(3 * btc));
  w.dqkv_h = reinterpret_cast<float*>(base + align_up(3 * btc) + align_up(btc));
  w.datt = reinterpret_cast<float*>(base + 2 * align_up(3 * btc) + align_up(btc));
  return w;
}

cudaError_t launch_qkv_to_heads(cudaStream_t stream, ConstView qkv, float* dst, int64_t B,
                                int64_t T, int64_t C, int64_t nh) {
  return to_heads(stream, "attention (qkv to heads)", qkv, dst, 3, B, T, C, nh);
}

cudaError_t launch_seq_to_heads(cudaStream_t stream, ConstView x, float* dst, int64_t B,
                                int64_t T, int64_t C, int64_t nh) {
  return to_heads(stream, "attention (dout to heads)", x, dst, 1, B, T, C, nh);
}

cudaError_t launch_heads_to_seq(cudaStream_t stream, const float* src, View y, int64_t B,
                                int64_t T, int64_t C, int64_t nh) {
  return from_heads(stream, "attention (heads to out)", src, y, 1, B, T, C, nh);
}

cudaError_t launch_heads_to_qkv(cudaStream_t stream, const float* src, View dqkv, int64_t B,
                                int64_t T, int64_t C, int64_t nh) {
  return from_heads(stream, "attention (heads to dqkv)", src, dqkv, 3, B, T, C, nh);
}

cudaError_t launch_attention_softmax(cudaStream_t stream, float* att, int64_t rows, int64_t T,
                                     float scale, bool causal) {
  if (rows == 0 || T == 0) return cudaSuccess;
  attention_softmax_kernel<<<row_blocks(rows), kBlock, 0, stream>>>(att, rows, T, scale, causal);
  return cudaGetLastError();
}

cudaError_t launch_attention_softmax_backward(cudaStream_t stream, const float* att, float* datt,
                                              int64_t rows, int64_t T, float scale, bool causal) {
  if (rows == 0 || T == 0) return cudaSuccess;
  attention_softmax_backward_kernel<<<row_blocks(rows), kBlock, 0, stream>>>(att, datt, rows, T,
                                                                             scale, causal);
  return cudaGetLastError();
}

}  // namespace noeira::cuda
