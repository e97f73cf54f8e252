// What the oneDNN kernels (onednn_matmul, onednn_conv) share: one CPU engine, one
// thread inside every oneDNN call, fixed slabs spread over OpenMP threads, and
// user-managed scratchpads.
//
// Why (DESIGN.md rule 3): oneDNN's own threading decides how it splits reductions, so
// its results change with the thread count (convolution backward-weights: different
// bits on 1, 2, 3, 4 threads). Debian's oneDNN 2.6 is built on OpenMP (libgomp). It
// sizes a primitive's blocking from omp_get_max_threads() when the primitive is created,
// and runs on that many threads unless called inside an active parallel region. So
// every call here creates and runs its primitive under OneThread, on a slab whose
// bounds do not depend on the thread count.
#pragma once
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "kernels/common/error.h"

namespace noeira::onednn {

// The process's CPU engine, created on first use.
const dnnl::engine& cpu_engine();

// Whether oneDNN's effective ISA here includes AMX (Sapphire and Emerald Rapids onwards).
// On one such CPU (Emerald Rapids) some of its kernels beat the choices made on AMD's
// AVX-512 cores: its AMX bf16 weight gradients beat ours (bf16_conv3x3_wgrad.h) and its
// direct fp32 kernels beat its Winograd ones on 32x32 images (onednn_conv.h).
bool runs_amx();
// Whether it includes AVX-512 (avx512_core: F, BW, DQ, VL), which its brgemm kernels need.
bool runs_avx512();

// Attributes for a primitive whose scratchpad the caller passes at execution
// (DNNL_ARG_SCRATCHPAD): then one primitive may run on several threads at once, each
// with its own scratchpad, and oneDNN allocates nothing for it.
dnnl::primitive_attr user_scratchpad_attr();

// One OpenMP thread for the calling thread while alive (restored after). Needed at
// creation (oneDNN reads omp_get_max_threads() then) and at execution: a region with a
// false `if` clause, or a call outside any region, is not an active parallel region,
// and there oneDNN would start its own threads.
class OneThread {
 public:
  OneThread() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OneThread() { omp_set_num_threads(saved_); }
  OneThread(const OneThread&) = delete;
  OneThread& operator=(const OneThread&) = delete;

 private:
  int saved_;
};

inline constexpr size_t kAlign = 64;  // scratchpads and partial buffers start on cache lines
inline size_t align_up(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
inline std::byte* align_up(void* p) {
  const auto u = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<std::byte*>((u + kAlign - 1) / kAlign * kAlign);
}

// Runs f(thread, first, count) on the slabs that cut [0, n) every `slab` items, spread
// over `threads` OpenMP threads. The cuts do not depend on `threads`, so neither do
// results built slab by slab. A oneDNN exception in any slab becomes the Error.
template <class F>
Status for_each_slab(int threads, int64_t n, int64_t slab, const F& f) {
  const int64_t slabs = (n + slab - 1) / slab;
  std::atomic<bool> failed{false};
  std::string message;  // written by the first failing slab only
#pragma omp parallel for num_threads(threads) schedule(static) if (slabs > 1)
  for (int64_t s = 0; s < slabs; ++s) {
    try {
      f(omp_get_thread_num(), s * slab, std::min(slab, n - s * slab));
    } catch (const dnnl::error& e) {
      if (!failed.exchange(true)) message = e.what();
    }
  }
  if (failed) return make_error(std::string("oneDNN failed: ") + message);
  return {};
}

// One stream per thread: a stream is not to be shared by concurrent executions.
std::vector<dnnl::stream> make_streams(int threads);

}  // namespace noeira::onednn
