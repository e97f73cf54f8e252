#include "harness/bench_runner.h"

#include <chrono>
#include <cmath>

#include "harness/progress.h"

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

}  // namespace

nlohmann::json timer_json(const std::vector<double>& samples) {
  if (samples.empty()) return nullptr;
  const SampleSummary s = summarize(samples);
  return {{"samples_ms", samples}, {"median_ms", s.median}, {"q1_ms", s.q1},
          {"q3_ms", s.q3},         {"cv", number_or_null(s.cv)}, {"n", s.n}};
}

Result<nlohmann::json> run_our_variant(const Recipe& recipe, const DataSplit& data,
                                       const VariantSpec& variant, uint64_t seed,
                                       const BenchSettings& st, const std::string& label) {
  TrainerOptions o;
  o.device = st.device;
  o.threads = st.threads;
  o.seed = seed;
  o.use_train_cuda_graph = variant.graph;
  o.amp = variant.dtype == "bf16" ? BF16Policy : NoAMP;
  o.total_steps = st.total_steps;
  if (st.device == Device::kGpu)
    o.device_timers = {DeviceTimerKind::kCupti, DeviceTimerKind::kEvent};
  Result<std::unique_ptr<Trainer>> made = make_trainer(recipe, data, o);
  if (!made) return made.error();
  Trainer& t = **made;
  DeviceStepTimer* cupti = t.device_timer(DeviceTimerKind::kCupti);
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
      if (timed && cupti) cupti->begin_step();
      if (timed && events) events->begin_step();
      t.train_step();
      if (timed && events) events->end_step();
      if (timed && cupti) cupti->end_step();
      if (timed && ++block_steps == st.wall_block) {
        t.synchronize();
        wall.push_back(ms_since(block_start) / static_cast<double>(block_steps));
        block_steps = 0;
        if (st.stop.done(wall, ms_since(timing_start) / 1000.0)) sampling = false;
      }
      progress.update(step + 1, st.total_steps);
    }
    const EpochStats e = t.end_epoch(false);
    losses.insert(losses.end(), e.step_losses.begin(), e.step_losses.end());
    train_loss = e.train_loss;
  }
  progress.finish();
  const EvalStats test = t.evaluate();

  nlohmann::json timers = {{"wall", timer_json(wall)}, {"device", nullptr}, {"event", nullptr}};
  if (cupti) {
    Result<DeviceStepTimer::Samples> s = cupti->collect();
    if (s) {
      timers["device"] = timer_json(s->busy_ms);
      if (!timers["device"].is_null()) timers["device"]["sum_samples_ms"] = s->sum_ms;
    }
  }
  if (events) {
    Result<DeviceStepTimer::Samples> s = events->collect();
    if (s) timers["event"] = timer_json(s->sum_ms);
  }
  nlohmann::json loss_json = nlohmann::json::array();
  for (float l : losses) loss_json.push_back(number_or_null(l));
  nlohmann::json run = {{"seed", seed},
                        {"timers", timers},
                        {"test_top1", recipe.task == Task::kClassification
                                          ? number_or_null(test.top1)
                                          : nlohmann::json(nullptr)},
                        {"test_loss", number_or_null(test.loss)},
                        {"train_loss", number_or_null(train_loss)},
                        {"losses", loss_json},
                        {"steps", step}};
  if (variant.graph && !t.graph_active()) run["note"] = t.graph_fallback_reason();
  return run;
}

nlohmann::json new_variant(const std::string& name, const std::string& impl,
                           const std::string& dtype, const std::string& target) {
  return {{"name", name},     {"impl", impl},      {"dtype", dtype},
          {"target", target}, {"available", true}, {"unavailable_reason", nullptr},
          {"error", nullptr}, {"runs", nlohmann::json::array()}};
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
  std::vector<double> top1, loss;
  for (const auto& r : runs) {
    if (r["test_top1"].is_number()) top1.push_back(r["test_top1"].get<double>());
    if (r["test_loss"].is_number()) loss.push_back(r["test_loss"].get<double>());
  }
  return {{"timers", timers}, {"test_top1", seed_stats(top1)}, {"test_loss", seed_stats(loss)}};
}

}  // namespace noeira
