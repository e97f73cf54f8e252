// Fused, flash-style attention (causal or not) for bf16 storage: design, orders and
// workspace in flash_attention.h. Plain fp32 FMAs on bf16 operands staged in shared memory
// (no tensor cores yet). Each owned row r of a block is served by the 4 consecutive
// threads 4r .. 4r + 3 ("quad" t = 0..3): for scores, quad t takes the other tile's rows t,
// t + 4, t + 8, ...; for the row's output vector, quad t takes the dimension pairs
// (2t + 8p, 2t + 8p + 1), p = 0 .. HD / 8 - 1. Reductions over the quad are butterflies
// (xor 1, then 2), which leave the same bits in all four lanes (fp32 addition and max are
// commutative), so every quantity has one order, fixed by T, hd, the tile sizes and
// `causal`.
#include <cmath>
#include <type_traits>

#include "kernels/cuda/flash_attention.h"

namespace noeira::cuda {

namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

constexpr int kBC = 32;  // rows of the looped-over tile

// Shared rows of HD bf16 padded by 2 (one 4-byte bank), read as 32-bit pairs.
template <int HD>
struct Tile {
  static constexpr int kLd = HD + 2;
};

__device__ __forceinline__ float lo_f32(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float hi_f32(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  v += __shfl_xor_sync(0xffffffffu, v, 2);
  return v;
}

__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
  return v;
}

// dst (rows, HD + 2) bf16 <- rows row0 .. row0 + rows - 1 of src (row stride `stride`,
// hd columns), zero outside [0, T) x [0, hd).
template <int HD>
__device__ __forceinline__ void load_tile(bf16_t* dst, const bf16_t* src, int64_t stride,
                                          int row0, int rows, int T, int hd) {
  for (int e = threadIdx.x; e < rows * HD; e += blockDim.x) {
    const int r = e / HD, d = e % HD, t = row0 + r;
    dst[r * Tile<HD>::kLd + d] = (t < T && d < hd) ? src[static_cast<int64_t>(t) * stride + d]
                                                   : bf16_t{0};
  }
}

// a . b over HD dimensions, fp32 FMAs in ascending d (a and b shared rows).
template <int HD>
__device__ __forceinline__ float dot_row(const bf16_t* a, const bf16_t* b) {
  const uint32_t* a2 = reinterpret_cast<const uint32_t*>(a);
  const uint32_t* b2 = reinterpret_cast<const uint32_t*>(b);
  float acc = 0.0f;
#pragma unroll
  for (int p = 0; p < HD / 2; ++p) {
    const uint32_t x = a2[p], y = b2[p];
    acc = fmaf(lo_f32(x), lo_f32(y), acc);
    acc = fmaf(hi_f32(x), hi_f32(y), acc);
  }
  return acc;
}

struct FlashArgs {
  const bf16_t* qkv;
  const bf16_t* dout;
  bf16_t* out;
  bf16_t* dqkv;
  const float* lse_in;
  float* lse_out;
  float* D;
  int T, C, nh, hd;
  float scale;
};

// The mask is a template argument (CAUSAL): each kernel is compiled for both cases, and
// neither pays a run-time test for the other. Without the mask every key of [0, T) is
// visible.

// Whether query i sees key j: both inside [0, T) (tiles are padded past T with zero rows,
// which must not count; when causal, j <= i < T implies it), and j <= i when causal.
template <bool CAUSAL>
__device__ __forceinline__ bool visible(int i, int j, int T) {
  return CAUSAL ? j <= i && i < T : i < T && j < T;
}

// The end of the key range a query tile [q0, q_end) visits: up to its last row (the
// diagonal) when causal, every key when not.
template <bool CAUSAL>
__device__ __forceinline__ int key_end(int q_end, int T) {
  return CAUSAL ? q_end : T;
}

// The first query tile (of kBC rows) a key tile starting at k0 meets: the one holding k0
// when causal (earlier queries see none of its keys), the first when not.
template <bool CAUSAL>
__device__ __forceinline__ int query_begin(int k0) {
  return CAUSAL ? k0 / kBC * kBC : 0;
}

// ---- forward ----

template <int HD, int BR, bool CAUSAL>
__global__ void __launch_bounds__(4 * BR) flash_forward_kernel(FlashArgs a) {
  constexpr int LD = Tile<HD>::kLd, PLD = kBC + 1, NC = kBC / 4, NP = HD / 8;
  __shared__ __align__(16) bf16_t sQ[BR * LD];
  __shared__ __align__(16) bf16_t sK[kBC * LD];
  __shared__ __align__(16) bf16_t sV[kBC * LD];
  __shared__ float sP[BR * PLD];
  const int T = a.T, C = a.C, hd = a.hd;
  const int r = threadIdx.x >> 2, quad = threadIdx.x & 3;
  const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * BR, i = q0 + r;
  const int64_t stride = 3 * static_cast<int64_t>(C);
  const bf16_t* base = a.qkv + static_cast<int64_t>(b) * T * stride + static_cast<int64_t>(h) * hd;
  load_tile<HD>(sQ, base, stride, q0, BR, T, hd);

  float m = -INFINITY, l = 0.0f, o[2 * NP];
#pragma unroll
  for (int k = 0; k < 2 * NP; ++k) o[k] = 0.0f;
  const int k_end = key_end<CAUSAL>(min(q0 + BR, T), T);
  for (int k0 = 0; k0 < k_end; k0 += kBC) {
    __syncthreads();  // the previous tiles are read
    load_tile<HD>(sK, base + C, stride, k0, kBC, T, hd);
    load_tile<HD>(sV, base + 2 * C, stride, k0, kBC, T, hd);
    __syncthreads();
    float s[NC];
    float mt = -INFINITY;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      const int jl = quad + 4 * c, j = k0 + jl;
      const float dot = dot_row<HD>(sQ + r * LD, sK + jl * LD);
      s[c] = visible<CAUSAL>(i, j, T) ? __fmul_rn(dot, a.scale) : -INFINITY;
      mt = fmaxf(mt, s[c]);
    }
    const float m_new = fmaxf(m, quad_max(mt));
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // a row with nothing visible yet
    const float alpha = expf(m - m_use);
    float psum = 0.0f;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      const float p = expf(s[c] - m_use);
      sP[r * PLD + quad + 4 * c] = p;
      psum += p;
    }
    l = l * alpha + quad_sum(psum);
    m = m_new;
    __syncwarp();  // the row's p, written by its quad, are visible to the quad
#pragma unroll
    for (int p = 0; p < NP; ++p) {
      const int d = 2 * quad + 8 * p;
      float o0 = o[2 * p] * alpha, o1 = o[2 * p + 1] * alpha;
      for (int jl = 0; jl < kBC; ++jl) {
        const float pj = sP[r * PLD + jl];
        const uint32_t w = *reinterpret_cast<const uint32_t*>(sV + jl * LD + d);
        o0 = fmaf(pj, lo_f32(w), o0);
        o1 = fmaf(pj, hi_f32(w), o1);
      }
      o[2 * p] = o0;
      o[2 * p + 1] = o1;
    }
  }
  if (i >= T) return;
  bf16_t* out = a.out + (static_cast<int64_t>(b) * T + i) * C + static_cast<int64_t>(h) * hd;
#pragma unroll
  for (int p = 0; p < NP; ++p) {
    const int d = 2 * quad + 8 * p;
    if (d < hd) store_f32(out[d], o[2 * p] / l);
    if (d + 1 < hd) store_f32(out[d + 1], o[2 * p + 1] / l);
  }
  if (quad == 0) a.lse_out[(static_cast<int64_t>(b) * a.nh + h) * T + i] = m + logf(l);
}

// ---- backward ----

// Kernel 1: D (pass 1) and dq (pass 2) for the block's query tile.
template <int HD, int BR, bool CAUSAL>
__global__ void __launch_bounds__(4 * BR) flash_backward_dq_kernel(FlashArgs a) {
  constexpr int LD = Tile<HD>::kLd, PLD = kBC + 1, NC = kBC / 4, NP = HD / 8;
  __shared__ __align__(16) bf16_t sQ[BR * LD];
  __shared__ __align__(16) bf16_t sO[BR * LD];  // dO
  __shared__ __align__(16) bf16_t sK[kBC * LD];
  __shared__ __align__(16) bf16_t sV[kBC * LD];
  __shared__ float sS[BR * PLD];
  const int T = a.T, C = a.C, hd = a.hd;
  const int r = threadIdx.x >> 2, quad = threadIdx.x & 3;
  const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * BR, i = q0 + r;
  const int64_t stride = 3 * static_cast<int64_t>(C);
  const bf16_t* base = a.qkv + static_cast<int64_t>(b) * T * stride + static_cast<int64_t>(h) * hd;
  const bf16_t* gbase =
      a.dout + static_cast<int64_t>(b) * T * C + static_cast<int64_t>(h) * hd;
  const int64_t row = (static_cast<int64_t>(b) * a.nh + h) * T;  // (b, h)'s first row
  load_tile<HD>(sQ, base, stride, q0, BR, T, hd);
  load_tile<HD>(sO, gbase, C, q0, BR, T, hd);
  const float lse = i < T ? a.lse_in[row + i] : 0.0f;
  const int k_end = key_end<CAUSAL>(min(q0 + BR, T), T);

  // P_ij and dP_ij for the quad's keys of the staged tile (0 where masked).
  auto probs = [&](int k0, float* pr, float* dp) {
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      const int jl = quad + 4 * c, j = k0 + jl;
      const float s = __fmul_rn(dot_row<HD>(sQ + r * LD, sK + jl * LD), a.scale);
      const bool live = visible<CAUSAL>(i, j, T);
      pr[c] = live ? expf(s - lse) : 0.0f;
      dp[c] = live ? dot_row<HD>(sO + r * LD, sV + jl * LD) : 0.0f;
    }
  };

  // Pass 1: D_i = sum_j P_ij dP_ij.
  float dsum = 0.0f;
  for (int k0 = 0; k0 < k_end; k0 += kBC) {
    __syncthreads();
    load_tile<HD>(sK, base + C, stride, k0, kBC, T, hd);
    load_tile<HD>(sV, base + 2 * C, stride, k0, kBC, T, hd);
    __syncthreads();
    float pr[NC], dp[NC];
    probs(k0, pr, dp);
#pragma unroll
    for (int c = 0; c < NC; ++c) dsum = fmaf(pr[c], dp[c], dsum);
  }
  const float D = quad_sum(dsum);
  if (quad == 0 && i < T) a.D[row + i] = D;

  // Pass 2: dq_i = sum_j dS_ij k_j.
  float dq[2 * NP];
#pragma unroll
  for (int k = 0; k < 2 * NP; ++k) dq[k] = 0.0f;
  for (int k0 = 0; k0 < k_end; k0 += kBC) {
    __syncthreads();
    load_tile<HD>(sK, base + C, stride, k0, kBC, T, hd);
    load_tile<HD>(sV, base + 2 * C, stride, k0, kBC, T, hd);
    __syncthreads();
    float pr[NC], dp[NC];
    probs(k0, pr, dp);
#pragma unroll
    for (int c = 0; c < NC; ++c) sS[r * PLD + quad + 4 * c] = (pr[c] * (dp[c] - D)) * a.scale;
    __syncwarp();
#pragma unroll
    for (int p = 0; p < NP; ++p) {
      const int d = 2 * quad + 8 * p;
      float g0 = dq[2 * p], g1 = dq[2 * p + 1];
      for (int jl = 0; jl < kBC; ++jl) {
        const float ds = sS[r * PLD + jl];
        const uint32_t w = *reinterpret_cast<const uint32_t*>(sK + jl * LD + d);
        g0 = fmaf(ds, lo_f32(w), g0);
        g1 = fmaf(ds, hi_f32(w), g1);
      }
      dq[2 * p] = g0;
      dq[2 * p + 1] = g1;
    }
  }
  if (i >= T) return;
  bf16_t* dst = a.dqkv + (static_cast<int64_t>(b) * T + i) * stride + static_cast<int64_t>(h) * hd;
#pragma unroll
  for (int p = 0; p < NP; ++p) {
    const int d = 2 * quad + 8 * p;
    if (d < hd) store_f32(dst[d], dq[2 * p]);
    if (d + 1 < hd) store_f32(dst[d + 1], dq[2 * p + 1]);
  }
}

// Kernel 2: dk and dv for the block's key tile (reads kernel 1's D).
template <int HD, int BR, bool CAUSAL>
__global__ void __launch_bounds__(4 * BR) flash_backward_dkdv_kernel(FlashArgs a) {
  constexpr int LD = Tile<HD>::kLd, PLD = kBC + 1, NC = kBC / 4, NP = HD / 8;
  __shared__ __align__(16) bf16_t sK[BR * LD];
  __shared__ __align__(16) bf16_t sV[BR * LD];
  __shared__ __align__(16) bf16_t sQ[kBC * LD];
  __shared__ __align__(16) bf16_t sO[kBC * LD];  // dO
  __shared__ float sP[BR * PLD];
  __shared__ float sS[BR * PLD];
  __shared__ float sL[kBC], sD[kBC];
  const int T = a.T, C = a.C, hd = a.hd;
  const int r = threadIdx.x >> 2, quad = threadIdx.x & 3;
  const int b = blockIdx.z, h = blockIdx.y, k0 = blockIdx.x * BR, j = k0 + r;
  const int64_t stride = 3 * static_cast<int64_t>(C);
  const bf16_t* base = a.qkv + static_cast<int64_t>(b) * T * stride + static_cast<int64_t>(h) * hd;
  const bf16_t* gbase =
      a.dout + static_cast<int64_t>(b) * T * C + static_cast<int64_t>(h) * hd;
  const int64_t row = (static_cast<int64_t>(b) * a.nh + h) * T;
  load_tile<HD>(sK, base + C, stride, k0, BR, T, hd);
  load_tile<HD>(sV, base + 2 * C, stride, k0, BR, T, hd);

  float dk[2 * NP], dv[2 * NP];
#pragma unroll
  for (int k = 0; k < 2 * NP; ++k) dk[k] = dv[k] = 0.0f;
  for (int q0 = query_begin<CAUSAL>(k0); q0 < T; q0 += kBC) {
    __syncthreads();
    load_tile<HD>(sQ, base, stride, q0, kBC, T, hd);
    load_tile<HD>(sO, gbase, C, q0, kBC, T, hd);
    for (int t = threadIdx.x; t < kBC; t += blockDim.x) {
      const bool in = q0 + t < T;
      sL[t] = in ? a.lse_in[row + q0 + t] : 0.0f;
      sD[t] = in ? a.D[row + q0 + t] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      const int il = quad + 4 * c, i = q0 + il;
      const bool live = visible<CAUSAL>(i, j, T);
      float p = 0.0f, ds = 0.0f;
      if (live) {
        const float s = __fmul_rn(dot_row<HD>(sQ + il * LD, sK + r * LD), a.scale);
        p = expf(s - sL[il]);
        const float dp = dot_row<HD>(sO + il * LD, sV + r * LD);
        ds = (p * (dp - sD[il])) * a.scale;
      }
      sP[r * PLD + il] = p;
      sS[r * PLD + il] = ds;
    }
    __syncwarp();
#pragma unroll
    for (int p = 0; p < NP; ++p) {
      const int d = 2 * quad + 8 * p;
      float k0v = dk[2 * p], k1v = dk[2 * p + 1], v0 = dv[2 * p], v1 = dv[2 * p + 1];
      for (int il = 0; il < kBC; ++il) {
        const float pi = sP[r * PLD + il], ds = sS[r * PLD + il];
        const uint32_t wq = *reinterpret_cast<const uint32_t*>(sQ + il * LD + d);
        const uint32_t wo = *reinterpret_cast<const uint32_t*>(sO + il * LD + d);
        v0 = fmaf(pi, lo_f32(wo), v0);
        v1 = fmaf(pi, hi_f32(wo), v1);
        k0v = fmaf(ds, lo_f32(wq), k0v);
        k1v = fmaf(ds, hi_f32(wq), k1v);
      }
      dk[2 * p] = k0v;
      dk[2 * p + 1] = k1v;
      dv[2 * p] = v0;
      dv[2 * p + 1] = v1;
    }
  }
  if (j >= T) return;
  bf16_t* dst = a.dqkv + (static_cast<int64_t>(b) * T + j) * stride + static_cast<int64_t>(h) * hd;
#pragma unroll
  for (int p = 0; p < NP; ++p) {
    const int d = 2 * quad + 8 * p;
    if (d < hd) {
      store_f32(dst[C + d], dk[2 * p]);
      store_f32(dst[2 * C + d], dv[2 * p]);
    }
    if (d + 1 < hd) {
      store_f32(dst[C + d + 1], dk[2 * p + 1]);
      store_f32(dst[2 * C + d + 1], dv[2 * p + 1]);
    }
  }
}

// Calls f(HD constant, BR constant) for hd's padded size.
template <class F>
cudaError_t with_head_dim(int64_t hd, F&& f) {
  if (hd <= 16) return f(std::integral_constant<int, 16>{}, std::integral_constant<int, 64>{});
  if (hd <= 32) return f(std::integral_constant<int, 32>{}, std::integral_constant<int, 64>{});
  if (hd <= 64) return f(std::integral_constant<int, 64>{}, std::integral_constant<int, 64>{});
  return f(std::integral_constant<int, 128>{}, std::integral_constant<int, 32>{});
}

// Calls f(HD constant, BR constant, CAUSAL constant).
template <class F>
cudaError_t with_shape(int64_t hd, bool causal, F&& f) {
  return with_head_dim(hd, [&](auto hd_c, auto br_c) {
    if (causal) return f(hd_c, br_c, std::true_type{});
    return f(hd_c, br_c, std::false_type{});
  });
}

bool launchable(int64_t B, int64_t T, int64_t C, int64_t nh) {
  const int64_t hd = nh > 0 ? C / nh : 0;
  return flash_attention_supported(hd) && C % nh == 0 && B <= 65535 && nh <= 65535 &&
         T <= INT32_MAX / 2 && 3 * C <= INT32_MAX;
}

FlashArgs args(int64_t T, int64_t C, int64_t nh, float scale) {
  FlashArgs a{};
  a.T = static_cast<int>(T);
  a.C = static_cast<int>(C);
  a.nh = static_cast<int>(nh);
  a.hd = static_cast<int>(C / nh);
  a.scale = scale;
  return a;
}

dim3 grid_of(int64_t T, int br, int64_t nh, int64_t B) {
  return dim3(static_cast<unsigned>((T + br - 1) / br), static_cast<unsigned>(nh),
              static_cast<unsigned>(B));
}

}  // namespace

size_t flash_attention_workspace_bytes(int64_t B, int64_t T, int64_t nh) {
  return kAlign + align_up(static_cast<size_t>(B * nh * T) * sizeof(float));
}

cudaError_t launch_flash_attention_forward(cudaStream_t stream, const bf16_t* qkv, bf16_t* out,
                                           float* lse, int64_t B, int64_t T, int64_t C,
                                           int64_t nh, float scale, bool causal) {
  if (B * T * C == 0) return cudaSuccess;
  if (!launchable(B, T, C, nh)) return cudaErrorInvalidValue;
  FlashArgs a = args(T, C, nh, scale);
  a.qkv = qkv;
  a.out = out;
  a.lse_out = lse;
  return with_shape(C / nh, causal, [&](auto hd_c, auto br_c, auto causal_c) {
    constexpr int HD = decltype(hd_c)::value, BR = decltype(br_c)::value;
    constexpr bool CAUSAL = decltype(causal_c)::value;
    flash_forward_kernel<HD, BR, CAUSAL><<<grid_of(T, BR, nh, B), 4 * BR, 0, stream>>>(a);
    return cudaGetLastError();
  });
}

cudaError_t launch_flash_attention_backward(cudaStream_t stream, const bf16_t* dout,
                                            const bf16_t* qkv, const float* lse, bf16_t* dqkv,
                                            int64_t B, int64_t T, int64_t C, int64_t nh,
                                            float scale, bool causal, void* workspace) {
  if (B * T * C == 0) return cudaSuccess;
  if (!launchable(B, T, C, nh) || !workspace) return cudaErrorInvalidValue;
  auto base = reinterpret_cast<uintptr_t>(workspace);
  base = (base + kAlign - 1) / kAlign * kAlign;
  FlashArgs a = args(T, C, nh, scale);
  a.qkv = qkv;
  a.dout = dout;
  a.dqkv = dqkv;
  a.lse_in = lse;
  a.D = reinterpret_cast<float*>(base);
  return with_shape(C / nh, causal, [&](auto hd_c, auto br_c, auto causal_c) {
    constexpr int HD = decltype(hd_c)::value, BR = decltype(br_c)::value;
    constexpr bool CAUSAL = decltype(causal_c)::value;
    flash_backward_dq_kernel<HD, BR, CAUSAL><<<grid_of(T, BR, nh, B), 4 * BR, 0, stream>>>(a);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    flash_backward_dkdv_kernel<HD, BR, CAUSAL><<<grid_of(T, BR, nh, B), 4 * BR, 0, stream>>>(a);
    return cudaGetLastError();
  });
}

}  // namespace noeira::cuda
