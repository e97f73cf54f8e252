// CudaOps' LayerNorm over the last dimension of (N, C) (contracts: kernels/op_list.inc),
// fp32 or bf16 storage, fp32 element math and double sums (kernels/common/layernorm.h).
// No atomics; the orders:
//   forward   one warp per row. Lane l sums x[l], x[l + 32], ... in double (x and x * x)
//             in ascending order; the 32 lane sums are folded by a butterfly (xor 16, 8,
//             4, 2, 1), which leaves every lane the same bits; then layernorm.h's stats
//             and apply.
//   backward  dx: one warp per row, the two double row sums in the forward's lane order.
//             dgamma/dbeta: the rows are cut into column_sum_plan(N, kColumnSumMaxChunks)
//             chunks (kernels/common/column_sum.h); in a chunk, row lane l (of
//             kColumnSumLanes) sums rows begin + l, begin + l + kColumnSumLanes, ... in
//             double, the lanes are folded pairwise (l += l + h, h = 4, 2, 1), the chunk
//             partials go to the workspace, and a finishing kernel adds them in chunk
//             order and adds float(total) to dgamma / dbeta once.
//
// Workspace (layernorm_workspace_bytes): partials (chunks, C) of double2 (sum of
// dy * xhat, sum of dy), chunks = column_sum_plan(N, kColumnSumMaxChunks).chunks.
#include <cstdint>
#include <string>

#include "kernels/common/column_sum.h"
#include "kernels/common/layernorm.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/dispatch.h"

namespace noeira {

namespace cuda {

namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kRowsPerBlock = kBlock / 32;  // one warp per row

// Butterfly sum: every lane ends with the same bits (each pairwise add is commutative).
__device__ __forceinline__ double warp_sum(double v) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(kFullMask, v, off);
  return v;
}

template <class T>
__global__ void layernorm_forward_kernel(const T* x, const float* gamma, const float* beta,
                                         T* y, float* mean, float* rstd, int64_t N, int64_t C,
                                         float eps) {
  const int lane = threadIdx.x % 32;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32; r < N;
       r += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
    const T* xr = x + r * C;
    double sum = 0.0, sumsq = 0.0;
    for (int64_t c = lane; c < C; c += 32) {
      const double v = load_f32(xr[c]);
      sum += v;
      sumsq += v * v;
    }
    sum = warp_sum(sum);
    sumsq = warp_sum(sumsq);
    const LayerNormStats st = layernorm_stats(sum, sumsq, C, eps);
    if (lane == 0) {
      if (mean) mean[r] = st.mean;
      if (rstd) rstd[r] = st.rstd;
    }
    T* yr = y + r * C;
    for (int64_t c = lane; c < C; c += 32)
      store_f32(yr[c], layernorm_apply(load_f32(xr[c]), st.mean, st.rstd, gamma[c],
                                       beta ? beta[c] : 0.0f));
  }
}

template <class T>
__global__ void layernorm_dx_kernel(const T* dy, const T* x, const float* gamma,
                                    const float* mean, const float* rstd, T* dx,
                                    const T* dres, int64_t N, int64_t C) {
  const int lane = threadIdx.x % 32;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32; r < N;
       r += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
    const T* dyr = dy + r * C;
    const T* xr = x + r * C;
    const float mu = mean[r], rs = rstd[r];
    double sum_g = 0.0, sum_g_xhat = 0.0;
    for (int64_t c = lane; c < C; c += 32) {
      // __fmul_rn: g rounded as the CPU rounds it. A plain product would be contracted
      // into layernorm_dx's (g - mean_g) as one FMA, leaving a residue where g - mean_g
      // is 0 exactly (a one-column row: dx = 0, the GPU read 3e-6 at rstd 316).
      const float g = __fmul_rn(load_f32(dyr[c]), gamma[c]);
      const float xhat = layernorm_xhat(load_f32(xr[c]), mu, rs);
      sum_g += static_cast<double>(g);
      sum_g_xhat += static_cast<double>(g) * static_cast<double>(xhat);
    }
    sum_g = warp_sum(sum_g);
    sum_g_xhat = warp_sum(sum_g_xhat);
    const LayerNormBackStats s = layernorm_back_stats(sum_g, sum_g_xhat, C);
    T* dxr = dx + r * C;
    const T* rr = dres != nullptr ? dres + r * C : nullptr;  // the residual gradient's row
    for (int64_t c = lane; c < C; c += 32) {
      const float g = __fmul_rn(load_f32(dyr[c]), gamma[c]);
      const float xhat = layernorm_xhat(load_f32(xr[c]), mu, rs);
      const float d = layernorm_dx(g, xhat, rs, s);
      store_f32(dxr[c], rr != nullptr ? layernorm_dx_plus<T>(d, load_f32(rr[c])) : d);
    }
  }
}

constexpr int kLnCols = 32;  // columns per block of the parameter-gradient partials

// Block (column tile, chunk): 32 columns (threadIdx.x) x kColumnSumLanes row lanes
// (threadIdx.y); partials[chunk * C + c] = (sum dy * xhat, sum dy) over the chunk's rows.
template <class T>
__global__ void layernorm_param_partials_kernel(const T* dy, const T* x, const float* mean,
                                                const float* rstd, int64_t N, int64_t C,
                                                ColumnSumPlan plan, double2* partials) {
  __shared__ double sum_gx[kColumnSumLanes][kLnCols + 1];
  __shared__ double sum_g[kColumnSumLanes][kLnCols + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t k = blockIdx.y;
  for (int64_t tile = blockIdx.x; tile * kLnCols < C; tile += gridDim.x) {
    const int64_t c = tile * kLnCols + tx;
    double a = 0.0, b = 0.0;
    if (c < C) {
      const int64_t end = plan.end(k, N);
      for (int64_t i = plan.begin(k) + ty; i < end; i += kColumnSumLanes) {
        const double d = load_f32(dy[i * C + c]);
        a += d * static_cast<double>(layernorm_xhat(load_f32(x[i * C + c]), mean[i], rstd[i]));
        b += d;
      }
    }
    sum_gx[ty][tx] = a;
    sum_g[ty][tx] = b;
    __syncthreads();
    for (int h = kColumnSumLanes / 2; h > 0; h /= 2) {
      if (ty < h) {
        sum_gx[ty][tx] += sum_gx[ty + h][tx];
        sum_g[ty][tx] += sum_g[ty + h][tx];
      }
      __syncthreads();
    }
    if (ty == 0 && c < C) partials[k * C + c] = make_double2(sum_gx[0][tx], sum_g[0][tx]);
    __syncthreads();  // the next tile reuses the shared sums
  }
}

// dgamma[c] += float(p0 + p1 + ...), dbeta likewise (chunk order).
__global__ void layernorm_param_finish_kernel(const double2* partials, int64_t chunks,
                                              int64_t C, float* dgamma, float* dbeta) {
  for (int64_t c = global_thread(); c < C; c += grid_stride()) {
    double2 s = partials[c];
    for (int64_t k = 1; k < chunks; ++k) {
      const double2 p = partials[k * C + c];
      s.x += p.x;
      s.y += p.y;
    }
    if (dgamma) dgamma[c] += static_cast<float>(s.x);
    if (dbeta) dbeta[c] += static_cast<float>(s.y);
  }
}

unsigned row_blocks(int64_t N) {
  const int64_t b = (N + kRowsPerBlock - 1) / kRowsPerBlock;
  return static_cast<unsigned>(b < 1 ? 1 : (b > (1 << 20) ? (1 << 20) : b));
}

cudaError_t launch_layernorm_forward(cudaStream_t stream, ConstView x, const float* gamma,
                                     const float* beta, View y, float* mean, float* rstd,
                                     int64_t N, int64_t C, float eps) {
  const char* op = "layernorm_forward";
  expect_elems(op, N * C, {x, y});
  if (N == 0 || C == 0) return cudaSuccess;
  return dispatch_float(op, {x, y}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    layernorm_forward_kernel<<<row_blocks(N), kBlock, 0, stream>>>(
        x.as<S>(), gamma, beta, y.as<S>(), mean, rstd, N, C, eps);
    return cudaGetLastError();
  });
}

size_t layernorm_workspace_bytes(int64_t N, int64_t C) {
  if (N <= 0 || C <= 0) return 0;
  const size_t b = static_cast<size_t>(column_sum_plan(N, kColumnSumMaxChunks).chunks * C) *
                   sizeof(double2);
  return (b + 255u) / 256u * 256u;
}

cudaError_t launch_layernorm_backward(cudaStream_t stream, ConstView dy, ConstView x,
                                      const float* gamma, const float* mean, const float* rstd,
                                      View dx, ConstView dres, float* dgamma, float* dbeta,
                                      int64_t N, int64_t C, void* workspace) {
  const char* op = "layernorm_backward";
  expect_elems(op, N * C, {dy, x, dx, dres});
  if (N == 0 || C == 0) return cudaSuccess;
  const bool params = dgamma || dbeta;
  if (params && (!workspace || reinterpret_cast<uintptr_t>(workspace) % 16 != 0))
    return cudaErrorInvalidValue;
  return dispatch_float(op, {dy, x, dx, dres}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    if (!dx.empty())
      layernorm_dx_kernel<<<row_blocks(N), kBlock, 0, stream>>>(
          dy.as<S>(), x.as<S>(), gamma, mean, rstd, dx.as<S>(), dres.as<S>(), N, C);
    if (params) {
      const ColumnSumPlan plan = column_sum_plan(N, kColumnSumMaxChunks);
      auto* partials = static_cast<double2*>(workspace);
      const int64_t tiles = (C + kLnCols - 1) / kLnCols;
      const dim3 grid(static_cast<unsigned>(tiles < (1 << 20) ? tiles : (1 << 20)),
                      static_cast<unsigned>(plan.chunks));  // <= kColumnSumMaxChunks
      layernorm_param_partials_kernel<<<grid, dim3(kLnCols, kColumnSumLanes), 0, stream>>>(
          dy.as<S>(), x.as<S>(), mean, rstd, N, C, plan, partials);
      layernorm_param_finish_kernel<<<grid_for(C), kBlock, 0, stream>>>(partials, plan.chunks,
                                                                        C, dgamma, dbeta);
    }
    return cudaGetLastError();
  });
}

}  // namespace

}  // namespace cuda

void CudaOps::layernorm_forward(ConstView x, const float* gamma, const float* beta, View y,
                                float* mean, float* rstd, int64_t N, int64_t C, float eps) {
  OpScope scope(*state_, "layernorm_forward");
  if (N < 0 || C < 0) {
    fail("invalid shape N " + std::to_string(N) + ", C " + std::to_string(C));
    return;
  }
  check(cuda::launch_layernorm_forward(stream_, x, gamma, beta, y, mean, rstd, N, C, eps),
        "layernorm_forward_kernel");
}

size_t CudaOps::layernorm_workspace_bytes(int64_t N, int64_t C) const {
  return cuda::layernorm_workspace_bytes(N, C);
}

void CudaOps::layernorm_backward(ConstView dy, ConstView x, const float* gamma,
                                 const float* mean, const float* rstd, View dx, ConstView dres,
                                 float* dgamma, float* dbeta, int64_t N, int64_t C,
                                 void* workspace) {
  OpScope scope(*state_, "layernorm_backward");
  if (N < 0 || C < 0) {
    fail("invalid shape N " + std::to_string(N) + ", C " + std::to_string(C));
    return;
  }
  if (!dres.empty() && dx.empty()) {
    fail("a residual gradient (dres) without dx to add it into");
    return;
  }
  if (N * C > 0 && (dgamma || dbeta) &&
      (!workspace || reinterpret_cast<uintptr_t>(workspace) % 16 != 0)) {
    fail("no 16-byte aligned workspace; plan layernorm_workspace_bytes(N, C) bytes and pass "
         "them");
    return;
  }
  check(cuda::launch_layernorm_backward(stream_, dy, x, gamma, mean, rstd, dx, dres, dgamma,
                                        dbeta, N, C, workspace),
        "layernorm_backward kernels");
}

}  // namespace noeira
