// The bf16 CUDA tests' bound against the CPU (tests/gpu/test_cuda_bf16*.cpp): exact, or
// where a transcendental function differs between host and device (GELU, exp) close:
// normwise relative error < 1e-2, no NaN, and at least 99% of the elements with the same
// bits.
#pragma once
#include <catch2/catch.hpp>

#include <vector>

#include "tests/gpu/gpu_rig.h"

namespace noeira::test {

inline void check_bf16_match(const std::vector<bf16_t>& got, const std::vector<bf16_t>& want,
                             bool transcendental) {
  REQUIRE(got.size() == want.size());
  if (!transcendental) {
    CHECK(got == want);
    return;
  }
  const std::vector<float> g = to_f32(got), w = to_f32(want);
  CHECK_FALSE(has_nan(g));
  CHECK(rel_error(g, w) < 1e-2);
  if (got.size() >= 1000) CHECK(same_bits_fraction(got, want) >= 0.99);
}

}  // namespace noeira::test
