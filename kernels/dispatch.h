// The one place a storage dtype becomes a template argument. A backend's op calls one of
// these once, in the backend's own files, and runs a kernel written once as a template
// over the storage type (fp32 math whatever the storage; kernels/common/bf16.h's
// load_f32 / store_f32). The checks here are the interface's contract: a call that
// breaks it (mixed dtypes, a dtype the op does not take, a view of the wrong size) is a
// programming error, so it stops the process with a line naming the op.
//
// Plain C++17: the CUDA backend dispatches in its .cu launchers.
#pragma once
#include <cstdint>
#include <initializer_list>

#include "kernels/view.h"

namespace noeira {

// A storage type as a value, for generic lambdas: f(StorageTag<float>{}).
template <class T>
struct StorageTag {
  using type = T;
};

// kernels/dispatch.cpp: print "noeira: internal error: <op>: ..." and abort.
[[noreturn]] void unsupported_dtype(const char* op, DType dtype);
[[noreturn]] void unsupported_dtypes(const char* op, DType from, DType to);
[[noreturn]] void mixed_dtypes(const char* op, DType first, DType other);
[[noreturn]] void wrong_elems(const char* op, int64_t expected, int64_t got);

// Every present view holds `dtype`.
inline void expect_dtype(const char* op, DType dtype, std::initializer_list<ConstView> views) {
  for (const ConstView& v : views)
    if (!v.empty() && v.dtype != dtype) mixed_dtypes(op, dtype, v.dtype);
}

// Every present view holds n elements.
inline void expect_elems(const char* op, int64_t n, std::initializer_list<ConstView> views) {
  for (const ConstView& v : views)
    if (!v.empty() && v.n != n) wrong_elems(op, n, v.n);
}

// f(StorageTag<T>{}) with T = float or bf16_t: the dtype of `views`' first view (which
// must be present); every other present view must hold the same dtype.
template <class F>
decltype(auto) dispatch_float(const char* op, std::initializer_list<ConstView> views, F&& f) {
  const DType dtype = views.begin()->dtype;
  expect_dtype(op, dtype, views);
  if (dtype == DType::kBF16) return f(StorageTag<bf16_t>{});
  if (dtype != DType::kF32) unsupported_dtype(op, dtype);
  return f(StorageTag<float>{});
}

// f(StorageTag<S>{}, StorageTag<D>{}) for a conversion between floating storage types:
// S = from's type, D = to's type, each float or bf16_t.
template <class F>
decltype(auto) dispatch_float_pair(const char* op, DType from, DType to, F&& f) {
  const bool ok = (from == DType::kF32 || from == DType::kBF16) &&
                  (to == DType::kF32 || to == DType::kBF16);
  if (!ok) unsupported_dtypes(op, from, to);
  if (from == DType::kF32) {
    if (to == DType::kBF16) return f(StorageTag<float>{}, StorageTag<bf16_t>{});
    return f(StorageTag<float>{}, StorageTag<float>{});
  }
  if (to == DType::kBF16) return f(StorageTag<bf16_t>{}, StorageTag<bf16_t>{});
  return f(StorageTag<bf16_t>{}, StorageTag<float>{});
}

}  // namespace noeira
