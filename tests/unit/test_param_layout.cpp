// The flat parameter layout: every tensor 32-byte aligned (values, gradients, optimizer
// state) and its bf16 copy 16-byte aligned at half the offset; padding zero and kept zero
// by the optimizers; checkpoints hold the tensors without padding.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "kernels/cpu/cpu_ops.h"
#include "nn/checkpoint.h"
#include "nn/params.h"
#include "tests/support/mnist_fixture.h"
#include "tests/support/synthetic.h"

using namespace noeira;
using namespace noeira::test;

namespace {

// Odd sizes everywhere: none is a multiple of 8 elements.
const Shape kShapes[] = {Shape{3, 5}, Shape{7}, Shape{1}, Shape{10, 3}, Shape{9}, Shape{13, 11}};

struct Layout {
  MemoryPlan plan;
  ParamRegistry params;
  explicit Layout(bool copies) {
    params.set_low_precision_copies(copies);
    const char* names[] = {"a", "b", "c", "d", "e", "f"};
    int i = 0;
    for (const Shape& s : kShapes) params.add(plan, names[i++], s, ParamRole::kWeight, 1, 1);
  }
};

// Whether byte b of the kParams arena lies inside some parameter.
bool in_a_param(const ParamRegistry& params, size_t b) {
  for (const ParamInfo& p : params.all())
    if (b >= p.value.offset && b < p.value.offset + p.value.bytes) return true;
  return false;
}

}  // namespace

TEST_CASE("Parameters are 32-byte aligned and their bf16 copies 16-byte aligned",
          "[params]") {
  Layout l(true);
  size_t end = 0;
  for (const ParamInfo& p : l.params.all()) {
    INFO(p.name << " " << p.value.shape.str());
    CHECK(p.value.offset % 32 == 0);
    CHECK(p.grad.offset == p.value.offset);  // optimizers treat both as one flat array
    CHECK(p.copy.offset % 16 == 0);
    CHECK(p.copy.offset * 2 == p.value.offset);  // one flat cast refreshes every copy
    CHECK(p.value.offset >= end);                // no overlap
    end = p.value.offset + p.value.bytes;
  }
  // 3x5 = 15 floats: padded to 16, so the 7-float tensor starts at 64 bytes, and so on.
  CHECK(l.params.all()[1].value.offset == 64);
  CHECK(l.params.all()[2].value.offset == 96);
  CHECK(l.params.all()[3].value.offset == 128);
  CHECK(l.plan.bytes(MemCategory::kGrads) == l.plan.bytes(MemCategory::kParams));
  CHECK(l.plan.bytes(MemCategory::kParamCopies) * 2 == l.plan.bytes(MemCategory::kParams));
  int64_t numel = 0;
  for (const Shape& s : kShapes) numel += s.numel();
  CHECK(l.params.count() == numel);  // padding is not a parameter

  Layout fp32(false);  // no copies: the same value layout, no copy arena
  CHECK(fp32.plan.bytes(MemCategory::kParams) == l.plan.bytes(MemCategory::kParams));
  CHECK(fp32.plan.bytes(MemCategory::kParamCopies) == 0);
}

TEST_CASE("Padding of the flat parameter arena starts zero and the optimizers keep it zero",
          "[params]") {
  Layout l(false);
  HostAllocator host;
  Result<Arenas> a = Arenas::allocate(l.plan, host);
  REQUIRE(a.ok());
  const size_t bytes = l.plan.bytes(MemCategory::kParams);
  const int64_t n = static_cast<int64_t>(bytes / sizeof(float));
  auto* p = static_cast<float*>(a->base(MemCategory::kParams));
  auto* g = static_cast<float*>(a->base(MemCategory::kGrads));
  // Parameters and their gradients non-zero, padding as the arena left it.
  for (const ParamInfo& info : l.params.all())
    for (int64_t k = 0; k < info.value.shape.numel(); ++k) {
      a->as<float>(info.value)[k] = 0.5f + 0.01f * static_cast<float>(k);
      a->as<float>(info.grad)[k] = -0.25f;
    }
  CpuOps ops(1);
  AdamHyper h;
  h.lr = 0.1f;
  h.weight_decay = 0.5f;
  h.decoupled = true;
  std::vector<float> m(static_cast<size_t>(n), 0.0f), v(static_cast<size_t>(n), 0.0f);
  std::vector<float> momentum(static_cast<size_t>(n), 0.0f);
  SgdHyper sgd;
  sgd.lr = 0.1f;
  sgd.momentum = 0.9f;
  sgd.weight_decay = 0.5f;
  for (int64_t step = 0; step < 3; ++step) {
    const StepCounters c{step, step};
    ops.adam(p, g, m.data(), v.data(), n, h, &c);
    h.decoupled = !h.decoupled;  // L2 and decoupled weight decay both
    ops.sgd(p, g, momentum.data(), n, sgd, &c);
  }
  size_t padding = 0;
  for (size_t b = 0; b < bytes; b += sizeof(float)) {
    if (in_a_param(l.params, b)) continue;
    ++padding;
    const size_t i = b / sizeof(float);
    INFO("padding float " << i);
    CHECK(p[i] == 0.0f);
    CHECK(std::signbit(p[i]) == false);
    CHECK(m[i] == 0.0f);
    CHECK(v[i] == 0.0f);
    CHECK(momentum[i] == 0.0f);
  }
  CHECK(padding > 0);  // the odd sizes did leave padding to check
}

TEST_CASE("Checkpoints hold parameters without padding, whatever the arena layout",
          "[params][checkpoint]") {
  // Hidden width 5: fc1.bias (5), fc2.weight (20) and fc2.bias (4) are padded in the arena.
  TempDir dir;
  TrainerConfig c = small_config(Task::kClassification, 7);
  auto make = [&] {
    auto t = DatasetTrainer::create(small_mlp(5, 4), c, synthetic_classification(256, 1),
                             synthetic_classification(64, 2));
    if (!t) FAIL(t.error().message);
    return std::move(t).value();
  };
  auto a = make();
  a->train(2);
  REQUIRE(a->save_checkpoint(dir / "a.ckpt").ok());
  Result<Checkpoint> ck = read_checkpoint(dir / "a.ckpt");
  REQUIRE(ck.ok());
  const auto& params = a->params().all();
  for (size_t i = 0; i < params.size(); ++i) {
    INFO(params[i].name);
    const CheckpointTensor* t = ck->find(params[i].name);
    REQUIRE(t != nullptr);
    const std::vector<float> values = a->param_values(i);
    REQUIRE(t->bytes.size() == values.size() * sizeof(float));  // no padding bytes
    CHECK(std::memcmp(t->bytes.data(), values.data(), t->bytes.size()) == 0);
  }
  auto b = make();
  REQUIRE(b->load_checkpoint(dir / "a.ckpt").ok());
  REQUIRE(b->save_checkpoint(dir / "b.ckpt").ok());
  CHECK(file_bytes(dir / "a.ckpt") == file_bytes(dir / "b.ckpt"));
}
