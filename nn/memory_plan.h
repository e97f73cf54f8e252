// Plan, then allocate once (DESIGN.md rule 1). Building a model reserves every buffer
// in a MemoryPlan; Arenas then make exactly one allocation per category, and nothing
// allocates afterwards. A Slot is an offset into its category's arena.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "kernels/allocator.h"
#include "nn/error.h"
#include "nn/tensor.h"

namespace noeira {

enum class MemCategory : uint8_t {
  kParams,       // fp32 master parameters, contiguous (optimizers run over them flat)
  kParamCopies,  // bf16 copies of the parameters (BF16Policy only), half kParams' layout
  kGrads,        // same layout as kParams
  kOptimState,   // Adam m and v / SGD momentum, same layout as kParams each
  kBuffers,      // module state that is not trained: BatchNorm running statistics
  kActivations,  // forward outputs and backward gradients for one batch
  kWorkspace,    // scratch: GEMM workspace, shuffle keys
  kDataset,      // the resident training and test sets
  kScalars,      // step counters, loss accumulators, per-step loss history
  kCount
};
constexpr size_t kMemCategoryCount = static_cast<size_t>(MemCategory::kCount);
const char* mem_category_name(MemCategory c);

struct Slot {
  MemCategory category = MemCategory::kWorkspace;
  size_t offset = 0;
  size_t bytes = 0;
  Shape shape;
  DType dtype = DType::kF32;
  bool valid() const { return bytes > 0; }
};

class MemoryPlan {
 public:
  // Reserves a buffer; offsets are aligned to `align` bytes (16 keeps float4 access legal).
  // A buffer whose bytes, or whose category's total, do not fit size_t (a recipe's sizes
  // far too large) marks the plan overflowed: that category's size stays at SIZE_MAX and
  // Arenas::allocate refuses the plan, naming the buffer.
  Slot reserve(MemCategory c, const Shape& shape, DType dtype, size_t align = 256);
  // An untyped scratch buffer of at least `bytes` (a backend's workspace size query);
  // invalid (0 bytes) when `bytes` is 0.
  Slot reserve_bytes(MemCategory c, size_t bytes, size_t align = 256);
  size_t bytes(MemCategory c) const { return sizes_[static_cast<size_t>(c)]; }
  // Replaces a category's size with what is really allocated for it: a ZeRO-2/3 rank keeps
  // its slice and per-layer windows of the parameter or gradient arena (Arenas::set_window),
  // not the arena the slots were laid out in.
  void set_bytes(MemCategory c, size_t bytes) { sizes_[static_cast<size_t>(c)] = bytes; }
  size_t total_bytes() const;  // saturates at SIZE_MAX
  bool overflowed() const { return !overflow_.empty(); }
  // The first buffer that overflowed, e.g. "activations (2048, 4294967296, 4096) f32".
  const std::string& overflow() const { return overflow_; }
  // A table of bytes per category, for `train` to print.
  std::string describe() const;

 private:
  std::array<size_t, kMemCategoryCount> sizes_{};
  std::string overflow_;
};

class Arenas {
 public:
  Arenas() = default;
  Arenas(const Arenas&) = delete;
  Arenas& operator=(const Arenas&) = delete;
  Arenas(Arenas&&) noexcept;
  Arenas& operator=(Arenas&&) noexcept;
  ~Arenas();

  // One allocation per non-empty category of the plan.
  static Result<Arenas> allocate(const MemoryPlan& plan, Allocator& allocator);

  // Where offset 0 of category c's slots lies. Normally the allocation itself; under a
  // window, an address computed so that the window's slots land in it (not dereferenceable).
  void* base(MemCategory c) const { return reinterpret_cast<void*>(bases_[static_cast<size_t>(c)]); }
  void* ptr(const Slot& s) const {
    return reinterpret_cast<void*>(bases_[static_cast<size_t>(s.category)] + s.offset);
  }
  // The allocation of category c (what fill_zero or a capture's save may touch whole).
  void* memory(MemCategory c) const { return memory_[static_cast<size_t>(c)]; }
  // Slots of c at offsets >= `first` now point into `mem` (offset `first` at mem[0]): how a
  // ZeRO rank runs a layer on gathered parameters or a gradient bucket without a full arena.
  // Integer arithmetic, so the shifted base is never an out-of-range pointer.
  void set_window(MemCategory c, void* mem, size_t first) {
    bases_[static_cast<size_t>(c)] = reinterpret_cast<std::uintptr_t>(mem) - first;
  }
  void reset_window(MemCategory c) { set_window(c, memory(c), 0); }
  template <class T>
  T* as(const Slot& s) const { return static_cast<T*>(ptr(s)); }
  // A view of a slot; rows >= 0 replaces the leading dimension.
  Tensor view(const Slot& s, int64_t rows = -1) const;
  Device device() const { return device_; }

 private:
  void release_all();
  Allocator* allocator_ = nullptr;
  Device device_ = Device::kCpu;
  std::array<void*, kMemCategoryCount> memory_{};
  std::array<std::uintptr_t, kMemCategoryCount> bases_{};
};

}  // namespace noeira
