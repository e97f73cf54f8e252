// Ops::batch_windows on the GPU: the CPU op's batch token for token, the step read from the
// device counters, eager and replayed from a captured graph (each replay after the counters
// advance draws the next step's windows).
#include <catch2/catch.hpp>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include "tests/gpu/gpu_rig.h"
#endif

using namespace noeira;
using namespace noeira::test;

#if defined(NOEIRA_WITH_CUDA)
namespace {

struct HostBatch {
  std::vector<int32_t> inputs, targets;
};

HostBatch cpu_batch(const std::vector<int32_t>& corpus, uint64_t seed, int64_t step, int64_t B,
                    int64_t T) {
  CpuOps cpu(1);
  HostBatch b{std::vector<int32_t>(static_cast<size_t>(B * T)),
              std::vector<int32_t>(static_cast<size_t>(B * T))};
  const StepCounters counters{step, 0};
  cpu.batch_windows(corpus.data(), static_cast<int64_t>(corpus.size()), seed, &counters, B, T, 0,
                    b.inputs.data(), b.targets.data());
  return b;
}

}  // namespace
#endif

TEST_CASE("cuda: batch_windows equals the CPU op, step by step from the device counters",
          "[gpu][batch-windows]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  const std::vector<int32_t> corpus0 = random_labels(200003, 50257, 31);
  const int64_t n = static_cast<int64_t>(corpus0.size());
  DeviceArray<int32_t> corpus(gpu, corpus0);
  DeviceArray<StepCounters> counters(gpu, 1);
  for (const auto& [B, T] : {std::pair<int64_t, int64_t>{16, 256}, {7, 33}, {1, 1}, {3, n - 1}}) {
    DeviceArray<int32_t> inputs(gpu, static_cast<size_t>(B * T)),
        targets(gpu, static_cast<size_t>(B * T));
    for (uint64_t seed : {uint64_t{42}, uint64_t{0x9e3779b97f4a7c15ull}}) {
      for (int64_t step : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{999},
                           (int64_t{1} << 32) + 5}) {
        INFO("B " << B << " T " << T << " seed " << seed << " step " << step);
        counters.upload({StepCounters{step, 0}});
        gpu.ops->batch_windows(corpus.get(), n, seed, counters.get(), B, T, 0, inputs.get(),
                               targets.get());
        const HostBatch want = cpu_batch(corpus0, seed, step, B, T);
        CHECK(inputs.download() == want.inputs);
        CHECK(targets.download() == want.targets);
      }
    }
  }
#endif
}

TEST_CASE("cuda: batch_windows in a captured graph draws the next step's windows per replay",
          "[gpu][batch-windows]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  const std::vector<int32_t> corpus0 = random_labels(100000, 50257, 32);
  const int64_t n = static_cast<int64_t>(corpus0.size()), B = 12, T = 128;
  const uint64_t seed = 0x1234567890abcdefull;
  DeviceArray<int32_t> corpus(gpu, corpus0);
  DeviceArray<int32_t> inputs(gpu, static_cast<size_t>(B * T)),
      targets(gpu, static_cast<size_t>(B * T));
  DeviceArray<StepCounters> counters(gpu, std::vector<StepCounters>{StepCounters{7, 0}});

  // Only the batch in the graph; the counters advanced eagerly between replays.
  REQUIRE(gpu.stream->begin_capture().ok());
  gpu.ops->batch_windows(corpus.get(), n, seed, counters.get(), B, T, 0, inputs.get(),
                         targets.get());
  Result<std::unique_ptr<StepGraph>> graph = gpu.stream->end_capture();
  REQUIRE(graph.ok());
  for (int64_t step = 7; step < 10; ++step) {
    INFO("step " << step);
    (*graph)->replay();
    const HostBatch want = cpu_batch(corpus0, seed, step, B, T);
    CHECK(inputs.download() == want.inputs);
    CHECK(targets.download() == want.targets);
    gpu.ops->advance(counters.get());
  }
  // The counters written from the host are read by the next replay too.
  counters.upload({StepCounters{100, 0}});
  (*graph)->replay();
  CHECK(inputs.download() == cpu_batch(corpus0, seed, 100, B, T).inputs);

  // A step as the trainer captures it: the batch, then the counter increment, in one graph.
  counters.upload({StepCounters{20, 0}});
  REQUIRE(gpu.stream->begin_capture().ok());
  gpu.ops->batch_windows(corpus.get(), n, seed, counters.get(), B, T, 0, inputs.get(),
                         targets.get());
  gpu.ops->advance(counters.get());
  Result<std::unique_ptr<StepGraph>> step_graph = gpu.stream->end_capture();
  REQUIRE(step_graph.ok());
  for (int64_t step = 20; step < 23; ++step) {
    INFO("step " << step);
    (*step_graph)->replay();
    const HostBatch want = cpu_batch(corpus0, seed, step, B, T);
    CHECK(inputs.download() == want.inputs);
    CHECK(targets.download() == want.targets);
  }
  CHECK(counters.download()[0].step == 23);
#endif
}
