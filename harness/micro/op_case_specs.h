// What harness/micro/op_cases*.cpp share to write a case: the list of its buffers, typed
// access to them in the call, and the pieces of its name.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/micro/op_cases.h"

namespace noeira::op_case::specs {

using Ptrs = std::vector<void*>;

// The buffers of a case, added in order; absent optional operands get index -1.
struct Specs {
  std::vector<BufferSpec> v;
  int add(const Shape& shape, DType dt, Fill fill) {
    v.push_back({shape, dt, fill});
    return static_cast<int>(v.size()) - 1;
  }
  int add_if(bool present, const Shape& shape, DType dt, Fill fill) {
    return present ? add(shape, dt, fill) : -1;
  }
  int workspace(size_t bytes) {
    v.push_back(workspace_spec(bytes));
    return static_cast<int>(v.size()) - 1;
  }
};

inline void* at(const Ptrs& p, int i) { return i < 0 ? nullptr : p[static_cast<size_t>(i)]; }
inline float* f32(const Ptrs& p, int i) { return static_cast<float*>(at(p, i)); }
inline View view(const Ptrs& p, int i, DType dt, int64_t n) {
  return i < 0 ? View{} : View{at(p, i), dt, n};
}

inline double bytes(int64_t n, DType dt) {
  return static_cast<double>(n) * static_cast<double>(dtype_size(dt));
}
inline std::string dts(DType dt) { return dtype_name(dt); }
inline std::string act_name(Act a) {
  return a == Act::kGELU ? "gelu" : a == Act::kReLU ? "relu" : "none";
}
inline std::string no_dx(bool dx) { return dx ? "" : "/no_dx"; }

}  // namespace noeira::op_case::specs
