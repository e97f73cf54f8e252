#include "harness/micro/micro_buffers.h"

#include <stdexcept>
#include <utility>

#include "kernels/common/bf16.h"
#include "kernels/common/philox.h"

namespace noeira {

namespace {

float draw(const BufferSpec& s, uint32_t stream, int64_t i) {
  const float u =
      u32_to_unit_float(philox_word(0, RngPurpose::kInit, stream, static_cast<uint64_t>(i)));
  return s.fill == Fill::kSigned ? 2.0f * u - 1.0f : u;
}

void fill_buffer(void* p, const BufferSpec& s, uint32_t stream) {
  const int64_t n = s.shape.numel();
  if (s.fill == Fill::kZero) return;
  if (s.fill == Fill::kLabels) {
    auto* y = static_cast<int32_t*>(p);
    for (int64_t i = 0; i < n; ++i)
      y[i] = static_cast<int32_t>(philox_word(0, RngPurpose::kInit, stream,
                                              static_cast<uint64_t>(i)) %
                                  static_cast<uint32_t>(s.classes));
    return;
  }
  if (s.dtype == DType::kBF16) {
    auto* x = static_cast<bf16_t*>(p);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) x[i] = f32_to_bf16(draw(s, stream, i));
    return;
  }
  auto* x = static_cast<float*>(p);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) x[i] = draw(s, stream, i);
}

}  // namespace

BufferSpec workspace_spec(size_t bytes) {
  // At least one element: a zero-byte workspace still gets a valid pointer.
  return {Shape{static_cast<int64_t>((bytes + 3) / 4) + 1}, DType::kI32, Fill::kZero};
}

const std::vector<void*>& BufferCache::get(const std::string& key,
                                           const std::vector<BufferSpec>& specs, bool* fresh) {
  *fresh = key != key_;
  if (!*fresh) return ptrs_;
  key_.clear();
  ptrs_.clear();
  arenas_ = Arenas();  // release the previous benchmark's memory first
  MemoryPlan plan;
  std::vector<Slot> slots;
  for (const BufferSpec& s : specs)
    slots.push_back(plan.reserve(MemCategory::kWorkspace, s.shape, s.dtype));
  Result<Arenas> a = Arenas::allocate(plan, allocator_);
  if (!a) throw std::runtime_error(a.error().message);
  arenas_ = std::move(*a);
  for (size_t i = 0; i < specs.size(); ++i) {
    ptrs_.push_back(arenas_.ptr(slots[i]));
    fill_buffer(ptrs_.back(), specs[i], static_cast<uint32_t>(i));
  }
  key_ = key;
  return ptrs_;
}

const std::vector<void*>* micro_buffers(benchmark::State& state, MicroShared& sh,
                                        const std::string& key,
                                        const std::vector<BufferSpec>& specs, bool* fresh) {
  try {
    return &sh.cache.get(key, specs, fresh);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return nullptr;
  }
}

}  // namespace noeira
