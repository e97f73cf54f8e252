// Finite-difference checks of a module's analytic backward on a ModuleRig: up to `samples`
// entries of the input (when it is fp32; token ids have no gradient) and of every parameter.
#pragma once
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "tests/support/module_rig.h"

namespace noeira::test {

inline void check_module(ModuleRig& rig, int samples = 24, float h = 1e-3f) {
  const Tensor dx = rig.backward();
  std::mt19937 pick(7);
  auto check = [&](float* values, const float* grads, int64_t n, const std::string& what) {
    for (int s = 0; s < samples; ++s) {
      const int64_t i = std::uniform_int_distribution<int64_t>(0, n - 1)(pick);
      const double numeric = rig.numeric(values + i, h);
      INFO(what << "[" << i << "] analytic " << grads[i] << " numeric " << numeric);
      CHECK(grad_close(grads[i], numeric));
    }
  };
  if (rig.input()) {
    REQUIRE_FALSE(dx.empty());
    std::vector<float> dx_copy(dx.f32(), dx.f32() + dx.numel());
    check(rig.input(), dx_copy.data(), rig.input_size(), rig.module().kind() + " d(input)");
  } else {
    CHECK(dx.empty());  // token ids have no gradient
  }
  for (const ParamInfo& p : rig.params().all()) {
    std::vector<float> g(rig.grad(p), rig.grad(p) + p.grad.shape.numel());
    check(rig.value(p), g.data(), p.value.shape.numel(), p.name);
  }
}

}  // namespace noeira::test
