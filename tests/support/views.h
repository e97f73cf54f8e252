// Host vectors as op operands (kernels/view.h): `offset` elements in, the rest of the
// vector, or `n` elements.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/view.h"

namespace noeira::test {

template <class T>
View view_of(std::vector<T>& v, int64_t offset = 0, int64_t n = -1) {
  return {v.data() + offset, n >= 0 ? n : static_cast<int64_t>(v.size()) - offset};
}

template <class T>
ConstView view_of(const std::vector<T>& v, int64_t offset = 0, int64_t n = -1) {
  return {v.data() + offset, n >= 0 ? n : static_cast<int64_t>(v.size()) - offset};
}

}  // namespace noeira::test
