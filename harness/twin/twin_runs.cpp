#include "harness/twin/twin_runs.h"

#include <cstdio>

#include "datasets/cifar10.h"
#include "datasets/mnist.h"
#include "datasets/tinyshakespeare.h"
#include "harness/run/interrupt.h"
#include "harness/results/partial_results.h"
#include "harness/results/summary.h"

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

RunRecord twin_run(const TwinReply& t, uint64_t seed) {
  RunRecord run;
  run.seed = seed;
  if (t.event_timer) {
    run.timers.event = timer_record(t.step_times_ms);
    // The twin's host clock covers the whole timed loop: one sample, per step.
    if (t.wall_ms_per_step) run.timers.wall = timer_record({*t.wall_ms_per_step});
  } else {
    run.timers.wall = timer_record(t.step_times_ms);
  }
  run.test_top1 = t.test_top1;
  run.test_loss = t.test_loss;
  run.train_loss = t.train_loss_last_epoch;
  run.losses = t.losses;
  run.steps = t.steps.value_or(0);
  // torch.compile's time (the first steps, inside the warm-up): apart from the step
  // times, null in eager mode. How torch ran the step: the optimizer and attention
  // kernels, and in the compiled modes what torch.compile made of it.
  run.compile_seconds = t.compile_seconds;
  run.twin_impl = t.impl;
  // The machine's load over the twin's timed loop, as the twin read /proc there.
  if (t.cpu_load) run.cpu_load = *t.cpu_load;
  // Its peak memory, time to target and energy, as it measured them (reference/twin/resources.py).
  run.memory = t.memory;
  run.time_to_target = t.time_to_target;
  run.energy = t.energy;
  return run;
}

VariantRecord plan_twin_mode(const TwinPlan& p, const std::string& mode) {
  VariantRecord v = new_variant("twin:" + mode, "torch", p.dtype, p.target);
  if (!p.unavailable.empty()) {
    v.available = false;
    v.unavailable_reason = p.unavailable;
  } else {
    plan_seeds(v, p.seeds);
  }
  return v;
}

TwinRequest TwinPlan::request(const std::string& mode, uint64_t seed, const std::string& log_name) const {
  return TwinRequest{.python = python, .recipe = recipe, .data_dir = data_dir, .dataset = dataset,
                     .device = device, .mode = mode, .dtype = dtype, .seed = seed, .epochs = epochs,
                     .max_steps = total_steps, .warmup = warmup, .threads = threads,
                     .init_checkpoint = std::nullopt, .timeout_seconds = timeout_seconds, .log = log_dir / log_name,
                     .target_metric = target_metric, .target_score = target_score,
                     .profile_trace = {}};
}

Result<std::vector<std::string>> parse_twin_modes(const std::vector<std::string>& requested) {
  std::vector<std::string> modes;
  for (const std::string& m : requested) {
    if (m == "none") continue;
    if (m != "eager" && m != "compiled" && m != "graphs")
      return make_error("--twin: unknown mode '" + m + "'; use eager, compiled, graphs or none");
    modes.push_back(m);
  }
  return modes;
}

TwinContext twin_context(const PythonProbe& probe, const std::string& requested) {
  auto or_null = [](const std::string& s) { return s.empty() ? Nullable<std::string>() : Nullable<std::string>(s); };
  return {!probe.python.empty() ? probe.python : !requested.empty() ? requested : "python3",
          or_null(probe.torch_version), probe.reason.empty(), or_null(probe.reason)};
}

TwinSeedOutcome run_twin_seed(const TwinPlan& p, const std::string& mode, uint64_t seed,
                              VariantRecord& v, int64_t sequence) {
  if (!v.available || (v.error && !v.error->empty())) return TwinSeedOutcome::kVariantDone;
  if (interrupt_requested()) return TwinSeedOutcome::kStopped;
  const TwinRequest q = p.request(mode, seed, "twin-" + mode + "-seed" + std::to_string(seed) + ".log");
  std::fprintf(stderr, "  twin %s seed %llu ...", mode.c_str(), static_cast<unsigned long long>(seed));
  std::fflush(stderr);
  const TwinOutcome o = run_twin(q);
  if (interrupt_requested()) {  // stopped: this seed stays pending
    std::fprintf(stderr, " stopped (%s)\n", interrupt_name().c_str());
    return TwinSeedOutcome::kStopped;
  }
  std::fprintf(stderr, " %s (%.1f s)\n",
               o.ok && o.available ? "done" : (o.ok ? "unavailable" : "failed"), o.seconds);
  if (!o.ok) {
    v.error = o.reason;  // one failure marks the variant; our results are untouched
    drop_pending(v);
    return TwinSeedOutcome::kVariantDone;
  }
  if (!o.available) {
    v.available = false;
    v.unavailable_reason = o.reason;
    drop_pending(v);
    return TwinSeedOutcome::kVariantDone;
  }
  RunRecord run = twin_run(o.reply, seed);
  run.sequence = sequence;
  record_run(v, std::move(run));
  return TwinSeedOutcome::kRecorded;
}

}  // namespace noeira
