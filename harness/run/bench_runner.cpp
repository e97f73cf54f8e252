#include "harness/run/bench_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>

#include "harness/run/interrupt.h"
#include "harness/report/number_format.h"
#include "harness/run/progress.h"

namespace noeira {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nullptr; }

nlohmann::json seed_stats(const std::vector<double>& v) {
  if (v.empty()) return nullptr;
  const std::optional<double> olympic = olympic_mean(v);
  return {{"mean", mean(v)},
          {"std", number_or_null(sample_std(v))},
          {"n", v.size()},
          {"olympic_mean", olympic ? nlohmann::json(*olympic) : nlohmann::json(nullptr)}};
}

// The options both passes share; the timers differ.
TrainerOptions trainer_options(const Variant& variant, uint64_t seed, const BenchSettings& st) {
  TrainerOptions o;
  o.device = st.device;
  o.threads = st.threads;
  o.seed = seed;
  o.use_train_cuda_graph = variant.graph;
  o.amp = variant.dtype == DType::kBF16 ? BF16Policy : NoAMP;
  o.host_batch = variant.batch == BatchSource::kHost;
  o.total_steps = st.total_steps;
  return o;
}

std::vector<double> samples_of(const nlohmann::json& timer) {
  std::vector<double> v;
  if (timer.is_object() && timer.contains("samples_ms"))
    for (const auto& x : timer["samples_ms"])
      if (x.is_number()) v.push_back(x.get<double>());
  return v;
}

}  // namespace

nlohmann::json timer_json(const std::vector<double>& samples) {
  if (samples.empty()) return nullptr;
  const SampleSummary s = summarize(samples);
  return {{"samples_ms", samples}, {"median_ms", s.median}, {"q1_ms", s.q1},
          {"q3_ms", s.q3},         {"cv", number_or_null(s.cv)}, {"n", s.n}};
}

Result<nlohmann::json> run_our_variant(const Recipe& recipe, const DataSplit& data,
                                       const Variant& variant, uint64_t seed,
                                       const BenchSettings& st, const std::string& label) {
  TrainerOptions o = trainer_options(variant, seed, st);
  if (st.device == Device::kGpu) o.device_timers = {DeviceTimerKind::kEvent};  // CUPTI off
  Result<std::unique_ptr<TrainerCore>> made = make_trainer(recipe, data, o);
  if (!made) return made.error();
  TrainerCore& t = **made;
  DeviceStepTimer* events = t.device_timer(DeviceTimerKind::kEvent);

  std::vector<double> wall;
  std::vector<float> losses;
  losses.reserve(static_cast<size_t>(st.total_steps));
  bool sampling = true;
  int64_t step = 0, block_steps = 0;
  Clock::time_point block_start, timing_start;
  double train_loss = 0.0;
  Progress progress(label);
  while (step < st.total_steps) {
    t.begin_epoch();
    const int64_t n = std::min(t.steps_per_epoch(), st.total_steps - step);
    for (int64_t i = 0; i < n; ++i, ++step) {
      const bool timed = sampling && step >= st.warmup;
      if (timed && block_steps == 0) {
        t.synchronize();
        block_start = Clock::now();
        if (wall.empty()) timing_start = block_start;
      }
      if (timed && events) events->begin_step();
      t.train_step();
      if (timed && events) events->end_step();
      if (timed && ++block_steps == st.wall_block) {
        t.synchronize();
        wall.push_back(ms_since(block_start) / static_cast<double>(block_steps));
        block_steps = 0;
        if (st.stop.done(wall, ms_since(timing_start) / 1000.0)) sampling = false;
      }
      progress.update(step + 1, st.total_steps);
      // Ctrl-C: this seed is abandoned (it stays pending); what finished is kept.
      if (interrupt_requested()) {
        progress.finish();
        return make_error(label + ": stopped by " + interrupt_name());
      }
    }
    const EpochStats e = t.end_epoch(false);
    losses.insert(losses.end(), e.step_losses.begin(), e.step_losses.end());
    train_loss = e.train_loss;
  }
  progress.finish();
  const EvalStats test = t.evaluate();

  nlohmann::json timers = {{"wall", timer_json(wall)}, {"device", nullptr}, {"event", nullptr}};
  if (events) {
    Result<DeviceStepTimer::Samples> s = events->collect();
    if (s) timers["event"] = timer_json(s->sum_ms);
  }
  nlohmann::json loss_json = nlohmann::json::array();
  for (float l : losses) loss_json.push_back(number_or_null(l));
  nlohmann::json run = {{"seed", seed},
                        {"timers", timers},
                        {"cupti_overhead", nullptr},
                        {"test_top1", recipe.task == Task::kClassification
                                          ? number_or_null(test.top1)
                                          : nlohmann::json(nullptr)},
                        {"test_loss", number_or_null(test.loss)},
                        {"train_loss", number_or_null(train_loss)},
                        {"losses", loss_json},
                        {"steps", step}};
  if (variant.graph && !t.graph_active()) run["note"] = t.graph_fallback_reason();
  // The planned matrix products of one step (3 x forward x batch; harness/cli/run_command.cpp
  // records it for the families without an analytic count).
  run["planned_flops_per_step"] =
      3.0 * t.forward_flops_per_sample() * static_cast<double>(t.config().batch);
  return run;
}

Status add_device_samples(const Recipe& recipe, const DataSplit& data,
                          const Variant& variant, uint64_t seed, const BenchSettings& st,
                          const std::string& label, nlohmann::json& run) {
  if (st.device != Device::kGpu) return {};
  const std::vector<double> wall_off = samples_of(run["timers"]["wall"]);
  if (wall_off.empty()) return make_error("the untraced run timed no steps");
  // The steps the untraced run timed: wall_block steps per sample, from the warm-up on.
  const int64_t timed = static_cast<int64_t>(wall_off.size()) * st.wall_block;
  TrainerOptions o = trainer_options(variant, seed, st);
  o.device_timers = {DeviceTimerKind::kCupti};  // made before any capture (trainer.h)
  Result<std::unique_ptr<TrainerCore>> made = make_trainer(recipe, data, o);
  if (!made) return made.error();
  TrainerCore& t = **made;
  std::string why;
  DeviceStepTimer* cupti = t.device_timer(DeviceTimerKind::kCupti, &why);
  if (!cupti) return make_error(why);

  std::vector<double> wall_on;
  int64_t step = 0, block_steps = 0;
  Clock::time_point block_start;
  Progress progress(label);
  const int64_t last = std::min(st.total_steps, st.warmup + timed);
  while (step < last) {
    t.begin_epoch();
    const int64_t n = std::min(t.steps_per_epoch(), last - step);
    for (int64_t i = 0; i < n; ++i, ++step) {
      const bool timed_step = step >= st.warmup;
      if (timed_step && block_steps == 0) {
        t.synchronize();
        block_start = Clock::now();
      }
      if (timed_step) cupti->begin_step();
      t.train_step();
      if (timed_step) cupti->end_step();
      if (timed_step && ++block_steps == st.wall_block) {
        t.synchronize();
        wall_on.push_back(ms_since(block_start) / static_cast<double>(block_steps));
        block_steps = 0;
      }
      progress.update(step + 1, last);
      if (interrupt_requested()) {
        progress.finish();
        return make_error(label + ": traced pass stopped by " + interrupt_name());
      }
    }
    t.end_epoch(false);
  }
  progress.finish();
  Result<DeviceStepTimer::Samples> s = cupti->collect();
  if (!s) return s.error();
  nlohmann::json device = timer_json(s->busy_ms);
  if (device.is_null()) return make_error("CUPTI recorded no device activity for the steps");
  device["sum_samples_ms"] = s->sum_ms;
  run["timers"]["device"] = device;
  run["cupti_overhead"] = cupti_overhead_json(wall_on, wall_off);
  return {};
}

nlohmann::json cupti_overhead_json(const std::vector<double>& wall_on_ms,
                                   const std::vector<double>& wall_off_ms) {
  if (wall_on_ms.empty() || wall_off_ms.empty()) return nullptr;
  const double on = median(wall_on_ms), off = median(wall_off_ms);
  return {{"wall_on_ms", on},
          {"wall_off_ms", off},
          {"ratio", off > 0.0 ? number_or_null(on / off) : nlohmann::json(nullptr)},
          {"samples_on_ms", wall_on_ms}};
}

nlohmann::json new_variant(const std::string& name, const std::string& impl,
                           const std::string& dtype, const std::string& target) {
  return {{"name", name},     {"impl", impl},      {"dtype", dtype},
          {"target", target}, {"available", true}, {"unavailable_reason", nullptr},
          {"error", nullptr}, {"runs", nlohmann::json::array()},
          {"summary", summarize_runs(nlohmann::json::array())}};
}

nlohmann::json summarize_runs(const nlohmann::json& runs) {
  nlohmann::json timers;
  for (const char* name : {"wall", "device", "event"}) {
    std::vector<double> pooled;
    for (const auto& r : runs) {
      const auto& tm = r["timers"][name];
      if (tm.is_object())
        for (const auto& v : tm["samples_ms"]) pooled.push_back(v.get<double>());
    }
    nlohmann::json s = timer_json(pooled);
    if (!s.is_null()) s.erase("samples_ms");
    timers[name] = s;
  }
  // CUPTI overhead over the runs that have one: pooled traced against pooled untraced.
  std::vector<double> on, off;
  for (const auto& r : runs) {
    const auto it = r.find("cupti_overhead");
    if (it == r.end() || !it->is_object()) continue;
    const std::vector<double> traced = it->value("samples_on_ms", std::vector<double>{});
    on.insert(on.end(), traced.begin(), traced.end());
    const std::vector<double> w = samples_of(r["timers"]["wall"]);
    off.insert(off.end(), w.begin(), w.end());
  }
  nlohmann::json overhead = cupti_overhead_json(on, off);
  if (!overhead.is_null()) overhead.erase("samples_on_ms");
  std::vector<double> top1, loss;
  for (const auto& r : runs) {
    if (r["test_top1"].is_number()) top1.push_back(r["test_top1"].get<double>());
    if (r["test_loss"].is_number()) loss.push_back(r["test_loss"].get<double>());
  }
  return {{"timers", timers},
          {"cupti_overhead", overhead},
          {"test_top1", seed_stats(top1)},
          {"test_loss", seed_stats(loss)}};
}

nlohmann::json unavailable_variant(const std::string& name, const std::string& dtype,
                                   const std::string& target, const std::string& why) {
  nlohmann::json v = new_variant(name, "noeira", dtype, target);
  v["available"] = false;
  v["unavailable_reason"] = why;
  v["summary"] = summarize_runs(v["runs"]);
  return v;
}

void add_cupti_passes(const Recipe& recipe, const DataSplit& data,
                      const std::vector<Variant>& ran, const BenchSettings& st,
                      nlohmann::json& variants) {
  for (auto& v : variants) {
    const auto spec = std::find_if(ran.begin(), ran.end(),
                                   [&](const Variant& s) { return v["name"] == s.name(); });
    if (spec == ran.end() || v["runs"].empty()) continue;
    for (auto& run : v["runs"]) {
      if (interrupt_requested()) break;  // the remaining runs keep a null device timer
      const uint64_t seed = run["seed"].get<uint64_t>();
      const std::string label = spec->name() + " seed " + std::to_string(seed) + " (CUPTI pass)";
      if (Status s = add_device_samples(recipe, data, *spec, seed, st, label, run); !s) {
        std::fprintf(stderr, "  %s: no device timer: %s\n", label.c_str(),
                     s.error().message.c_str());
        continue;
      }
      const auto& o = run["cupti_overhead"];
      const std::string ms = format_ms(run["timers"]["device"]["median_ms"].get<double>());
      const std::string slower =
          o.is_object() && o["ratio"].is_number()
              ? format_number("%+.1f%%", 100.0 * (o["ratio"].get<double>() - 1.0))
              : "-";
      std::fprintf(stderr, "  %s: device %s ms/step; wall with CUPTI on vs off: %s\n",
                   label.c_str(), ms.c_str(), slower.c_str());
    }
    v["summary"] = summarize_runs(v["runs"]);
  }
}

}  // namespace noeira
