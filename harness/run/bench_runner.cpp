#include "harness/run/bench_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>

#include "harness/env/cpu_load.h"
#include "harness/env/energy_meter.h"
#include "harness/env/process_memory.h"
#include "harness/run/interrupt.h"
#include "harness/report/number_format.h"
#include "harness/run/progress.h"
#include "harness/results/summary.h"

namespace noeira {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
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

// Time to target (harness/results/resource_records.h): each evaluation's score against the
// recipe's target; the first that reaches it stops the clock that started at `origin`.
class TargetClock {
 public:
  TargetClock(const BenchSettings& st, Clock::time_point origin) : st_(st), origin_(origin) {
    rec_.metric = st.target_metric;
    rec_.target = st.target_score;
    rec_.data_seconds = st.data_seconds;
  }
  bool tracking() const { return !st_.target_metric.empty(); }
  bool reached() const { return rec_.reached; }
  void evaluated(const EvalStats& e, int64_t step) {
    if (!tracking() || rec_.reached) return;
    ++rec_.evaluations;
    const bool top1 = rec_.metric == "test_top1";
    const double score = top1 ? e.top1 : e.loss;
    if (!std::isfinite(score) || (top1 ? score < rec_.target : score > rec_.target)) return;
    rec_.reached = true;
    rec_.seconds = st_.data_seconds + std::chrono::duration<double>(Clock::now() - origin_).count();
    rec_.step = step;
    rec_.score = score;
  }
  Optional<TimeToTargetRecord> record(int64_t steps) const {
    if (!tracking()) return std::nullopt;
    TimeToTargetRecord r = rec_;
    r.steps = steps;
    return r;
  }

 private:
  const BenchSettings& st_;
  Clock::time_point origin_;
  TimeToTargetRecord rec_;
};

// The memory plan by category, the resident-set peak since `rss_reset`, and on the GPU
// the device bytes in use now (the trainer alive: after planning nothing allocates).
MemoryRecord memory_of(const TrainerCore& t, bool rss_reset, std::optional<int64_t> device_before,
                       Device device) {
  MemoryRecord m;
  const MemoryPlan& plan = t.plan();
  for (size_t c = 0; c < kMemCategoryCount; ++c)
    m.plan_bytes[mem_category_name(static_cast<MemCategory>(c))] =
        static_cast<int64_t>(plan.bytes(static_cast<MemCategory>(c)));
  m.plan_total_bytes = static_cast<int64_t>(plan.total_bytes());
  const PeakRss rss = read_peak_rss(rss_reset);
  m.peak_rss_bytes = rss.bytes;
  m.rss_method = rss.method;
  if (device == Device::kGpu) {
    m.device_bytes_in_use = device_bytes_in_use();
    if (m.device_bytes_in_use && device_before) m.device_bytes_run = *m.device_bytes_in_use - *device_before;
    if (!m.device_bytes_in_use) m.note = "cudaMemGetInfo failed: no device bytes";
  }
  return m;
}

}  // namespace

Result<RunRecord> run_our_variant(const Recipe& recipe, const DataSplit& data,
                                  const Variant& variant, uint64_t seed, const BenchSettings& st,
                                  const std::string& label) {
  TrainerOptions o = trainer_options(variant, seed, st);
  if (st.device == Device::kGpu) o.device_timers = {DeviceTimerKind::kEvent};  // CUPTI off
  // The run's first touch of the data (placing it in the trainer's arena; the process read
  // the files once before, st.data_seconds), its memory peak from here, its energy meter.
  const Clock::time_point origin = Clock::now();
  TargetClock target(st, origin);
  const bool rss_reset = reset_peak_rss();
  const std::optional<int64_t> device_before =
      st.device == Device::kGpu ? device_bytes_in_use() : std::nullopt;
  EnergyMeter meter = EnergyMeter::for_target(st.device == Device::kGpu);
  EnergyWindow energy(meter);
  std::optional<double> joules;
  int64_t energy_steps = 0;
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
  // The machine's load over the measured window: read just before the first timed step
  // and just after the last sample (outside the clock).
  std::optional<CpuLoadSnapshot> load_start, load_end;
  Progress progress(label);
  while (step < st.total_steps) {
    t.begin_epoch();
    const int64_t n = std::min(t.steps_per_epoch(), st.total_steps - step);
    for (int64_t i = 0; i < n; ++i, ++step) {
      const bool timed = sampling && step >= st.warmup;
      if (timed && block_steps == 0) {
        t.synchronize();
        if (wall.empty()) load_start = read_cpu_load();
        block_start = Clock::now();
        if (wall.empty()) {
          timing_start = block_start;
          if (meter.available()) energy.start();
        }
      }
      if (timed && events) events->begin_step();
      t.train_step();
      if (timed && events) events->end_step();
      if (timed && ++block_steps == st.wall_block) {
        t.synchronize();
        wall.push_back(ms_since(block_start) / static_cast<double>(block_steps));
        block_steps = 0;
        if (st.stop.done(wall, ms_since(timing_start) / 1000.0)) {
          sampling = false;
          if (energy.started()) {
            joules = energy.stop();
            energy_steps = static_cast<int64_t>(wall.size()) * st.wall_block;
          }
        }
        if (!sampling || step + 1 == st.total_steps) load_end = read_cpu_load();
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
    // Time to target: an evaluation after every epoch (the gpt family: every
    // eval_interval) until the target is reached, as MLPerf evaluates; its time is in the
    // time to target and left out of the step samples and the energy of the steps.
    if (target.tracking() && !target.reached() && step < st.total_steps) {
      const Clock::time_point e0 = Clock::now();
      energy.pause();
      target.evaluated(t.evaluate(), step);
      energy.resume();
      const Clock::duration spent = Clock::now() - e0;
      block_start += spent;
      timing_start += spent;
    }
  }
  progress.finish();
  if (load_start && !load_end) load_end = read_cpu_load();
  if (energy.started()) {  // the run ended while still sampling
    t.synchronize();
    joules = energy.stop();
    energy_steps = static_cast<int64_t>(wall.size()) * st.wall_block + block_steps;
  }
  const EvalStats test = t.evaluate();
  target.evaluated(test, step);

  RunRecord run;
  run.seed = seed;
  run.timers.wall = timer_record(wall);
  if (events) {
    Result<DeviceStepTimer::Samples> s = events->collect();
    if (s) run.timers.event = timer_record(s->sum_ms);
  }
  run.cupti_overhead.emplace();  // null until the traced pass
  if (load_start && load_end)
    if (const CpuLoadWindow w = cpu_load_between(*load_start, *load_end); !w.empty()) run.cpu_load = w;
  if (recipe.task == Task::kClassification) run.test_top1 = finite_or_null(test.top1);
  run.test_loss = finite_or_null(test.loss);
  run.train_loss = finite_or_null(train_loss);
  for (float l : losses) run.losses.push_back(finite_or_null(l));
  run.steps = step;
  if (variant.graph && !t.graph_active()) run.note = t.graph_fallback_reason();
  // The planned matrix products of one step (3 x forward x batch; run_matrix records it
  // for the families without an analytic count).
  run.planned_flops_per_step =
      3.0 * t.forward_flops_per_sample() * static_cast<double>(t.config().batch);
  // Peak memory, time to target, energy (harness/results/resource_records.h).
  run.memory = memory_of(t, rss_reset, device_before, st.device);
  run.time_to_target = target.record(step);
  if (!meter.available())
    run.energy = energy_unavailable(meter.why());
  else if (!joules)
    run.energy = energy_unavailable(!meter.why().empty()    ? meter.why()
                                    : !energy.why().empty() ? energy.why()
                                                            : "no timed steps to measure");
  else
    run.energy = energy_record(meter.source(), meter.scope(), *joules, energy_steps, st.units_per_step,
                               st.energy_unit);
  return run;
}

Status add_device_samples(const Recipe& recipe, const DataSplit& data, const Variant& variant,
                          uint64_t seed, const BenchSettings& st, const std::string& label,
                          RunRecord& run) {
  if (st.device != Device::kGpu) return {};
  const std::vector<double> wall_off = run.timers.wall ? run.timers.wall->samples_ms : std::vector<double>{};
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
  Nullable<TimerRecord> device = timer_record(s->busy_ms);
  if (!device) return make_error("CUPTI recorded no device activity for the steps");
  device->sum_samples_ms = s->sum_ms;
  run.timers.device = std::move(device);
  run.cupti_overhead = cupti_overhead(wall_on, wall_off);
  return {};
}

void add_cupti_passes(const Recipe& recipe, const DataSplit& data, const std::vector<Variant>& ran,
                      const BenchSettings& st, std::vector<VariantRecord>& variants) {
  for (VariantRecord& v : variants) {
    const auto variant = std::find_if(ran.begin(), ran.end(),
                                      [&](const Variant& r) { return v.name == r.name(); });
    if (variant == ran.end() || v.runs.empty()) continue;
    for (RunRecord& run : v.runs) {
      if (interrupt_requested()) break;  // the remaining runs keep a null device timer
      const std::string label =
          variant->name() + " seed " + std::to_string(run.seed) + " (CUPTI pass)";
      if (Status s = add_device_samples(recipe, data, *variant, run.seed, st, label, run); !s) {
        std::fprintf(stderr, "  %s: no device timer: %s\n", label.c_str(),
                     s.error().message.c_str());
        continue;
      }
      const Nullable<double> ratio =
          run.cupti_overhead && *run.cupti_overhead ? (*run.cupti_overhead)->stats.ratio : std::nullopt;
      const std::string slower = ratio ? format_number("%+.1f%%", 100.0 * (*ratio - 1.0)) : "-";
      std::fprintf(stderr, "  %s: device %s ms/step; wall with CUPTI on vs off: %s\n",
                   label.c_str(), format_ms(run.timers.device->stats.median_ms).c_str(),
                   slower.c_str());
    }
    v.summary = summarize_runs(v.runs);
  }
}

}  // namespace noeira
