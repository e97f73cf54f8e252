// CUDA-graph capture (a training step replayed from device counters gives the same bytes
// as running it eagerly; a capture that breaks names the op) and the device timers.
#include <catch2/catch.hpp>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include <numeric>

#include "tests/gpu/gpu_rig.h"
#endif

using namespace noeira;
using namespace noeira::test;

#if defined(NOEIRA_WITH_CUDA)
namespace {

// A one-layer classifier trained on device-resident data, as the DatasetTrainer does it: every
// per-step value comes from the device counters, so the same ops can be captured once.
struct TinyStep {
  static constexpr int64_t kCount = 256, kBatch = 64, kIn = 32, kClasses = 10;
  static constexpr int64_t kWeights = kClasses * kIn, kParams = kWeights + kClasses;

  Backend& gpu;
  DeviceArray<float> x_all, batch_x, logits, dlogits, params, grads, m, v, history;
  DeviceArray<int32_t> y_all, perm, batch_y;
  DeviceArray<StepCounters> counters;
  DeviceArray<LossStats> stats;
  AdamHyper adam;

  explicit TinyStep(Backend& b)
      : gpu(b),
        x_all(b, random_floats(kCount * kIn, 11)),
        batch_x(b, kBatch * kIn),
        logits(b, kBatch * kClasses),
        dlogits(b, kBatch * kClasses),
        params(b, kParams),
        grads(b, kParams),
        m(b, kParams),
        v(b, kParams),
        history(b, 4),
        y_all(b, random_labels(kCount, kClasses, 12)),
        perm(b, kCount),
        batch_y(b, kBatch),
        counters(b, 1),
        stats(b, 1) {
    std::vector<int32_t> p(kCount);
    std::iota(p.begin(), p.end(), 0);
    std::shuffle(p.begin(), p.end(), std::mt19937(13));
    perm.upload(p);
    adam.lr = 1e-2f;
  }

  // The state every run starts from.
  void reset() {
    params.upload(random_floats(kParams, 14, -0.2f, 0.2f));
    m.upload(std::vector<float>(kParams, 0.0f));
    v.upload(std::vector<float>(kParams, 0.0f));
    history.upload(std::vector<float>(4, 0.0f));
    counters.upload({StepCounters{0, 0}});
    stats.upload({LossStats{}});
  }

  void enqueue() {
    Ops& ops = *gpu.ops;
    Stream& stream = *gpu.stream;
    float* W = params.get();              // (kClasses, kIn)
    float* bias = params.get() + kWeights;  // (kClasses)
    ops.gather_rows(x_all.view(), perm.get(), kBatch, kIn, counters.get(), batch_x.view());
    ops.gather_rows(y_all.view(), perm.get(), kBatch, 1, counters.get(), batch_y.view());
    stream.fill_zero(grads.get(), kParams * sizeof(float));
    ops.linear_forward(batch_x.view(), ConstView{W, kWeights}, bias, logits.view(), View{},
                       nullptr, kBatch, kClasses, kIn, Act::kNone);
    ops.softmax_xent(logits.view(), batch_y.get(), kBatch, kClasses, 0.0f, dlogits.view(),
                     stats.get(), history.get(), counters.get());
    ops.linear_backward_params(dlogits.view(), batch_x.view(), grads.get(),
                               grads.get() + kWeights, kBatch, kClasses, kIn,
                               nullptr,  // none on CUDA (linear_params_workspace_bytes)
                               true);
    ops.adam(params.get(), grads.get(), m.get(), v.get(), kParams, adam, counters.get());
    ops.advance(counters.get());
  }

  struct Snapshot {
    std::vector<float> params, m, v, history;
    StepCounters counters;
    LossStats stats;
  };
  Snapshot snapshot() const {
    return {params.download(), m.download(), v.download(), history.download(),
            counters.download()[0], stats.download()[0]};
  }
};

bool same(const TinyStep::Snapshot& a, const TinyStep::Snapshot& b) {
  return same_bytes(a.params, b.params) && same_bytes(a.m, b.m) && same_bytes(a.v, b.v) &&
         same_bytes(a.history, b.history) &&
         std::memcmp(&a.counters, &b.counters, sizeof a.counters) == 0 &&
         std::memcmp(&a.stats, &b.stats, sizeof a.stats) == 0;
}

}  // namespace
#endif

TEST_CASE("cuda: a captured step replayed 3 times gives the bytes of 3 eager steps", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  TinyStep step(gpu);

  step.reset();
  for (int i = 0; i < 3; ++i) step.enqueue();
  const TinyStep::Snapshot eager = step.snapshot();
  CHECK(eager.counters.step == 3);
  CHECK(eager.stats.count == 3 * TinyStep::kBatch);

  step.reset();
  REQUIRE(gpu.stream->begin_capture().ok());
  step.enqueue();
  Result<std::unique_ptr<StepGraph>> graph = gpu.stream->end_capture();
  REQUIRE(graph.ok());
  const TinyStep::Snapshot untouched = step.snapshot();  // capturing runs nothing
  CHECK(untouched.counters.step == 0);
  for (int i = 0; i < 3; ++i) (*graph)->replay();
  const TinyStep::Snapshot replayed = step.snapshot();
  CHECK(same(replayed, eager));

  // And again, eagerly, after the graph: the same bytes once more.
  step.reset();
  for (int i = 0; i < 3; ++i) step.enqueue();
  CHECK(same(step.snapshot(), eager));
#endif
}

TEST_CASE("cuda: a capture that breaks names the op; the backend stays usable", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  DeviceArray<float> a(gpu, std::vector<float>(16, 1.0f));
  CHECK_FALSE(gpu.stream->end_capture().ok());  // nothing to end

  REQUIRE(gpu.stream->begin_capture().ok());
  CHECK_FALSE(gpu.stream->begin_capture().ok());  // one at a time
  gpu.stream->fill_zero(a.get(), 16 * sizeof(float));
  std::vector<float> host(16, -1.0f);
  gpu.stream->copy_to_host(host.data(), a.get(), 16 * sizeof(float));  // synchronises: illegal
  Result<std::unique_ptr<StepGraph>> graph = gpu.stream->end_capture();
  REQUIRE_FALSE(graph.ok());
  INFO(graph.error().message);
  CHECK(graph.error().message.find("copy_to_host") != std::string::npos);

  // Eager work runs normally afterwards (the memset above was never executed).
  CHECK(same_bytes(a.download(), std::vector<float>(16, 1.0f)));
  gpu.stream->fill_zero(a.get(), 16 * sizeof(float));
  CHECK(same_bytes(a.download(), std::vector<float>(16, 0.0f)));
#endif
}

TEST_CASE("cuda: copy_to_device is refused while capturing, naming the op", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  DeviceArray<float> a(gpu, std::vector<float>(16, 1.0f));
  std::vector<float> host(16, 7.0f);
  REQUIRE(gpu.stream->begin_capture().ok());
  gpu.stream->fill_zero(a.get(), 16 * sizeof(float));
  // A graph would keep this pageable host pointer and re-read it at every replay.
  gpu.stream->copy_to_device(a.get(), host.data(), 16 * sizeof(float));
  Result<std::unique_ptr<StepGraph>> graph = gpu.stream->end_capture();
  REQUIRE_FALSE(graph.ok());
  INFO(graph.error().message);
  CHECK_THAT(graph.error().message, Catch::Contains("copy_to_device") &&
                                        Catch::Contains("pageable host memory") &&
                                        Catch::Contains("before begin_capture"));
  // Nothing ran, and the backend is usable: the same copy works eagerly.
  CHECK(same_bytes(a.download(), std::vector<float>(16, 1.0f)));
  gpu.stream->copy_to_device(a.get(), host.data(), 16 * sizeof(float));
  CHECK(same_bytes(a.download(), host));
  // synchronize is refused the same way.
  REQUIRE(gpu.stream->begin_capture().ok());
  gpu.stream->fill_zero(a.get(), 16 * sizeof(float));
  gpu.stream->synchronize();
  Result<std::unique_ptr<StepGraph>> synced = gpu.stream->end_capture();
  REQUIRE_FALSE(synced.ok());
  CHECK_THAT(synced.error().message, Catch::Contains("synchronize"));
#endif
}

#if defined(NOEIRA_WITH_CUDA)
namespace {

// 4 eager steps and 3 graph replays, each bracketed; the timer exists before the capture.
Result<DeviceStepTimer::Samples> time_steps(Backend& gpu, DeviceStepTimer& timer) {
  TinyStep step(gpu);
  step.reset();
  for (int i = 0; i < 4; ++i) {
    timer.begin_step();
    step.enqueue();
    timer.end_step();
  }
  REQUIRE(gpu.stream->begin_capture().ok());
  step.enqueue();
  Result<std::unique_ptr<StepGraph>> graph = gpu.stream->end_capture();
  REQUIRE(graph.ok());
  for (int i = 0; i < 3; ++i) {
    timer.begin_step();
    (*graph)->replay();
    timer.end_step();
  }
  return timer.collect();
}

}  // namespace
#endif

TEST_CASE("cuda: the CUPTI timer gives one positive sample per step, graphs included",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  std::string why;
  std::unique_ptr<DeviceStepTimer> timer =
      gpu.stream->make_device_timer(DeviceTimerKind::kCupti, &why);
  INFO(why);
  REQUIRE(timer);
  std::string why_second;
  CHECK_FALSE(gpu.stream->make_device_timer(DeviceTimerKind::kCupti, &why_second));
  CHECK(why_second.find("already active") != std::string::npos);

  Result<DeviceStepTimer::Samples> s = time_steps(gpu, *timer);
  REQUIRE(s.ok());
  REQUIRE(s->sum_ms.size() == 7);
  REQUIRE(s->busy_ms.size() == 7);
  for (size_t i = 0; i < 7; ++i) {
    INFO("step " << i << " sum " << s->sum_ms[i] << " ms busy " << s->busy_ms[i] << " ms");
    CHECK(s->sum_ms[i] > 0.0);
    CHECK(s->busy_ms[i] > 0.0);
    CHECK(s->busy_ms[i] <= s->sum_ms[i] * (1.0 + 1e-9));
  }
  // Nothing bracketed since: an empty collect.
  Result<DeviceStepTimer::Samples> again = timer->collect();
  REQUIRE(again.ok());
  CHECK(again->sum_ms.empty());
#endif
}

TEST_CASE("cuda: the event timer gives one positive sample per step", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  std::string why;
  std::unique_ptr<DeviceStepTimer> timer =
      gpu.stream->make_device_timer(DeviceTimerKind::kEvent, &why);
  INFO(why);
  REQUIRE(timer);
  Result<DeviceStepTimer::Samples> s = time_steps(gpu, *timer);
  REQUIRE(s.ok());
  REQUIRE(s->sum_ms.size() == 7);
  CHECK(s->busy_ms.empty());
  for (double ms : s->sum_ms) CHECK(ms > 0.0);
#endif
}
