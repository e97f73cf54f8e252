// BatchNorm's channel sums on the CPU (kernels/cpu/batchnorm.cpp): two sums per channel in
// an order fixed by the shape, and the chunks of channels the threads take.
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/common/image_shapes.h"
#include "kernels/common/norm.h"
#include "kernels/cpu/parallel_chunks.h"

namespace noeira::cpu_batchnorm {

// Two sums per channel, term(c, at) giving element at's pair, in double lane partials:
// value s of each (b, c) run into lane s % lanes, runs in b order, the lanes added in lane
// order at the end. One serial chain of double adds per sum was the cost of BatchNorm on
// the CPU (a quarter of a resnet20 step, at 7 GB/s); independent lanes vectorise. The
// order is a function of the shape alone.
//
// bf16 terms (FloatSums) are added in fp32 first: each block of kStage values of a run
// sums into kSpanLanes fp32 partials (lane s % kSpanLanes, kStage / kSpanLanes = 8 values
// each), which are then added to that lane's double partial. In double, bf16's passes were
// bound by the conversions and adds (two ports, 8 lanes each), not by memory. The terms
// are exact in fp32 (x^2 of a bf16 x, for 2^-63 <= |x| < 2^64: beyond, it underflows or
// overflows where double did not) or rounded once (dy * xhat), and a sum of 8 has an error
// of at most 7 * 2^-24 of the sum of the terms' magnitudes (with dy * xhat's rounding, 8 *
// 2^-24 against the double sums of before). resnet20 at one thread: normalisation
// 38.1-38.9 -> 32.3-33.0 ms per step.
//
// A thread takes a chunk of channels and walks the batch outside them: for each b the
// chunk's runs are one contiguous stretch, which the prefetchers follow (a channel at a
// time read runs of S values 4-8 KiB apart: at S = 64 every run was a miss). The
// per-channel order above is unchanged, so the chunking may follow the thread count.
constexpr int kLanes = 8;       // double lanes of double terms
constexpr int kSpanLanes = 32;  // fp32 and double lanes of FloatSums terms
constexpr int64_t kChunk = 16;  // channels per chunk, at most

// A term's pair in fp32 (bf16 storage), summed in spans before the double lanes.
struct FloatSums {
  float a, b;
};

struct Chunk {
  int64_t c0, c1;  // channels [c0, c1)
};

// Channel chunks of kChunk or fewer, at least `threads` of them when there are channels
// enough; f(chunk) runs on one thread.
template <class F>
void for_chunks(int threads, int64_t C, const F& f) {
  const int64_t size = chunk_width(C, threads, kChunk);
  const int64_t chunks = (C + size - 1) / size;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t k = 0; k < chunks; ++k) f(Chunk{k * size, k * size + size < C ? k * size + size : C});
}

// A term with nothing to stage (see chunk_sums).
struct NoStage {
  void operator()(int64_t, int64_t, int64_t) const {}
};
// Values per staged block and per fp32 span block: a multiple of both lane counts, so
// value s keeps lane s % lanes.
constexpr int64_t kStage = 256;
static_assert(kStage % kSpanLanes == 0 && kStage % kLanes == 0);

// out[c - c0] = channel c's two sums, for the chunk's channels. With a Stage, each run is
// walked in blocks of kStage values: stage(c, at, n) runs first on the block's n values
// from element at, then term(c, at + k) for each, in the same lanes and order (the same
// bits). A term whose values take more arithmetic than the double sums computes them there
// in a loop of its own (BatchNorm behind a ReLU: inline, GCC vectorised the whole term
// at 128 bits and spilled; bf16 ran at half the plain backward's speed).
template <class Term, class Stage = NoStage>
void chunk_sums(const NormShape& s, Chunk ch, const Term& term, ChannelSums* out,
                const Stage& stage = {}) {
  using Pair = decltype(term(int64_t{}, int64_t{}));
  constexpr bool kSpans = std::is_same_v<Pair, FloatSums>;
  constexpr int L = kSpans ? kSpanLanes : kLanes;
  const int64_t C = s.channels, S = s.spatial;
  double u[kChunk][L] = {}, v[kChunk][L] = {};
  constexpr bool kStaged = !std::is_same_v<Stage, NoStage>;
  const int64_t block = kStaged || kSpans ? kStage : S;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t c = ch.c0; c < ch.c1; ++c) {
      const int64_t at = (b * C + c) * S;
      // Values i0 .. i1 - 1 of the run into lanes au, av (value i into lane i % L), in the
      // terms' own type: double, or fp32 for a span.
      const auto add_values = [&](auto* __restrict au, auto* __restrict av, int64_t i0,
                                  int64_t i1) {
        int64_t i = i0;
        for (; i + L <= i1; i += L)
          for (int l = 0; l < L; ++l) {
            const Pair t = term(c, at + i + l);
            au[l] += t.a;
            av[l] += t.b;
          }
        for (; i < i1; ++i) {
          const Pair t = term(c, at + i);
          au[i % L] += t.a;
          av[i % L] += t.b;
        }
      };
      double lu[L], lv[L];  // kept in registers for the run where they fit (AVX-512)
      for (int l = 0; l < L; ++l) lu[l] = u[c - ch.c0][l], lv[l] = v[c - ch.c0][l];
      for (int64_t i0 = 0; i0 < S; i0 += block) {
        const int64_t i1 = i0 + block < S ? i0 + block : S;
        if constexpr (kStaged) stage(c, at + i0, i1 - i0);
        if constexpr (kSpans) {
          float fu[L] = {}, fv[L] = {};
          add_values(fu, fv, i0, i1);
          for (int l = 0; l < L; ++l) {
            lu[l] += static_cast<double>(fu[l]);
            lv[l] += static_cast<double>(fv[l]);
          }
        } else {
          add_values(lu, lv, i0, i1);
        }
      }
      for (int l = 0; l < L; ++l) u[c - ch.c0][l] = lu[l], v[c - ch.c0][l] = lv[l];
    }
  for (int64_t c = ch.c0; c < ch.c1; ++c) {
    ChannelSums r{0.0, 0.0};
    for (int l = 0; l < L; ++l) {
      r.a += u[c - ch.c0][l];
      r.b += v[c - ch.c0][l];
    }
    out[c - ch.c0] = r;
  }
}

}  // namespace noeira::cpu_batchnorm
