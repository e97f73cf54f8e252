// noeira-bench profile: our variant for warm-up + N steps with every op call attributed
// (kernels/profiling), then each twin mode in its own process under torch.profiler over
// the same steps of the same recipe and data; the table, the traces, the results file.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "harness/cli/cli_options.h"
#include "harness/env/host_info.h"
#include "harness/exit_codes.h"
#include "harness/profile/chrome_trace.h"
#include "harness/profile/op_breakdown.h"
#include "harness/profile/profile_options.h"
#include "harness/profile/profile_table.h"
#include "harness/profile/roofline.h"
#include "harness/results/results.h"
#include "harness/run/results_context.h"
#include "harness/run/variant.h"
#include "harness/twin/twin.h"
#include "harness/twin/twin_runs.h"
#include "models/family.h"
#include "kernels/tf32_switch.h"
#include "nn/checkpoint.h"

namespace noeira {

namespace {

// Our side: warm-up steps untimed, then `steps` steps each bracketed by the profiler (a
// synchronisation closes each, so a device's queue is drained inside its own step).
Result<ProfileSideRecord> profile_ours(const Recipe& recipe, const DataSplit& data,
                                       const Variant& v, const ProfileOptions& o, Device device,
                                       const std::filesystem::path& trace,
                                       std::unique_ptr<OpProfiler>& kept) {
  auto prof = std::make_unique<OpProfiler>();
  TrainerOptions t;
  t.device = device;
  t.threads = o.threads;
  t.seed = 0;
  t.amp = v.dtype == DType::kBF16 ? BF16Policy : NoAMP;
  t.host_batch = v.batch == BatchSource::kHost;
  t.total_steps = o.warmup + o.steps;
  t.op_profiler = prof.get();
  Result<std::unique_ptr<TrainerCore>> made = make_trainer(recipe, data, t);
  if (!made) return made.error();
  TrainerCore& tr = **made;
  const int64_t total = o.warmup + o.steps;
  int64_t step = 0;
  while (step < total) {
    tr.begin_epoch();
    const int64_t n = std::min(tr.steps_per_epoch(), total - step);
    for (int64_t i = 0; i < n; ++i, ++step) {
      const bool profiled = step >= o.warmup;
      if (profiled) {
        tr.synchronize();
        prof->begin_step();
      }
      tr.train_step();
      if (profiled) {
        tr.synchronize();
        prof->end_step();
      }
    }
    if (tr.in_epoch()) tr.end_epoch(false);
  }
  NOEIRA_TRY(prof->collect_device_times());
  ProfileSideRecord side = our_breakdown(*prof, "noeira:" + v.name());
  if (!trace.empty()) {
    NOEIRA_TRY(write_chrome_trace(trace, chrome_trace(*prof, "noeira-bench " + recipe.name + " " + v.name())));
    side.trace = trace.string();
  }
  kept = std::move(prof);
  return side;
}

ProfileSideRecord unavailable_side(const std::string& side, const std::string& reason) {
  ProfileSideRecord s;
  s.side = side;
  s.available = false;
  s.reason = reason;
  return s;
}

}  // namespace

namespace {
int profile_on(const ProfileOptions& o, const Recipe& recipe, Device device, bool budget_only);
}  // namespace

int run_profile(const ProfileOptions& o) {
  Result<Recipe> recipe = load_recipe_for_model(o.model);
  if (!recipe) return report_error(recipe.error().message, kExitUsage);
  Result<Device> device = resolve_target(o.target);
  if (!device) return report_error(device.error().message, kExitUsage);
  // --budget --target gpu on a machine without one: the shapes from a CPU step.
  ProfileOptions opt = o;
  std::string no_gpu;
  if (o.budget && *device == Device::kGpu && !gpu_usable(&no_gpu)) {
    std::printf("noeira-bench profile: no GPU here (%s): one CPU step of the recipe gives the "
                "shapes, the budget is for %s; no twin\n", no_gpu.c_str(), o.budget_device.c_str());
    device = Device::kCpu;
    opt.steps = 1;
    opt.warmup = 0;
    opt.twin = {"none"};
  }
  return profile_on(opt, *recipe, *device, !no_gpu.empty());
}

namespace {

// The profile proper; budget_only: a CPU step for --budget's shapes (no tables of ours).
int profile_on(const ProfileOptions& o, const Recipe& recipe, Device device, bool budget_only) {
  const bool gpu = device == Device::kGpu;
  const std::string target = gpu ? "gpu" : "cpu";
  const FamilyTraits& family = family_traits(recipe);
  const std::string variant_name = !o.variant.empty() ? o.variant : o.dtype == "bf16" ? "bf16" : "eager";
  Result<std::vector<PlannedVariant>> planned = plan_variants(
      {variant_name}, o.dtype == "bf16" ? DType::kBF16 : DType::kF32, {gpu, family, recipe.name});
  if (!planned) return report_error(planned.error().message, kExitUsage);
  if (planned->empty()) return report_error("--variant: nothing to profile", kExitUsage);
  const PlannedVariant& pv = planned->front();
  if (pv.skip) return report_error("--variant " + variant_name + ": " + pv.skip->reason, kExitUsage);
  const Variant variant = pv.variant;
  if (variant.graph)
    return report_error("--variant " + variant_name +
                            ": a replayed graph calls no ops, so nothing can be attributed to "
                            "them; profile its eager twin (--variant " +
                            (variant.dtype == DType::kBF16 ? "bf16" : "eager") +
                            ") or run the graph under nsys",
                        kExitUsage);
  Result<std::vector<std::string>> parsed_modes = parse_twin_modes(o.twin);
  if (!parsed_modes) return report_error(parsed_modes.error().message, kExitUsage);
  const std::vector<std::string> modes = *parsed_modes;
  if (o.steps <= 0) return report_error("--steps must be positive", kExitUsage);
  const std::string out = !o.out.empty() ? o.out : "noeira-profile-" + o.model + "-" + target + "-" + o.dtype + ".json";
  const std::filesystem::path log_dir = out + ".logs";
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  if (ec) return report_error("cannot create " + log_dir.string() + ": " + ec.message(), kExitUsage);
  std::filesystem::path trace_dir;
  if (!o.trace_dir.empty()) {
    trace_dir = o.trace_dir;
    std::filesystem::create_directories(trace_dir, ec);
    if (ec) return report_error("--trace: cannot create " + trace_dir.string() + ": " + ec.message(), kExitUsage);
  }

  // The recipe's quick data set (the CPU scale) unless --dataset names one.
  const DataSource source = make_data_source(o.data);
  const std::string dataset = !o.data.dataset.empty() ? o.data.dataset : recipe.quick_dataset;
  Result<DataSplit> data = load_recipe_data(recipe, dataset, source);
  if (!data) return report_error(data.error().message, kExitFailure);
  const int threads = o.threads > 0 ? o.threads : default_thread_count();
  const std::string dataset_name = family.language_model ? data->corpus.name : data->train.name;
  std::printf("noeira-bench profile: model %s on %s, target %s, variant %s, %lld steps after "
              "%lld warm-up, %d CPU threads\n",
              recipe.name.c_str(), dataset_name.c_str(), target.c_str(), variant.name().c_str(),
              static_cast<long long>(o.steps), static_cast<long long>(o.warmup), threads);
  std::fflush(stdout);

  ProfileRecord rec;
  rec.variant = variant.name();
  rec.warmup = o.warmup;
  rec.steps = o.steps;
  rec.threads = threads;
  const std::filesystem::path our_trace = trace_dir.empty() ? "" : trace_dir / ("noeira-" + variant.name() + ".trace.json");
  std::unique_ptr<OpProfiler> our_profiler;
  Result<ProfileSideRecord> ours = profile_ours(recipe, *data, variant, o, device, our_trace, our_profiler);
  if (!ours) return report_error(ours.error().message, kExitFailure);
  rec.sides.push_back(*ours);

  TwinContext twin_ctx{"", std::nullopt, false, "not run (--twin none)"};
  if (!modes.empty()) {
    const PythonProbe probe = find_python_with_torch(o.python);
    twin_ctx = twin_context(probe, o.python);
    const int64_t spe = std::max<int64_t>(1, steps_per_epoch(recipe, *data));
    TwinPlan plan;
    plan.python = probe.python;
    plan.recipe = recipe.path;
    plan.data_dir = twin_data_dir(dataset_name, source);
    plan.log_dir = log_dir;
    plan.dataset = dataset;
    plan.device = gpu ? "cuda" : "cpu";
    plan.dtype = variant.dtype == DType::kBF16 ? "bf16" : "fp32";
    plan.total_steps = o.warmup + o.steps;
    plan.epochs = static_cast<int>((plan.total_steps + spe - 1) / spe);
    plan.warmup = o.warmup;
    plan.threads = threads;
    plan.timeout_seconds = o.twin_timeout;
    for (const std::string& mode : modes) {
      const std::string side = "twin:" + mode;
      if (!probe.reason.empty()) {
        rec.sides.push_back(unavailable_side(side, probe.reason));
        continue;
      }
      std::printf("  %s ...\n", side.c_str());
      std::fflush(stdout);
      TwinRequest q = plan.request(mode, 0, "twin-" + mode + ".log");
      q.profile_steps = o.steps;
      if (!trace_dir.empty()) q.profile_trace = trace_dir / ("twin-" + mode + ".trace.json");
      const TwinOutcome t = run_twin(q);
      if (!t.ok || !t.available) {
        rec.sides.push_back(unavailable_side(side, t.reason.empty() ? "the twin failed" : t.reason));
        continue;
      }
      ProfileSideRecord s = twin_breakdown(t.result.value("profile", nlohmann::json()), side);
      if (!q.profile_trace.empty() && std::filesystem::exists(q.profile_trace)) s.trace = q.profile_trace.string();
      rec.sides.push_back(std::move(s));
    }
  }
  // The twin runs the same math: its rates use our FLOPs and bytes per category.
  for (ProfileSideRecord& s : rec.sides)
    for (ProfileCategoryRecord& c : s.categories)
      if (const ProfileCategoryRecord* ours_c = rec.sides.front().category(c.category)) {
        c.flops_per_step = ours_c->flops_per_step;
        c.bytes_per_step = ours_c->bytes_per_step;
      }

  ResultsRecord results =
      results_with_context(measurement_context(o.command_line, twin_ctx, nlohmann::json::object()));
  results.config = {target, o.dtype, {0}, o.warmup + o.steps, o.warmup, o.threads, true, {}};
  BenchmarkRecord bench;
  bench.model = recipe.name;
  bench.dataset = dataset_name;
  bench.recipe = recipe.json;
  bench.recipe_hash = json_hash(recipe.json);
  bench.profile = rec;
  results.benchmarks = {bench};
  if (!budget_only) std::printf("\n%s", render_profile_table(rec).c_str());
  if (o.budget) {
    const bool bf16 = variant.dtype == DType::kBF16, tf32 = tf32_from_env();
    std::optional<Roofline> part = gpu ? device_roofline(device_info()) : known_roofline(o.budget_device);
    if (!part)
      std::printf("\nno roofline budget: %s is not a part we know (H200, H100, A100; "
                  "--budget-device names one)\n",
                  gpu ? device_info().value("name", std::string("this GPU")).c_str() : o.budget_device.c_str());
    else
      std::printf("\n%s", render_budget(roofline_budget(*our_profiler, *part, bf16, tf32, gpu), *part,
                                        bf16, tf32).c_str());
  }
  if (Status s = write_results(out, results); !s) return report_error(s.error().message, kExitFailure);
  std::printf("results: %s (twin logs in %s)\n", out.c_str(), log_dir.c_str());
  for (const ProfileSideRecord& s : rec.sides)
    if (!s.trace.empty()) std::printf("trace: %s (load in https://ui.perfetto.dev or chrome://tracing)\n", s.trace.c_str());
  return kExitOk;
}

}  // namespace

}  // namespace noeira
