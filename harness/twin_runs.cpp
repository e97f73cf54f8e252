#include "harness/twin_runs.h"

#include <cstdio>

#include "datasets/cifar10.h"
#include "datasets/mnist.h"
#include "datasets/tinyshakespeare.h"
#include "harness/bench_runner.h"
#include "harness/gpu_clocks.h"

namespace noeira {

std::filesystem::path twin_data_dir(const std::string& dataset, const DataSource& src) {
  if (Result<MnistVariant> v = parse_mnist_variant(dataset)) {
    Result<std::filesystem::path> p = locate(mnist_files(*v).train_images, src);
    if (p) return p->parent_path().parent_path();
  }
  if (Result<Cifar10Variant> v = parse_cifar10_variant(dataset)) {
    // <data>/cifar10/data_batch_1_first4000.bin, <data>/cifar10/cifar-10-batches-bin/
    Result<std::filesystem::path> p = *v == Cifar10Variant::kSubset
                                          ? locate(cifar10_subset_files().train, src)
                                          : locate_cifar10_batches(cifar10_files(), src);
    if (p) return p->parent_path().parent_path();
  }
  if (dataset == "tinyshakespeare") {
    Result<std::filesystem::path> p = locate(tinyshakespeare_file(), src);
    if (p) return p->parent_path().parent_path();
  }
  return src.data_dir ? *src.data_dir : default_cache_dir();
}

namespace {

std::vector<double> doubles(const nlohmann::json& a) {
  std::vector<double> v;
  if (a.is_array())
    for (const auto& x : a)
      if (x.is_number()) v.push_back(x.get<double>());
  return v;
}

nlohmann::json number_or_null(const nlohmann::json& v) { return v.is_number() ? v : nullptr; }

}  // namespace

nlohmann::json twin_run_json(const nlohmann::json& t, uint64_t seed) {
  const bool events = t.value("timer", "wall") == "event";
  nlohmann::json timers = {{"wall", nullptr}, {"device", nullptr}, {"event", nullptr}};
  if (events) {
    timers["event"] = timer_json(doubles(t["step_times_ms"]));
    // The twin's host clock covers the whole timed loop: one sample, per step.
    if (t["wall_ms_per_step"].is_number())
      timers["wall"] = timer_json({t["wall_ms_per_step"].get<double>()});
  } else {
    timers["wall"] = timer_json(doubles(t["step_times_ms"]));
  }
  return {{"seed", seed},
          {"timers", timers},
          {"test_top1", number_or_null(t.value("test_top1", nlohmann::json()))},
          {"test_loss", number_or_null(t.value("test_loss", nlohmann::json()))},
          {"train_loss", number_or_null(t.value("train_loss_last_epoch", nlohmann::json()))},
          {"losses", t.value("losses", nlohmann::json::array())},
          {"steps", t.value("steps", 0)}};
}

nlohmann::json run_twin_mode(const TwinPlan& p, const std::string& mode) {
  nlohmann::json v = new_variant("twin:" + mode, "torch", p.dtype, p.target);
  const bool gpu = p.target == "gpu";
  const ClockReading clocks_before = gpu ? read_gpu_clocks() : ClockReading{};
  if (!p.unavailable.empty()) {
    v["available"] = false;
    v["unavailable_reason"] = p.unavailable;
  }
  for (uint64_t seed : p.seeds) {
    if (!v["available"].get<bool>()) break;
    TwinRequest q;
    q.python = p.python;
    q.recipe = p.recipe;
    q.data_dir = p.data_dir;
    q.dataset = p.dataset;
    q.device = p.device;
    q.mode = mode;
    q.dtype = p.dtype;
    q.seed = seed;
    q.epochs = p.epochs;
    q.max_steps = p.total_steps;
    q.warmup = p.warmup;
    q.threads = p.threads;
    q.timeout_seconds = p.timeout_seconds;
    q.log = p.log_dir / ("twin-" + mode + "-seed" + std::to_string(seed) + ".log");
    std::fprintf(stderr, "  twin %s seed %llu ...", mode.c_str(), static_cast<unsigned long long>(seed));
    std::fflush(stderr);
    const TwinOutcome o = run_twin(q);
    std::fprintf(stderr, " %s (%.1f s)\n",
                 o.ok && o.available ? "done" : (o.ok ? "unavailable" : "failed"), o.seconds);
    if (!o.ok) {
      v["error"] = o.reason;  // one failure marks the variant; our results are untouched
      break;
    }
    if (!o.available) {
      v["available"] = false;
      v["unavailable_reason"] = o.reason;
      break;
    }
    v["runs"].push_back(twin_run_json(o.result, seed));
  }
  v["summary"] = summarize_runs(v["runs"]);
  if (gpu) record_variant_clocks(v, clocks_before);
  return v;
}

}  // namespace noeira
