#include "nn/tensor.h"

#include <cassert>
#include <limits>

namespace noeira {

Shape::Shape(std::initializer_list<int64_t> d) {
  assert(d.size() <= kMaxDims);
  for (int64_t v : d) dims[static_cast<size_t>(rank++)] = v;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i)
    if (__builtin_mul_overflow(n, dims[static_cast<size_t>(i)], &n))
      return std::numeric_limits<int64_t>::max();
  return n;
}

Shape Shape::with_batch(int64_t rows) const {
  assert(rank < kMaxDims);
  Shape s;
  s.rank = rank + 1;
  s.dims[0] = rows;
  for (int i = 0; i < rank; ++i) s.dims[static_cast<size_t>(i + 1)] = dims[static_cast<size_t>(i)];
  return s;
}

int64_t Shape::row_elems() const {
  int64_t n = 1;
  for (int i = 1; i < rank; ++i)
    if (__builtin_mul_overflow(n, dims[static_cast<size_t>(i)], &n))
      return std::numeric_limits<int64_t>::max();
  return n;
}

std::string Shape::str() const {
  std::string s = "(";
  for (int i = 0; i < rank; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[static_cast<size_t>(i)]);
  }
  return s + ")";
}

bool Shape::operator==(const Shape& o) const {
  if (rank != o.rank) return false;
  for (int i = 0; i < rank; ++i)
    if (dims[static_cast<size_t>(i)] != o.dims[static_cast<size_t>(i)]) return false;
  return true;
}

Tensor Tensor::with_rows(int64_t r) const {
  Tensor t = *this;
  t.shape[0] = r;
  return t;
}

}  // namespace noeira
