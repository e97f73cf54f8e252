// Element types of stored data, shared by the ops interface (kernels/view.h) and nn's
// tensors (nn/tensor.h uses this DType). Math is always fp32 (DESIGN.md rule 6); a dtype
// only says how values sit in memory.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/common/bf16.h"

namespace noeira {

enum class DType : uint8_t { kF32, kBF16, kI32 };

constexpr size_t dtype_size(DType t) { return t == DType::kBF16 ? 2 : 4; }

constexpr const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kBF16: return "bf16";
    case DType::kI32: return "i32";
  }
  return "?";
}

// The dtype of a C++ storage type: float, bf16_t (bf16 bits) or int32_t.
template <class T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kF32;
};
template <>
struct DTypeOf<bf16_t> {
  static constexpr DType value = DType::kBF16;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kI32;
};

}  // namespace noeira
