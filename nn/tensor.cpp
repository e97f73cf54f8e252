#include "nn/tensor.h"

#include <cassert>

#include "kernels/common/saturating.h"

namespace noeira {

Shape::Shape(std::initializer_list<int64_t> d) {
  assert(d.size() <= kMaxDims);
  for (int64_t v : d) dims[static_cast<size_t>(rank++)] = v;
}

int64_t Shape::numel() const { return sat_mul(dims.data(), dims.data() + rank); }

Shape Shape::with_batch(int64_t rows) const {
  assert(rank < kMaxDims);
  Shape s;
  s.rank = rank + 1;
  s.dims[0] = rows;
  for (int i = 0; i < rank; ++i) s.dims[static_cast<size_t>(i + 1)] = dims[static_cast<size_t>(i)];
  return s;
}

int64_t Shape::row_elems() const {
  return rank < 1 ? 1 : sat_mul(dims.data() + 1, dims.data() + rank);
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
