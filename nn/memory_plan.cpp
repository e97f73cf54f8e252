#include "nn/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

namespace noeira {

const char* mem_category_name(MemCategory c) {
  switch (c) {
    case MemCategory::kParams: return "parameters";
    case MemCategory::kParamCopies: return "bf16 weights";
    case MemCategory::kGrads: return "gradients";
    case MemCategory::kOptimState: return "optimizer state";
    case MemCategory::kBuffers: return "buffers";
    case MemCategory::kActivations: return "activations";
    case MemCategory::kWorkspace: return "workspace";
    case MemCategory::kDataset: return "dataset";
    case MemCategory::kScalars: return "scalars";
    case MemCategory::kCount: break;
  }
  return "?";
}

Slot MemoryPlan::reserve(MemCategory c, const Shape& shape, DType dtype, size_t align) {
  constexpr size_t kMax = std::numeric_limits<size_t>::max();
  size_t& size = sizes_[static_cast<size_t>(c)];
  Slot s;
  s.category = c;
  s.shape = shape;
  s.dtype = dtype;
  const int64_t n = shape.numel();  // INT64_MAX: did not fit
  size_t aligned = 0, end = 0;
  const bool fits = n < std::numeric_limits<int64_t>::max() &&
                    !__builtin_mul_overflow(static_cast<size_t>(n), dtype_size(dtype), &s.bytes) &&
                    !__builtin_add_overflow(size, align - 1, &aligned) &&
                    !__builtin_add_overflow(aligned / align * align, s.bytes, &end);
  if (!fits) {
    if (overflow_.empty())
      overflow_ = std::string(mem_category_name(c)) + " " + shape.str() + " " + dtype_name(dtype);
    size = kMax;
    s.bytes = kMax;
    s.offset = 0;
    return s;
  }
  s.offset = aligned / align * align;
  size = end;
  return s;
}

Slot MemoryPlan::reserve_bytes(MemCategory c, size_t bytes, size_t align) {
  if (bytes == 0) return Slot{};
  // Whole 4-byte words; a count past int64 (a size query's SIZE_MAX) saturates, so the
  // plan is marked overflowed rather than given a wrapped, tiny slot.
  const size_t words = bytes / 4 + (bytes % 4 != 0 ? 1 : 0);
  const int64_t n = words > static_cast<size_t>(std::numeric_limits<int64_t>::max())
                        ? std::numeric_limits<int64_t>::max()
                        : static_cast<int64_t>(words);
  return reserve(c, Shape{n}, DType::kI32, align);
}

size_t MemoryPlan::total_bytes() const {
  size_t t = 0;
  for (size_t s : sizes_)
    if (__builtin_add_overflow(t, s, &t)) return std::numeric_limits<size_t>::max();
  return t;
}

std::string MemoryPlan::describe() const {
  std::string out = "memory plan (one allocation per category):\n";
  char line[128];
  for (size_t i = 0; i < kMemCategoryCount; ++i) {
    std::snprintf(line, sizeof line, "  %-16s %14zu bytes  %10.2f MiB\n",
                  mem_category_name(static_cast<MemCategory>(i)), sizes_[i],
                  static_cast<double>(sizes_[i]) / (1024.0 * 1024.0));
    out += line;
  }
  std::snprintf(line, sizeof line, "  %-16s %14zu bytes  %10.2f MiB\n", "total", total_bytes(),
                static_cast<double>(total_bytes()) / (1024.0 * 1024.0));
  return out + line;
}

Arenas::Arenas(Arenas&& o) noexcept { *this = std::move(o); }

Arenas& Arenas::operator=(Arenas&& o) noexcept {
  if (this != &o) {
    release_all();
    allocator_ = std::exchange(o.allocator_, nullptr);
    device_ = o.device_;
    memory_ = std::exchange(o.memory_, {});
    bases_ = std::exchange(o.bases_, {});
  }
  return *this;
}

Arenas::~Arenas() { release_all(); }

void Arenas::release_all() {
  if (!allocator_) return;
  for (void*& m : memory_)
    if (m) allocator_->release(std::exchange(m, nullptr));
  bases_ = {};
}

namespace {

std::string gib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

}  // namespace

Result<Arenas> Arenas::allocate(const MemoryPlan& plan, Allocator& allocator) {
  if (plan.overflowed())
    return make_error("the memory plan does not fit 64-bit sizes: with the buffer " +
                      plan.overflow() + " its category passes 2^64 bytes; a size in the "
                      "recipe (batch, width, layer or input sizes) is far too large");
  std::string where;
  if (const std::optional<size_t> avail = allocator.available_bytes(&where);
      avail && plan.total_bytes() > *avail) {
    // The three largest categories, for the fix.
    std::array<size_t, kMemCategoryCount> order{};
    for (size_t i = 0; i < kMemCategoryCount; ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t x, size_t y) { return plan.bytes(static_cast<MemCategory>(x)) >
                                               plan.bytes(static_cast<MemCategory>(y)); });
    std::string biggest;
    for (size_t k = 0; k < 3; ++k) {
      const auto c = static_cast<MemCategory>(order[k]);
      if (plan.bytes(c) == 0) break;
      biggest += std::string(k ? ", " : "") + mem_category_name(c) + " " + gib(plan.bytes(c));
    }
    return make_error("the memory plan needs " + gib(plan.total_bytes()) + " (" + biggest +
                      ") but the " + (allocator.device() == Device::kGpu ? "GPU" : "host") +
                      " has " + gib(*avail) + " free (" + where +
                      "); reduce the batch size (activations grow with it) or the data set");
  }
  Arenas a;
  a.allocator_ = &allocator;
  a.device_ = allocator.device();
  for (size_t i = 0; i < kMemCategoryCount; ++i) {
    const auto c = static_cast<MemCategory>(i);
    if (plan.bytes(c) == 0) continue;
    Result<void*> p = allocator.allocate(plan.bytes(c), mem_category_name(c));
    if (!p) return p.error();
    a.memory_[i] = *p;
    a.bases_[i] = reinterpret_cast<std::uintptr_t>(*p);
  }
  return a;
}

Tensor Arenas::view(const Slot& s, int64_t rows) const {
  Tensor t;
  t.data = ptr(s);
  t.shape = s.shape;
  if (rows >= 0 && t.shape.rank > 0) t.shape[0] = rows;
  t.dtype = s.dtype;
  t.device = device_;
  return t;
}

}  // namespace noeira
