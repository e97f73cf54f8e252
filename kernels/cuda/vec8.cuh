// Element access for kernels written once for fp32 and bf16 storage (DESIGN.md rules 5-6).
// Scalar access is kernels/common/bf16.h's load_f32 / store_f32 (widen; round to nearest
// even). For bf16 buffers the kernels also move 8 elements (16 bytes) per access: a group
// g is elements 8g .. 8g+7, loaded as one uint4 (bf16) or two float4 (fp32), unpacked to
// fp32, and packed back with the same f32_to_bf16 rounding, so the vector and scalar
// paths give the same bits.
#pragma once
#include <cstdint>

#include "kernels/common/bf16.h"
#include "kernels/cuda/launch.cuh"

namespace noeira::cuda {

inline constexpr int kVec = 8;  // elements per vector access

// 8 fp32 values: 32 bytes, read and written as two 16-byte accesses.
struct Float8 {
  float4 lo, hi;
};
// 8 bf16 values: 16 bytes; element k sits in bits 16 * (k % 2) of word k / 2.
using Bf16x8 = uint4;

__device__ __forceinline__ void unpack8(const Float8& p, float (&v)[kVec]) {
  v[0] = p.lo.x, v[1] = p.lo.y, v[2] = p.lo.z, v[3] = p.lo.w;
  v[4] = p.hi.x, v[5] = p.hi.y, v[6] = p.hi.z, v[7] = p.hi.w;
}

__device__ __forceinline__ void unpack8(const Bf16x8& p, float (&v)[kVec]) {
  const uint32_t w[4] = {p.x, p.y, p.z, p.w};
  for (int k = 0; k < 4; ++k) {
    v[2 * k] = bf16_to_f32(static_cast<bf16_t>(w[k] & 0xffffu));
    v[2 * k + 1] = bf16_to_f32(static_cast<bf16_t>(w[k] >> 16));
  }
}

__device__ __forceinline__ void pack8(const float (&v)[kVec], Float8& p) {
  p.lo = make_float4(v[0], v[1], v[2], v[3]);
  p.hi = make_float4(v[4], v[5], v[6], v[7]);
}

__device__ __forceinline__ void pack8(const float (&v)[kVec], Bf16x8& p) {
  uint32_t w[4];
  for (int k = 0; k < 4; ++k)
    w[k] = static_cast<uint32_t>(f32_to_bf16(v[2 * k])) |
           (static_cast<uint32_t>(f32_to_bf16(v[2 * k + 1])) << 16);
  p = make_uint4(w[0], w[1], w[2], w[3]);
}

template <class T>
struct Vec8Of;
template <>
struct Vec8Of<float> {
  using type = Float8;
};
template <>
struct Vec8Of<bf16_t> {
  using type = Bf16x8;
};

// Group g of x widened to fp32; zeros when x is null (an optional operand).
template <class T>
__device__ __forceinline__ void load8(const T* x, int64_t g, float (&v)[kVec]) {
  if (!x) {
    for (int k = 0; k < kVec; ++k) v[k] = 0.0f;
    return;
  }
  unpack8(reinterpret_cast<const typename Vec8Of<T>::type*>(x)[g], v);
}

template <class T>
__device__ __forceinline__ void store8(T* y, int64_t g, const float (&v)[kVec]) {
  typename Vec8Of<T>::type p;
  pack8(v, p);
  reinterpret_cast<typename Vec8Of<T>::type*>(y)[g] = p;
}

// Element i of an optional operand widened to fp32 (0 when x is null).
template <class T>
__device__ __forceinline__ float load_or_zero(const T* x, int64_t i) {
  return x ? load_f32(x[i]) : 0.0f;
}

// Null pointers (absent operands) do not constrain the vector path.
inline bool aligned16_or_null(const void* p) { return !p || aligned16(p); }

// y[i] = f(a[i], b[i], c[i]) for i < n, fp32 math, In / Out storage; b and c may be null
// (read as 0). f is written once and serves both paths: with vec8 (all buffers 16-byte
// aligned) a thread handles whole groups of 8, then the last n % 8 elements one by one.
template <class In, class Out, class F>
__device__ __forceinline__ void map_elements(int64_t n, bool vec8, Out* y, F f, const In* a,
                                             const In* b = nullptr, const In* c = nullptr) {
  int64_t done = 0;
  if (vec8) {
    const int64_t groups = n / kVec;
    for (int64_t g = global_thread(); g < groups; g += grid_stride()) {
      float va[kVec], vb[kVec], vc[kVec], vy[kVec];
      load8(a, g, va);
      load8(b, g, vb);
      load8(c, g, vc);
      for (int k = 0; k < kVec; ++k) vy[k] = f(va[k], vb[k], vc[k]);
      store8(y, g, vy);
    }
    done = groups * kVec;
  }
  for (int64_t i = done + global_thread(); i < n; i += grid_stride())
    store_f32(y[i], f(load_f32(a[i]), load_or_zero(b, i), load_or_zero(c, i)));
}

// Threads a map_elements launch needs: one per group of 8 plus one per leftover element.
inline int64_t map_work(int64_t n, bool vec8) { return vec8 ? n / kVec + n % kVec : n; }

}  // namespace noeira::cuda
