// Views: how an op receives a buffer whose storage dtype can vary. A view is a pointer
// into an arena, the dtype of its elements and how many there are; it never owns
// memory. View is written by the op, ConstView only read (every View converts to one).
// A null `data` is an absent optional operand (a bias, a pre-activation, a gradient
// nobody asked for); its dtype and count are then ignored.
//
// Shapes travel next to the views as the op's own arguments (M, N; B, C; later NCHW
// descriptors), so a view carries only what every op needs: the element count, which the
// backends check against the op's shape, and the dtype, which they dispatch on once
// (kernels/dispatch.h).
#pragma once
#include <cassert>
#include <cstdint>

#include "kernels/common/dtype.h"

namespace noeira {

struct View {
  void* data = nullptr;
  DType dtype = DType::kF32;
  int64_t n = 0;  // elements

  constexpr View() = default;
  constexpr View(void* p, DType t, int64_t count) : data(p), dtype(t), n(count) {}
  // From a typed pointer (float*, bf16_t*, int32_t*): the dtype follows the type.
  template <class T>
  constexpr View(T* p, int64_t count) : data(p), dtype(DTypeOf<T>::value), n(count) {}

  bool empty() const { return data == nullptr; }
  // The elements as T, which must be the view's dtype (backends call this after their
  // dispatch has checked it).
  template <class T>
  T* as() const {
    assert(!data || dtype == DTypeOf<T>::value);
    return static_cast<T*>(data);
  }
};

struct ConstView {
  const void* data = nullptr;
  DType dtype = DType::kF32;
  int64_t n = 0;  // elements

  constexpr ConstView() = default;
  constexpr ConstView(const void* p, DType t, int64_t count) : data(p), dtype(t), n(count) {}
  template <class T>
  constexpr ConstView(const T* p, int64_t count) : data(p), dtype(DTypeOf<T>::value), n(count) {}
  constexpr ConstView(const View& v) : data(v.data), dtype(v.dtype), n(v.n) {}  // NOLINT

  bool empty() const { return data == nullptr; }
  template <class T>
  const T* as() const {
    assert(!data || dtype == DTypeOf<T>::value);
    return static_cast<const T*>(data);
  }
};

}  // namespace noeira
