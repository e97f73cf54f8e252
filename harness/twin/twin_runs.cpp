#include "harness/twin/twin_runs.h"

#include <cstdio>

#include "datasets/cifar10.h"
#include "datasets/mnist.h"
#include "datasets/tinyshakespeare.h"
#include "harness/run/bench_runner.h"
#include "harness/env/gpu_clocks.h"
#include "harness/run/interrupt.h"
#include "harness/results/partial_results.h"

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

// t[key], or null when t lacks it (a const operator[] must not be asked for a missing key).
nlohmann::json field(const nlohmann::json& t, const char* key) {
  const auto it = t.find(key);
  return it != t.end() ? *it : nlohmann::json();
}

nlohmann::json number_or_null(const nlohmann::json& v) { return v.is_number() ? v : nullptr; }

// Losses as the results schema holds them: numbers, null for a diverged step.
nlohmann::json losses_of(const nlohmann::json& a) {
  nlohmann::json out = nlohmann::json::array();
  if (a.is_array())
    for (const auto& x : a) out.push_back(number_or_null(x));
  return out;
}

}  // namespace

// Reads a reply parse_twin_reply accepted; any other JSON gives a run with what it has.
nlohmann::json twin_run_json(const nlohmann::json& t, uint64_t seed) {
  const bool events = field(t, "timer") == "event";
  nlohmann::json timers = {{"wall", nullptr}, {"device", nullptr}, {"event", nullptr}};
  if (events) {
    timers["event"] = timer_json(doubles(field(t, "step_times_ms")));
    // The twin's host clock covers the whole timed loop: one sample, per step.
    if (const nlohmann::json wall = field(t, "wall_ms_per_step"); wall.is_number())
      timers["wall"] = timer_json({wall.get<double>()});
  } else {
    timers["wall"] = timer_json(doubles(field(t, "step_times_ms")));
  }
  const nlohmann::json steps = field(t, "steps");
  // How torch ran it: the optimizer and attention kernels, and in the compiled modes
  // what torch.compile made of the whole step (reference/twin/compiled.py).
  nlohmann::json impl = nlohmann::json::object();
  for (const char* key : {"torch_version", "adam_impl", "attention_impl", "compile_impl"})
    if (const nlohmann::json v = field(t, key); v.is_string()) impl[key] = v;
  for (const char* key : {"compiled_graphs", "graph_breaks"})
    if (const nlohmann::json v = field(t, key); v.is_number_integer()) impl[key] = v;
  return {{"seed", seed},
          {"timers", timers},
          {"test_top1", number_or_null(field(t, "test_top1"))},
          {"test_loss", number_or_null(field(t, "test_loss"))},
          {"train_loss", number_or_null(field(t, "train_loss_last_epoch"))},
          {"losses", losses_of(field(t, "losses"))},
          {"steps", steps.is_number_integer() ? steps.get<int64_t>() : 0},
          // torch.compile's time (the first steps, inside the warm-up): apart from the
          // step times, null in eager mode.
          {"compile_seconds", number_or_null(field(t, "compile_seconds"))},
          {"twin_impl", impl}};
}

nlohmann::json plan_twin_mode(const TwinPlan& p, const std::string& mode) {
  nlohmann::json v = new_variant("twin:" + mode, "torch", p.dtype, p.target);
  if (!p.unavailable.empty()) {
    v["available"] = false;
    v["unavailable_reason"] = p.unavailable;
  } else {
    plan_seeds(v, p.seeds);
  }
  return v;
}

void run_twin_mode(const TwinPlan& p, const std::string& mode, nlohmann::json& v,
                   const std::function<void()>& after_seed) {
  const bool gpu = p.target == "gpu";
  const ClockReading clocks_before = gpu ? read_gpu_clocks() : ClockReading{};
  for (uint64_t seed : p.seeds) {
    if (!v["available"].get<bool>() || interrupt_requested()) break;
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
    if (interrupt_requested()) {  // stopped: this seed stays pending
      std::fprintf(stderr, " stopped (%s)\n", interrupt_name().c_str());
      break;
    }
    std::fprintf(stderr, " %s (%.1f s)\n",
                 o.ok && o.available ? "done" : (o.ok ? "unavailable" : "failed"), o.seconds);
    if (!o.ok) {
      v["error"] = o.reason;  // one failure marks the variant; our results are untouched
      drop_pending(v);
      break;
    }
    if (!o.available) {
      v["available"] = false;
      v["unavailable_reason"] = o.reason;
      drop_pending(v);
      break;
    }
    record_run(v, twin_run_json(o.result, seed));
    if (after_seed) after_seed();
  }
  if (gpu) record_variant_clocks(v, clocks_before);
}

}  // namespace noeira
