// The buffers of one micro-benchmark: planned in a MemoryPlan and allocated as one arena
// the first time Google Benchmark calls it (plan, then allocate once: DESIGN.md rule 1);
// later calls of the same benchmark (one per trial iteration count) reuse them. The cache
// holds only the running benchmark's buffers, so peak memory is one benchmark's.
#pragma once
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness/micro/micro_roofline.h"
#include "kernels/allocator.h"
#include "kernels/ops.h"
#include "nn/memory_plan.h"

namespace noeira {

enum class Fill : uint8_t {
  kZero,      // left as allocated (zero)
  kSigned,    // values in [-1, 1) (fp32 or bf16)
  kPositive,  // values in [0, 1) (e.g. Adam's second moment, a saved 1 / std)
  kLabels,    // int32 classes in [0, classes)
};

struct BufferSpec {
  Shape shape;
  DType dtype = DType::kF32;
  Fill fill = Fill::kZero;
  int64_t classes = 0;  // kLabels only
};

// An untyped scratch buffer of `bytes` (an op's workspace), zero-filled.
BufferSpec workspace_spec(size_t bytes);

class BufferCache {
 public:
  // The buffers of benchmark `key`, planned, allocated and filled at its first call
  // (Philox, purpose kInit, stream = the buffer's index: the same numbers every run).
  // `fresh` says whether they were just made (for set-up such as a forward pass).
  // Throws std::runtime_error when the arena cannot be allocated.
  const std::vector<void*>& get(const std::string& key, const std::vector<BufferSpec>& specs,
                                bool* fresh);

 private:
  HostAllocator allocator_;
  std::string key_;
  Arenas arenas_;
  std::vector<void*> ptrs_;
};

// What every benchmark of one `micro` run shares.
struct MicroShared {
  std::unique_ptr<Ops> ops;  // one CpuOps
  BufferCache cache;
  MicroRoofline roofline;
};

// The benchmark's buffers from the cache, or null after marking the benchmark errored.
const std::vector<void*>* micro_buffers(benchmark::State& state, MicroShared& sh,
                                        const std::string& key,
                                        const std::vector<BufferSpec>& specs, bool* fresh);

}  // namespace noeira
