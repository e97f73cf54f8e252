// Every module's and loss's analytic backward agrees with central finite differences.
#include <catch2/catch.hpp>

#include <random>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/cpu_stream.h"
#include "nn/activation.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/residual.h"
#include "nn/sequential.h"
#include "tests/support/gradcheck.h"

using namespace noeira;
using noeira::test::grad_close;
using noeira::test::check_module;
using noeira::test::ModuleRig;

TEST_CASE("Linear backward matches finite differences", "[gradcheck]") {
  std::mt19937 g(3);
  for (int trial = 0; trial < 3; ++trial) {
    const int64_t in = std::uniform_int_distribution<int64_t>(1, 17)(g);
    const int64_t out = std::uniform_int_distribution<int64_t>(1, 13)(g);
    const int64_t batch = std::uniform_int_distribution<int64_t>(1, 9)(g);
    ModuleRig rig(std::make_unique<Linear>(out), Shape{in}, batch, 10 + trial);
    check_module(rig);
  }
}

TEST_CASE("Linear on a 3-d input treats leading dims as rows", "[gradcheck]") {
  ModuleRig rig(std::make_unique<Linear>(6), Shape{5, 7}, 3);  // (B, T, C) = (3, 5, 7)
  check_module(rig);
}

TEST_CASE("LinearAct(relu) and LinearAct(gelu) backward match finite differences",
          "[gradcheck]") {
  for (Act act : {Act::kReLU, Act::kGELU}) {
    ModuleRig rig(std::make_unique<LinearAct>(11, act), Shape{9}, 6, 21);
    check_module(rig);
  }
}

TEST_CASE("ReLU and GELU modules backward match finite differences", "[gradcheck]") {
  ModuleRig relu(std::make_unique<ReLU>(), Shape{4, 5}, 3);
  check_module(relu);
  ModuleRig gelu(std::make_unique<GELU>(), Shape{4, 5}, 3);
  check_module(gelu);
}

TEST_CASE("Sequential and Residual backward match finite differences", "[gradcheck]") {
  auto seq = std::make_unique<Sequential>();
  seq->add("fc1", std::make_unique<LinearAct>(8, Act::kGELU));
  auto inner = std::make_unique<Sequential>();
  inner->add("fc", std::make_unique<LinearAct>(8, Act::kReLU));
  inner->add("proj", std::make_unique<Linear>(8));
  seq->add("res", std::make_unique<Residual>(std::move(inner)));
  seq->add("out", std::make_unique<Linear>(3));
  ModuleRig rig(std::move(seq), Shape{6}, 5);
  check_module(rig);
}

namespace {

// L = the loss's batch mean; checks d(loss)/d(output) against finite differences.
void check_loss(Loss& loss, int64_t batch, int64_t width, uint32_t seed) {
  CpuOps ops(1);
  CpuStream stream;
  HostAllocator alloc;
  MemoryPlan plan;
  ParamRegistry params;
  PlanContext pc{plan, params, batch, true, ""};
  const Shape out{width};
  loss.plan(pc, out);
  const Slot o = plan.reserve(MemCategory::kActivations, out.with_batch(batch), DType::kF32);
  const Slot t = plan.reserve(MemCategory::kActivations, loss.target_shape(out).with_batch(batch),
                              loss.target_dtype());
  const Slot counters = plan.reserve(MemCategory::kScalars, Shape{4}, DType::kI32);
  const Slot stats = plan.reserve(MemCategory::kScalars, Shape{6}, DType::kI32);
  Arenas a = std::move(Arenas::allocate(plan, alloc).value());
  Context ctx(ops, stream, a, counters);
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (int64_t i = 0; i < o.shape.numel(); ++i) a.as<float>(o)[i] = u(g);
  for (int64_t i = 0; i < t.shape.numel(); ++i) {
    if (loss.target_dtype() == DType::kI32)
      a.as<int32_t>(t)[i] = std::uniform_int_distribution<int32_t>(0, static_cast<int32_t>(width) - 1)(g);
    else
      a.as<float>(t)[i] = u(g);
  }
  auto mean_loss = [&]() {
    LossStats* s = a.as<LossStats>(stats);
    *s = LossStats{};
    loss.run(ctx, a.view(o), a.view(t), s, nullptr, false);
    return s->loss_sum / static_cast<double>(batch);
  };
  LossStats* s = a.as<LossStats>(stats);
  const Tensor d = loss.run(ctx, a.view(o), a.view(t), s, nullptr, true);
  std::vector<float> grad(d.f32(), d.f32() + d.numel());
  float* logits = a.as<float>(o);
  for (int64_t i = 0; i < o.shape.numel(); ++i) {
    const float saved = logits[i];
    const float h = 1e-3f;
    logits[i] = saved + h;
    const double lp = mean_loss();
    logits[i] = saved - h;
    const double lm = mean_loss();
    logits[i] = saved;
    const double numeric = (lp - lm) / (2.0 * h);
    INFO(loss.kind() << " d(out)[" << i << "] analytic " << grad[static_cast<size_t>(i)] << " numeric " << numeric);
    CHECK(grad_close(grad[static_cast<size_t>(i)], numeric));
  }
}

}  // namespace

TEST_CASE("Softmax cross-entropy gradient matches finite differences", "[gradcheck]") {
  SoftmaxCrossEntropy ce;
  check_loss(ce, 4, 7, 1);
  SoftmaxCrossEntropy ce2;
  check_loss(ce2, 9, 3, 2);
}

TEST_CASE("MSE gradient matches finite differences", "[gradcheck]") {
  MeanSquaredError mse;
  check_loss(mse, 5, 3, 3);
}

TEST_CASE("Softmax cross-entropy is stable for huge logits", "[loss]") {
  CpuOps ops(1);
  const float logits[3] = {1000.0f, 0.0f, -1000.0f};
  const int32_t label = 0;
  float d[3];
  LossStats s{};
  StepCounters c{};
  ops.softmax_xent(ConstView{logits, 3}, &label, 1, 3, 0.0f, View{d, 3}, &s, nullptr, &c);
  CHECK(std::isfinite(s.loss_sum));
  CHECK(s.loss_sum == Approx(0.0).margin(1e-6));
  CHECK(s.correct == 1);
  CHECK(std::isfinite(d[0]));
}

TEST_CASE("Softmax cross-entropy with label smoothing: gradient and torch's loss",
          "[gradcheck][loss]") {
  SoftmaxCrossEntropy ce(0.1f);
  check_loss(ce, 4, 7, 11);
  SoftmaxCrossEntropy ce2(0.3f);
  check_loss(ce2, 5, 3, 12);
  // torch: (1 - eps) * nll + eps * mean_k(-log p_k), in double here.
  CpuOps ops(1);
  const float z[4] = {1.5f, -0.25f, 0.75f, 2.0f};
  const int32_t label = 2;
  const float eps = 0.1f;
  double lse = 0.0;
  for (float v : z) lse += std::exp(static_cast<double>(v));
  lse = std::log(lse);
  double smooth = 0.0;
  for (float v : z) smooth += (lse - v) / 4.0;
  const double want = (1.0 - eps) * (lse - z[2]) + eps * smooth;
  float d[4];
  LossStats s{};
  StepCounters c{};
  ops.softmax_xent(ConstView{z, 4}, &label, 1, 4, eps, View{d, 4}, &s, nullptr, &c);
  CHECK(s.loss_sum == Approx(want).epsilon(1e-6));
  double dsum = 0.0;
  for (int j = 0; j < 4; ++j) {
    const double p = std::exp(z[j] - lse);
    const double target = (j == label ? 1.0 - eps : 0.0) + eps / 4.0;
    CHECK(d[j] == Approx(p - target).margin(1e-6));
    dsum += d[j];
  }
  CHECK(dsum == Approx(0.0).margin(1e-6));  // both distributions sum to one
}

TEST_CASE("Softmax cross-entropy: a label outside [0, C) gives a NaN loss, never a stray read",
          "[loss]") {
  CpuOps ops(1);
  const float z[3] = {0.5f, 1.0f, -1.0f};
  for (const int32_t label : {-1, 3, 1 << 30}) {
    float d[3];
    LossStats s{};
    StepCounters c{};
    ops.softmax_xent(ConstView{z, 3}, &label, 1, 3, 0.1f, View{d, 3}, &s, nullptr, &c);
    CHECK(std::isnan(s.loss_sum));
    CHECK(s.correct == 0);
  }
}
