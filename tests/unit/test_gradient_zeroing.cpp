// Which bytes of the gradient arena the step zeroes (nn/training/gradient_zeroing.h): all
// of them, except the gradients their one op overwrites, from kSkipMinBytes up, and only
// where the sync keeps every gradient in place.
#include <catch2/catch.hpp>

#include "nn/memory_plan.h"
#include "nn/params.h"
#include "nn/training/gradient_zeroing.h"

using namespace noeira;

namespace {

// fc1 (512 x 784) and fc2 (10 x 512) with biases, as mlp's first and last layers.
struct TwoLayers {
  MemoryPlan plan;
  ParamRegistry params;
  ParamRef w1, b1, w2, b2;
  TwoLayers() {
    w1 = params.add(plan, "fc1.weight", Shape{512, 784}, ParamRole::kWeight, 784, 512);
    b1 = params.add(plan, "fc1.bias", Shape{512}, ParamRole::kBias, 784, 512);
    w2 = params.add(plan, "fc2.weight", Shape{10, 512}, ParamRole::kWeight, 512, 10);
    b2 = params.add(plan, "fc2.bias", Shape{10}, ParamRole::kBias, 512, 10);
  }
  size_t bytes() const { return plan.bytes(MemCategory::kGrads); }
};

}  // namespace

TEST_CASE("gradient zeroing: the whole arena while no gradient is overwritten", "[trainer]") {
  TwoLayers m;
  CHECK(gradient_zero_ranges(m.params, m.bytes(), true) == std::vector<ByteRange>{{0, m.bytes()}});
}

TEST_CASE("gradient zeroing: a large overwritten gradient is left out, a small one is not",
          "[trainer]") {
  TwoLayers m;
  m.params.mark_grad_overwritten(m.w1);  // 1.6 MB
  m.params.mark_grad_overwritten(m.w2);  // 20 KB: under kSkipMinBytes, zeroed anyway
  const size_t after_w1 = m.w1.grad.offset + m.w1.grad.bytes;
  REQUIRE(m.w1.grad.offset == 0);
  CHECK(gradient_zero_ranges(m.params, m.bytes(), true) ==
        std::vector<ByteRange>{{after_w1, m.bytes() - after_w1}});
  // Where the sync moves or windows the gradients (ZeRO), all of it, as before.
  CHECK(gradient_zero_ranges(m.params, m.bytes(), false) ==
        std::vector<ByteRange>{{0, m.bytes()}});
}

TEST_CASE("gradient zeroing: runs between and after the overwritten gradients, padding "
          "included", "[trainer]") {
  MemoryPlan plan;
  ParamRegistry params;
  const ParamRef b0 = params.add(plan, "a.bias", Shape{100}, ParamRole::kBias, 1, 100);
  const ParamRef w = params.add(plan, "a.weight", Shape{256, 256}, ParamRole::kWeight, 256, 256);
  const ParamRef b1 = params.add(plan, "b.bias", Shape{3}, ParamRole::kBias, 1, 3);
  params.mark_grad_overwritten(w);
  const size_t arena = plan.bytes(MemCategory::kGrads) + 64;  // trailing padding
  const std::vector<ByteRange> r = gradient_zero_ranges(params, arena, true);
  REQUIRE(r.size() == 2);
  CHECK(r[0] == ByteRange{0, w.grad.offset});
  CHECK(r[1] == ByteRange{w.grad.offset + w.grad.bytes, arena - (w.grad.offset + w.grad.bytes)});
  CHECK(r[0].offset + r[0].bytes >= b0.grad.offset + b0.grad.bytes);
  CHECK(r[1].offset <= b1.grad.offset);
}
