// Philox4x32-10 (Salmon et al., SC'11), the one RNG of the project (DESIGN.md rule 4).
// Every random number is a pure function of (seed, purpose, stream, index), so the CPU,
// the GPU and the PyTorch twin (reference/philox.py) draw the same values in any order.
// The layout of key and counter is documented in docs/rng.md; keep the three in step.
#pragma once
#include <cstdint>

#include "kernels/common/hd.h"

namespace noeira {

struct Philox4x32Out {
  uint32_t v[4];
};

namespace philox_detail {
constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;
constexpr uint32_t kWeyl1 = 0xBB67AE85u;

NOEIRA_HD void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}
}  // namespace philox_detail

// The raw block function: counter c[4], key k[2] -> 4 words. Checked against the
// Random123 known-answer vectors in tests/unit/test_philox.cpp.
NOEIRA_HD Philox4x32Out philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                      uint32_t k0, uint32_t k1) {
  using namespace philox_detail;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, c0, hi0, lo0);
    mulhilo(kMul1, c2, hi1, lo1);
    const uint32_t n0 = hi1 ^ c1 ^ k0;
    const uint32_t n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  return Philox4x32Out{{c0, c1, c2, c3}};
}

// What a draw is for; part of the counter so streams never overlap.
enum class RngPurpose : uint32_t {
  kInit = 1,         // parameter initialisation; stream = parameter index
  kShuffle = 2,      // per-epoch permutation; stream = epoch
  kDropout = 3,      // stream = step
  kBatchWindow = 4,  // autoregressive window starts; stream = step
  kAugment = 5,      // crop/flip; stream = epoch
  kSample = 6,       // text sampling (noeira-bench sample); stream = generated token index
};

// Key = seed, counter = (index, stream, purpose). `index` counts 4-word blocks.
NOEIRA_HD Philox4x32Out philox_block(uint64_t seed, RngPurpose purpose, uint32_t stream,
                                     uint32_t index) {
  return philox4x32_10(index, stream, static_cast<uint32_t>(purpose), 0u,
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// The i-th 32-bit word of a stream: word i%4 of block i/4.
NOEIRA_HD uint32_t philox_word(uint64_t seed, RngPurpose purpose, uint32_t stream, uint64_t i) {
  const Philox4x32Out b = philox_block(seed, purpose, stream, static_cast<uint32_t>(i >> 2));
  return b.v[i & 3u];
}

// Dropout of one element: Philox(seed, kDropout) with stream = the 0-based optimizer step
// and the fourth counter word = the layer's index, word i of that stream for element i.
// Kept when its unit float is >= p (so p = 0 keeps everything).
NOEIRA_HD uint32_t dropout_word(uint64_t seed, uint32_t step, uint32_t layer, uint64_t i) {
  const Philox4x32Out b =
      philox4x32_10(static_cast<uint32_t>(i >> 2), step, static_cast<uint32_t>(RngPurpose::kDropout),
                    layer, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return b.v[i & 3u];
}

// Top 24 bits -> float in [0, 1), exact in fp32 (and in numpy, bit for bit).
NOEIRA_HD float u32_to_unit_float(uint32_t x) {
  return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
}

NOEIRA_HD bool dropout_keep(uint64_t seed, uint32_t step, uint32_t layer, uint64_t i, float p) {
  return u32_to_unit_float(dropout_word(seed, step, layer, i)) >= p;
}

// The factor kept elements are multiplied by: 1 / (1 - p) in fp32, as torch's
// bernoulli(1 - p).div_(1 - p) mask holds it; dropped elements are multiplied by 0.
NOEIRA_HD float dropout_scale(float p) { return 1.0f / (1.0f - p); }

// Shuffle sort key of element i in an epoch: the permutation is the stable ascending
// sort of these keys (ties broken by i), identical on CPU, GPU and in the twin.
NOEIRA_HD uint64_t shuffle_key(uint64_t seed, uint32_t epoch, uint32_t i) {
  const Philox4x32Out b = philox_block(seed, RngPurpose::kShuffle, epoch, i);
  return (static_cast<uint64_t>(b.v[1]) << 32) | b.v[0];
}

}  // namespace noeira
