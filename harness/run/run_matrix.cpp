#include "harness/run/run_options.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>

#include "harness/env/baseline_probe.h"
#include "harness/run/bench_runner.h"
#include "harness/exit_codes.h"
#include "harness/cli/cli_options.h"
#include "harness/env/gpu_clocks.h"
#include "harness/env/host_info.h"
#include "harness/run/flops.h"
#include "harness/report/number_format.h"
#include "harness/run/interrupt.h"
#include "harness/twin/parity.h"
#include "harness/results/partial_results.h"
#include "harness/results/results.h"
#include "harness/results/summary.h"
#include "harness/run/results_context.h"
#include "harness/run/run_order.h"
#include "harness/run/resource_table.h"
#include "harness/run/run_table.h"
#include "harness/run/variant.h"
#include "harness/twin/seed_agreement.h"
#include "harness/twin/twin_runs.h"
#include "kernels/tf32_switch.h"
#include "models/family.h"
#include "nn/checkpoint.h"

namespace noeira {

namespace {

// The results document without its benchmarks: where, with what and how it was measured.
ResultsRecord results_document(const RunOptions& o, const std::string& target,
                               const std::vector<uint64_t>& seeds, int64_t total_steps,
                               int64_t warmup, const TwinContext& twin,
                               const nlohmann::json& probes) {
  ResultsRecord r = results_with_context(measurement_context(o.command_line, twin, probes));
  r.context.run_order = o.order;
  r.config = {target, o.dtype, seeds, total_steps, warmup, o.threads, o.quick,
              {o.min_samples, o.max_noise, o.max_seconds}};
  return r;
}

// The context.twin block, and the plan's python (or why the twin cannot run).
TwinContext probe_twin(const std::string& python, TwinPlan& tp) {
  const PythonProbe probe = find_python_with_torch(python);
  tp.python = probe.python;
  tp.unavailable = probe.reason;
  if (!probe.reason.empty()) std::fprintf(stderr, "  twin unavailable: %s\n", probe.reason.c_str());
  return twin_context(probe, python);
}

}  // namespace

int run_matrix(const RunOptions& o) {
  // ---- Validate everything before any work. ----
  Result<Recipe> recipe = load_recipe_for_model(o.model);
  if (!recipe) return report_error(recipe.error().message, kExitUsage);
  Result<Device> device = resolve_target(o.target);
  if (!device) return report_error(device.error().message, kExitUsage);
  const std::string target = *device == Device::kGpu ? "gpu" : "cpu";
  std::vector<uint64_t> seeds = o.seed_list;
  if (seeds.empty())
    for (int i = 0; i < o.seeds; ++i) seeds.push_back(static_cast<uint64_t>(i));
  const FamilyTraits& family = family_traits(*recipe);
  const bool lm = family.language_model;
  const bool gpu = *device == Device::kGpu;
  Result<std::vector<PlannedVariant>> planned = plan_variants(
      o.variants, o.dtype == "bf16" ? DType::kBF16 : DType::kF32, {gpu, family, recipe->name});
  if (!planned) return report_error(planned.error().message, kExitUsage);
  Result<std::vector<std::string>> parsed_modes = parse_twin_modes(o.twin);
  if (!parsed_modes) return report_error(parsed_modes.error().message, kExitUsage);
  const std::vector<std::string> twin_modes = *parsed_modes;
  const std::optional<RunOrder> parsed_order = parse_run_order(o.order);
  if (!parsed_order)
    return report_error("--order: unknown order '" + o.order + "'; use interleaved or blocked", kExitUsage);
  const RunOrder run_order = *parsed_order;
  if (o.steps > 0 && o.warmup >= o.steps)
    return report_error("--warmup " + std::to_string(o.warmup) + " leaves no timed steps out of --steps " +
                            std::to_string(o.steps),
                        kExitUsage);
  const std::string out_path = !o.out.empty()
                                   ? o.out
                                   : "noeira-results-" + o.model + "-" + target + "-" + o.dtype + ".json";
  const std::filesystem::path log_dir = out_path + ".logs";
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  if (ec)
    return report_error("cannot create the log directory " + log_dir.string() + ": " + ec.message(),
                        kExitUsage);

  // ---- Data, once for every run. ----
  const DataSource source = make_data_source(o.data);
  // --quick runs on the recipe's quick data set (CIFAR-10's shared subset on the CPU)
  // unless --dataset names one.
  const std::string dataset =
      !o.data.dataset.empty() ? o.data.dataset : o.quick ? recipe->quick_dataset : "";
  // Read once for every run: its time goes into each run's time to target (ours; the twin
  // reads the files in every run's process).
  const auto data_t0 = std::chrono::steady_clock::now();
  Result<DataSplit> data = load_recipe_data(*recipe, dataset, source);
  if (!data) return report_error(data.error().message, kExitFailure);
  const double data_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - data_t0).count();
  const int64_t spe = steps_per_epoch(*recipe, *data);
  int64_t total_steps = o.steps > 0 ? o.steps
                        : o.quick && recipe->quick_max_steps > 0
                            ? recipe->quick_max_steps
                            : static_cast<int64_t>(o.quick ? recipe->quick_epochs : recipe->epochs) * spe;
  const std::optional<StepWork> work =
      family.analytic_work ? std::optional(family.analytic_work(*recipe, *data)) : std::nullopt;
  if (lm && o.steps <= 0) {
    total_steps = o.quick ? recipe->gpt.quick_steps : recipe->gpt.steps;
  }
  if (work && o.steps <= 0) {
    // The full recipe is a GPU job: a CPU times a bounded number of steps.
    const int64_t cap = cpu_step_cap(*work, total_steps);
    if (*device == Device::kCpu && total_steps > cap) {
      std::printf("model %s: the full recipe (%lld steps of %s each) is a GPU job; on the CPU "
                  "this run times the first %lld steps (--steps N to choose)\n",
                  recipe->name.c_str(), static_cast<long long>(total_steps),
                  format_flops(work->flops_per_step).c_str(), static_cast<long long>(cap));
      total_steps = cap;
    }
  }
  const int64_t warmup =
      o.warmup >= 0 ? o.warmup : std::min<int64_t>(o.quick ? 5 : 20, std::max<int64_t>(total_steps / 4, 1));
  if (warmup >= total_steps)
    return report_error("--warmup " + std::to_string(warmup) + " leaves no timed steps out of " +
                            std::to_string(total_steps),
                        kExitUsage);

  BenchSettings st;
  st.device = *device;
  st.threads = o.threads;
  st.total_steps = total_steps;
  st.warmup = warmup;
  st.stop.min_samples = o.min_samples;
  st.stop.max_rel_noise = o.max_noise;
  st.stop.max_seconds = o.max_seconds;
  st.stop.max_samples = 0;
  st.wall_block = *device == Device::kGpu ? 10 : 1;
  // Time to target, energy (harness/results/resource_records.h): the recipe's target (a
  // --quick run's own where the recipe names one), samples or tokens per step.
  const std::optional<double> target_score =
      o.quick && recipe->quick_target_score ? recipe->quick_target_score : recipe->target_score;
  if (target_score) {
    st.target_metric = family.score == FamilyScore::kValidationLoss ? "val_loss" : "test_top1";
    st.target_score = *target_score;
  }
  st.data_seconds = data_seconds;
  st.units_per_step = work ? work->tokens_per_step : recipe->batch;
  st.energy_unit = work ? "token" : "sample";

  const int threads = o.threads > 0 ? o.threads : default_thread_count();
  const std::string dataset_name = lm ? data->corpus.name : data->train.name;
  std::printf("noeira-bench run: model %s on %s, target %s, %s, seeds", recipe->name.c_str(),
              dataset_name.c_str(), target.c_str(), o.dtype.c_str());
  for (uint64_t s : seeds) std::printf(" %llu", static_cast<unsigned long long>(s));
  std::printf(", %lld steps per run (warm-up %lld), %d CPU threads, %s order\n",
              static_cast<long long>(total_steps), static_cast<long long>(warmup), threads,
              run_order_name(run_order));
  std::fflush(stdout);

  // ---- Our variants. ----
  BenchmarkRecord bench;
  bench.model = recipe->name;
  bench.dataset = dataset_name;
  bench.recipe = recipe->json;
  bench.recipe_hash = json_hash(recipe->json);
  if (work) {
    bench.tokens_per_step = work->tokens_per_step;
    bench.flops_per_step = work->flops_per_step;
  }
  {
    const std::string gpu_name = gpu ? device_record(device_info()).name : "";
    // fp32 runs use the TF32 tensor cores unless NOEIRA_TF32=0: their MFU is against that
    // peak (against the CUDA cores' an H200 gpt run read 105%).
    const bool tf32 = tf32_from_env();
    const std::optional<double> p32 = peak_flops(gpu_name, tf32 ? "tf32" : "fp32"),
                                p16 = peak_flops(gpu_name, "bf16");
    if (p32 && p16) bench.peak_flops = PeakFlops{*p32, *p16, gpu_name, tf32 ? "tf32" : "fp32"};
  }
  // The whole matrix is planned first, so that the results file written after every
  // finished seed lists what is still pending (harness/results/partial_results.h).
  std::vector<Variant> runnable;  // in bench.variants order
  for (const PlannedVariant& p : *planned) {
    const Variant& variant = p.variant;
    if (p.skip) {
      bench.variants.push_back(
          unavailable_variant(variant.name(), variant.dtype_name(), target, p.skip->reason));
      continue;
    }
    VariantRecord& v =
        bench.variants.emplace_back(new_variant(variant.name(), "noeira", variant.dtype_name(), target));
    plan_seeds(v, seeds);
    runnable.push_back(variant);
  }
  TwinPlan tp;
  tp.recipe = recipe->path;
  tp.data_dir = twin_data_dir(dataset_name, source);
  tp.log_dir = log_dir;
  tp.dataset = dataset;
  tp.device = gpu ? "cuda" : "cpu";
  tp.dtype = o.dtype;
  tp.target = target;
  tp.seeds = seeds;
  tp.epochs = static_cast<int>((total_steps + spe - 1) / spe);
  tp.total_steps = total_steps;
  tp.warmup = warmup;
  tp.threads = threads;
  tp.timeout_seconds = o.twin_timeout;
  tp.target_metric = st.target_metric;
  tp.target_score = st.target_score;
  TwinContext twin_ctx{"", std::nullopt, false, "not run (--twin none)"};
  if (!twin_modes.empty() || o.parity) twin_ctx = probe_twin(o.python, tp);
  const size_t first_twin = bench.variants.size();
  for (const std::string& mode : twin_modes) bench.variants.push_back(plan_twin_mode(tp, mode));

  // ---- Baseline probes, both sides, before anything is timed. ----
  const nlohmann::json probes = measure_baseline_probes(
      *device, threads, twin_modes.empty() ? "" : tp.python, log_dir, std::min(o.twin_timeout, 120.0));
  std::printf("%s", render_probes(probes).c_str());
  for (const std::string& w : probe_warnings(probes)) std::printf("warning: %s\n", w.c_str());
  std::fflush(stdout);

  ResultsRecord results = results_document(o, target, seeds, total_steps, warmup, twin_ctx, probes);
  const ResultsWriter writer(out_path);
  auto save_progress = [&] {
    results.benchmarks = {bench};
    if (Status s = writer.write_partial(results); !s)
      std::fprintf(stderr, "  warning: %s\n", s.error().message.c_str());
  };
  save_progress();

  // ---- The runs, in the chosen order (harness/run/run_order.h): ours and the twin's
  // alternate seed by seed unless --order blocked. Each twin run is its own process. ----
  const std::vector<RunSlot> slots = plan_run_order(runnable.size(), twin_modes.size(), seeds, run_order);
  auto record_of = [&](const RunSlot& s) -> VariantRecord& {
    return s.twin ? bench.variants[first_twin + s.variant] : *bench.variant(runnable[s.variant].name());
  };
  // NVML's clocks around each variant: from its first run to its last (GPU only).
  std::map<std::pair<bool, size_t>, size_t> last_slot;
  for (size_t k = 0; k < slots.size(); ++k) last_slot[{slots[k].twin, slots[k].variant}] = k;
  std::map<std::pair<bool, size_t>, ClockReading> clocks_before;
  auto close_clocks = [&](const RunSlot& s) {
    const auto it = clocks_before.find({s.twin, s.variant});
    if (!gpu || it == clocks_before.end()) return;
    VariantRecord& v = record_of(s);
    v.clocks = clocks_since(it->second, v.name);
    clocks_before.erase(it);
  };
  bool our_failure = false;
  int64_t sequence = 0;  // runs[].sequence: the place of each recorded run in the order
  for (size_t k = 0; k < slots.size() && !interrupt_requested(); ++k) {
    const RunSlot& s = slots[k];
    VariantRecord& v = record_of(s);
    if (!v.available || (v.error && !v.error->empty())) continue;  // failed or unavailable earlier
    if (gpu && !clocks_before.count({s.twin, s.variant})) clocks_before[{s.twin, s.variant}] = read_gpu_clocks();
    if (s.twin) {
      const TwinSeedOutcome out = run_twin_seed(tp, twin_modes[s.variant], s.seed, v, sequence);
      if (out == TwinSeedOutcome::kStopped) break;
      if (out == TwinSeedOutcome::kRecorded) ++sequence;
      save_progress();
      if (out == TwinSeedOutcome::kVariantDone || last_slot[{s.twin, s.variant}] == k) close_clocks(s);
      continue;
    }
    const Variant& variant = runnable[s.variant];
    const std::string label = variant.name() + " seed " + std::to_string(s.seed);
    Result<RunRecord> run = run_our_variant(*recipe, *data, variant, s.seed, st, label);
    if (!run && interrupt_requested()) {  // this seed and the rest stay pending
      std::fprintf(stderr, "  %s\n", run.error().message.c_str());
      break;
    }
    if (!run) {
      v.error = run.error().message;
      drop_pending(v);
      our_failure = true;
      std::fprintf(stderr, "  %s failed: %s\n", label.c_str(), run.error().message.c_str());
      save_progress();
      close_clocks(s);
      continue;
    }
    std::fputs(seed_line(label, *run, family.score).c_str(), stderr);
    run->sequence = sequence++;
    record_run(v, std::move(run).value());
    save_progress();
    if (last_slot[{s.twin, s.variant}] == k) close_clocks(s);
  }
  // The other families: FLOPs per step from the planned matrix products (3 x forward).
  if (!work)
    for (const VariantRecord& v : bench.variants)
      if (!v.runs.empty() && v.runs[0].planned_flops_per_step) {
        bench.flops_per_step = v.runs[0].planned_flops_per_step;
        break;
      }
  // Device (CUPTI) samples in a separate traced pass per run, after every untraced run:
  // CUPTI slows each launch on the host, so it must not touch the wall and event samples.
  if (gpu && !interrupt_requested()) {
    add_cupti_passes(*recipe, *data, runnable, st, bench.variants);
    save_progress();
  }

  std::string parity_note;
  if (o.parity && !interrupt_requested()) {
    const ParityOutcome p = run_parity(*recipe, *data, st, seeds.front(), tp, recipe->parity_steps);
    bench.parity = p.record;
    parity_note = p.note;
  }
  bench.seed_agreement = seed_agreement(bench.variants, o.dtype);

  // ---- Results file, then the table. ----
  results.benchmarks = {bench};
  const bool stopped = interrupt_requested();
  if (Status s = stopped ? writer.write_partial(results, interrupt_name()) : writer.write_complete(results);
      !s)
    return report_error(s.error().message, kExitFailure);

  std::printf("\n%s", render_run_table(bench, target, results.context.host.cores, results.context.run_order).c_str());
  std::printf("%s", render_resource_table(bench, target).c_str());  // memory, time to target, energy
  std::printf("%s", render_run_notes(results, bench, target, parity_note).c_str());
  std::printf("results: %s (logs in %s)\n", out_path.c_str(), log_dir.c_str());
  if (stopped) return interrupted_exit_code();
  if (our_failure) return kExitFailure;
  if (bench.parity && !bench.parity->passed) return kExitFailure;
  if (o.parity && !bench.parity) return kExitFailure;
  return kExitOk;
}

}  // namespace noeira
