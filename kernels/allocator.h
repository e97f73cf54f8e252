// Where an arena's memory comes from (nn/memory_plan.h plans it, Arenas takes it): host
// memory here, cudaMalloc in kernels/cuda/cuda_allocator.h.
#pragma once
#include <cstddef>
#include <optional>
#include <string>

#include "kernels/common/error.h"
#include "kernels/device.h"

namespace noeira {

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Device device() const = 0;
  // Returns zero-filled memory, or an Error naming the size and the category.
  virtual Result<void*> allocate(size_t bytes, const char* what) = 0;
  virtual void release(void* p) = 0;
  // Bytes this allocator can still hand out, when known ("" in `where` then names the
  // source, e.g. "MemAvailable"): Arenas::allocate refuses a plan that does not fit
  // before allocating anything.
  virtual std::optional<size_t> available_bytes(std::string* where) const {
    (void)where;
    return std::nullopt;
  }
};

class HostAllocator final : public Allocator {
 public:
  Device device() const override { return Device::kCpu; }
  Result<void*> allocate(size_t bytes, const char* what) override;
  void release(void* p) override;
  // /proc/meminfo's MemAvailable, or less under a cgroup (v2) memory limit. Linux
  // over-commits: without this check a plan larger than memory is killed mid-fill.
  std::optional<size_t> available_bytes(std::string* where) const override;
};

}  // namespace noeira
