// bfloat16 storage and rounding, written once for both backends (DESIGN.md rules 5-6).
// A bf16 value is the top 16 bits of an fp32; rounding is round-to-nearest-even, NaN
// stays NaN (quiet), infinities stay infinite.
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/common/hd.h"

namespace noeira {

using bf16_t = uint16_t;  // bf16 bits in memory; math is always done in fp32

NOEIRA_HD uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

NOEIRA_HD float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

NOEIRA_HD bf16_t f32_to_bf16(float f) {
  const uint32_t u = f32_bits(f);
  // Round to nearest, ties to even: add 0x7fff plus the lowest kept bit, then truncate; a
  // NaN keeps its top half with the quiet bit set. A select, not a branch, and before the
  // one shift: loops over it vectorise to about half the instructions of selecting between
  // two shifted halves (the same results for all 2^32 inputs, checked).
  const uint32_t v =
      (u & 0x7fffffffu) > 0x7f800000u ? (u | 0x00400000u) : u + 0x7fffu + ((u >> 16) & 1u);
  return static_cast<bf16_t>(v >> 16);
}

NOEIRA_HD float bf16_to_f32(bf16_t b) { return f32_from_bits(static_cast<uint32_t>(b) << 16); }

// Rounds an fp32 value to the nearest bf16 value, kept as fp32.
NOEIRA_HD float round_to_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

}  // namespace noeira

namespace noeira {

// Element access for kernels written once for fp32 and bf16 storage: loads widen to
// fp32, stores round (bf16) or not (fp32).
NOEIRA_HD float load_f32(float x) { return x; }
NOEIRA_HD float load_f32(bf16_t x) { return bf16_to_f32(x); }
NOEIRA_HD void store_f32(float& dst, float v) { dst = v; }
NOEIRA_HD void store_f32(bf16_t& dst, float v) { dst = f32_to_bf16(v); }

// store_f32 for a v that is exactly a value of the storage type (or a NaN): ReLU's results
// and their gradients (x, 0, dy * 1, dy * 0). Rounding such a bf16 value drops only zero
// bits, so its top half, with a NaN's quiet bit set (the compiler may fold dy * 1 to dy,
// keeping a signalling NaN), has store_f32's bits with fewer instructions (ReLU was a
// compute-bound 26 GB/s in bf16 against 60-90 in fp32). tests/unit/test_bf16.cpp checks
// every bf16 pattern against store_f32.
NOEIRA_HD void store_exact(float& dst, float v) { dst = v; }
NOEIRA_HD void store_exact(bf16_t& dst, float v) {
  const uint32_t u = f32_bits(v);
  dst = static_cast<bf16_t>((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x0040u : u >> 16);
}

// v rounded to the storage type T as a store and a load would: the identity for fp32.
template <class T>
NOEIRA_HD float stored_as(float v) {
  T t;
  store_f32(t, v);
  return load_f32(t);
}

// Whether v stores as a positive value of T (stored_as<T>(v) > 0), without the rounding
// (BatchNorm's recomputed ReLU mask: a bf16 rounding per element was most of its cost).
// fp32: v > 0. bf16: f32_to_bf16 takes a positive v to zero exactly when its bits are at
// most 0x8000, v <= 2^-134 (half the smallest subnormal, a tie to even); so v > 2^-134. A
// NaN gives false both ways.
template <class T>
NOEIRA_HD bool stores_positive(float v) {
  if constexpr (sizeof(T) == sizeof(bf16_t)) return v > 0x1p-134f;
  else return v > 0.0f;
}

}  // namespace noeira
