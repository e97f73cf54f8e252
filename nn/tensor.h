// Tensor views: a pointer, a dtype, a shape. A view never owns memory; every byte
// lives in an arena sized by the memory plan (nn/memory_plan.h). A Tensor passes to an
// op as the kernels' View / ConstView (kernels/view.h): the same pointer and dtype, its
// element count. DType is the kernels' (kernels/common/dtype.h).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "kernels/common/dtype.h"
#include "kernels/device.h"
#include "kernels/view.h"

namespace noeira {

// Up to 6 dimensions, row-major; dims[0] is the batch where there is one.
struct Shape {
  static constexpr int kMaxDims = 6;
  std::array<int64_t, kMaxDims> dims{};
  int rank = 0;

  Shape() = default;
  Shape(std::initializer_list<int64_t> d);
  int64_t operator[](int i) const { return dims[static_cast<size_t>(i)]; }
  int64_t& operator[](int i) { return dims[static_cast<size_t>(i)]; }
  // The element count; saturates at INT64_MAX where the product does not fit (a shape
  // from a recipe far too large: MemoryPlan::reserve then marks its plan overflowed).
  int64_t numel() const;
  // The shape with `rows` prepended, e.g. per-sample (784) -> batch (B, 784).
  Shape with_batch(int64_t rows) const;
  // Product of all dims but the first: the row length of a batch tensor (saturating too).
  int64_t row_elems() const;
  std::string str() const;
  bool operator==(const Shape& o) const;
};

struct Tensor {
  void* data = nullptr;
  Shape shape;
  DType dtype = DType::kF32;
  Device device = Device::kCpu;

  bool empty() const { return data == nullptr; }
  int64_t numel() const { return shape.numel(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  int64_t rows() const { return shape.rank > 0 ? shape[0] : 1; }
  float* f32() const { return static_cast<float*>(data); }
  int32_t* i32() const { return static_cast<int32_t*>(data); }
  uint16_t* bf16() const { return static_cast<uint16_t*>(data); }
  // The same memory with a different leading dimension (a batch of fewer rows).
  Tensor with_rows(int64_t rows) const;
  // As an op operand (empty when the tensor is): implicit, so modules pass tensors.
  operator View() const { return {data, dtype, numel()}; }       // NOLINT
  operator ConstView() const { return {data, dtype, numel()}; }  // NOLINT
};

}  // namespace noeira
