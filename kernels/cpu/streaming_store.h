// Streaming (non-temporal) stores for outputs far larger than a core's caches: the bytes
// go to memory without first being read into the cache (a store that misses reads its
// line first), and they do not push out what the cache holds. Only where the output is not
// read again soon, so only the speed changes, never a bit. One thread's streamed stores
// are ordered before anything it stores after stream_fence(); an OpenMP barrier then
// makes them visible to the other threads.
//
// Measured on an Intel Xeon (family 6 model 167, 2 MiB L2 per core, ~17.6 GB/s from
// memory on one core), resnet20's fp32 step, alternated with NOEIRA_STREAM_STORES=0: the
// convolutions' nchw outputs, BatchNorm's y and dx, and the element-wise outputs streamed
// took one thread's step 279-282 -> 264-265 ms (convolutions 205-208 -> 197, BatchNorm 52
// -> 46) and two threads' 145-150 -> 137-140. Streaming the 2 MiB outputs as well as the
// 4 and 8 MiB ones saved another 1-2 ms at one thread.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace noeira {

// Outputs of at least this many bytes in all are streamed: a large L2, which what one op
// reads and writes then overflows, so that its output could not wait in the cache for the
// next op anyway. A size of the shape alone, not of the machine's caches.
inline constexpr size_t kStreamBytes = size_t{2} << 20;

// Whether our loops stream here: a build with AVX-512 (x86-64-v4) and
// NOEIRA_STREAM_STORES not "0" (read once; A/B timing; recorded in results files as
// build.stream_stores, with a warning when switched off).
bool streaming_stores_available();
// Whether an output of `bytes` in all is streamed: bytes >= kStreamBytes where available.
bool streams(size_t bytes);

// dst[0, bytes) = src[0, bytes), the two not overlapping: 64-byte streaming stores where dst
// is 64-byte aligned, plain copies for the unaligned head and the tail.
void stream_copy(void* dst, const void* src, size_t bytes);
// Orders this thread's streamed stores before its later ones (sfence).
void stream_fence();

// Values per staged block of write_staged: 4 KiB of fp32, in L1.
inline constexpr int64_t kStageElems = 1024;

// Writes dst[0, n) with f(i0, k, out), which stores values i0 .. i0 + k - 1 at out[0, k):
// with `stream`, block by block into a staged buffer that is then streamed to dst + i0;
// otherwise straight into dst (one call). The caller fences once after its last block.
template <class T, class F>
void write_staged(T* dst, int64_t n, bool stream, const F& f) {
  if (!stream) {
    f(int64_t{0}, n, dst);
    return;
  }
  alignas(64) T staged[kStageElems];
  for (int64_t i0 = 0; i0 < n; i0 += kStageElems) {
    const int64_t k = std::min(kStageElems, n - i0);
    f(i0, k, static_cast<T*>(staged));
    stream_copy(dst + i0, staged, static_cast<size_t>(k) * sizeof(T));
  }
}

// dst[0, n) written block by block over `threads` OpenMP threads: f(i0, k, out) as in
// write_staged, each block of kStageElems values on one thread, streamed when
// streams(n * sizeof(T)). For element-wise ops, whose bits do not depend on the blocks.
template <class T, class F>
void write_blocks(int threads, T* dst, int64_t n, const F& f) {
  const bool stream = streams(static_cast<size_t>(n) * sizeof(T));
  const int64_t blocks = (n + kStageElems - 1) / kStageElems;
#pragma omp parallel num_threads(threads) if (blocks > 1)
  {
#pragma omp for schedule(static) nowait
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t i0 = b * kStageElems;
      write_staged(dst + i0, std::min(kStageElems, n - i0), stream,
                   [&](int64_t j0, int64_t k, T* out) { f(i0 + j0, k, out); });
    }
    if (stream) stream_fence();
  }
}

}  // namespace noeira
