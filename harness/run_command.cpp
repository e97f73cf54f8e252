#include "harness/run_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <ctime>
#include <memory>
#include <sstream>

#include "harness/bench_runner.h"
#include "harness/scaling_runner.h"
#include "harness/cli.h"
#include "harness/cli_options.h"
#include "harness/gpu_clocks.h"
#include "harness/host_info.h"
#include "harness/lm_work.h"
#include "harness/number_format.h"
#include "harness/parity.h"
#include "harness/results.h"
#include "harness/results_access.h"
#include "harness/run_table.h"
#include "harness/seed_agreement.h"
#include "harness/twin_runs.h"
#include "nn/checkpoint.h"

namespace noeira {

namespace {

struct RunOptions {
  std::string model = "mlp";
  std::string dtype = "fp32";
  std::string target = "auto";
  std::vector<std::string> variants;  // empty = every variant the target supports
  int seeds = 3;
  std::vector<uint64_t> seed_list;
  int64_t steps = 0;  // 0 = the recipe's full training
  int64_t warmup = -1;
  std::vector<std::string> twin = {"eager", "compiled", "graphs"};
  std::string python;
  std::string out;
  bool quick = false;
  bool parity = false;
  int threads = 0;
  DataOptions data;
  int64_t min_samples = 100;
  double max_noise = 0.02;
  double max_seconds = 60.0;
  double twin_timeout = 900.0;
  std::string command_line;
  std::vector<int> ranks_list;  // the scaling benchmark (harness/scaling_runner.h)
  std::vector<int> zero_list = {0};
};

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

int run_run(const RunOptions& o) {
  // ---- Validate everything before any work. ----
  Result<Recipe> recipe = load_recipe_for_model(o.model);
  if (!recipe) return report_error(recipe.error().message, kExitUsage);
  Result<Device> device = resolve_target(o.target);
  if (!device) return report_error(device.error().message, kExitUsage);
  const std::string target = *device == Device::kGpu ? "gpu" : "cpu";
  std::vector<uint64_t> seeds = o.seed_list;
  if (seeds.empty())
    for (int i = 0; i < o.seeds; ++i) seeds.push_back(static_cast<uint64_t>(i));
  // bf16 runs keep the fp32 variants in the matrix: their times are the baseline.
  const bool lm = recipe->family == "gpt";
  std::vector<std::string> variants = o.variants;
  if (variants.empty()) {
    variants = {"eager", "graph"};
    if (o.dtype == "bf16") variants.insert(variants.end(), {"bf16", "bf16+graph"});
    if (lm) variants.push_back("host-batch");
  }
  for (const std::string& v : variants) {
    if (v != "eager" && v != "graph" && v != "bf16" && v != "bf16+graph" && v != "host-batch")
      return report_error("--variants: unknown variant '" + v +
                              "'; known: eager, graph, bf16, bf16+graph, host-batch (gpt family)",
                          kExitUsage);
    if (v == "host-batch" && !lm)
      return report_error("--variants: host-batch is a gpt-family variant (the batch built on the "
                          "host); model " + recipe->name + " gathers its batches on the device",
                          kExitUsage);
  }
  std::vector<std::string> twin_modes;
  for (const std::string& m : o.twin) {
    if (m == "none") continue;
    if (m != "eager" && m != "compiled" && m != "graphs")
      return report_error("--twin: unknown mode '" + m + "'; use eager, compiled, graphs or none",
                          kExitUsage);
    twin_modes.push_back(m);
  }
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
  Result<DataSplit> data = load_recipe_data(*recipe, dataset, source);
  if (!data) return report_error(data.error().message, kExitFailure);
  const int64_t spe = steps_per_epoch(*recipe, *data);
  int64_t total_steps = o.steps > 0 ? o.steps
                        : o.quick && recipe->quick_max_steps > 0
                            ? recipe->quick_max_steps
                            : static_cast<int64_t>(o.quick ? recipe->quick_epochs : recipe->epochs) * spe;
  const LmWork work = lm ? lm_work(*recipe, data->corpus) : LmWork{};
  if (lm && o.steps <= 0) {
    total_steps = o.quick ? recipe->gpt.quick_steps : recipe->gpt.steps;
    // The full recipe is a GPU job: a CPU times a bounded number of steps.
    const int64_t cap = cpu_lm_step_cap(work, total_steps);
    if (*device == Device::kCpu && total_steps > cap) {
      std::printf("model %s: the full recipe (%lld steps of %s each) is a GPU job; on the CPU "
                  "this run times the first %lld steps (--steps N to choose)\n",
                  recipe->name.c_str(), static_cast<long long>(total_steps),
                  format_flops(work.flops_per_step).c_str(), static_cast<long long>(cap));
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

  const int threads = o.threads > 0 ? o.threads : default_thread_count();
  const std::string dataset_name = lm ? data->corpus.name : data->train.name;
  std::printf("noeira-bench run: model %s on %s, target %s, %s, seeds", recipe->name.c_str(),
              dataset_name.c_str(), target.c_str(), o.dtype.c_str());
  for (uint64_t s : seeds) std::printf(" %llu", static_cast<unsigned long long>(s));
  std::printf(", %lld steps per run (warm-up %lld), %d CPU threads\n",
              static_cast<long long>(total_steps), static_cast<long long>(warmup), threads);
  std::fflush(stdout);

  // ---- Our variants. ----
  nlohmann::json bench = {{"model", recipe->name},
                          {"dataset", dataset_name},
                          {"recipe", recipe->json},
                          {"recipe_hash", json_hash(recipe->json)},
                          {"variants", nlohmann::json::array()},
                          {"parity", nullptr},
                          {"seed_agreement", nullptr}};
  if (lm) {
    bench["tokens_per_step"] = work.tokens_per_step;
    bench["flops_per_step"] = work.flops_per_step;
  }
  {
    const nlohmann::json dev = device_info();
    const std::string gpu_name = *device == Device::kGpu ? dev.value("name", "") : "";
    const std::optional<double> p32 = peak_flops(gpu_name, "fp32"), p16 = peak_flops(gpu_name, "bf16");
    if (p32 && p16) bench["peak_flops"] = {{"fp32", *p32}, {"bf16", *p16}, {"device", gpu_name}};
  }
  bool our_failure = false;
  const bool gpu = *device == Device::kGpu;
  std::vector<VariantSpec> ran;  // our variants in bench["variants"] order, for the CUPTI pass
  for (const std::string& name : variants) {
    const bool graph = name == "graph" || name == "bf16+graph";
    const std::string dtype = name.rfind("bf16", 0) == 0 ? "bf16" : "fp32";
    VariantSpec spec{name, graph, dtype, name == "host-batch"};
    if (spec.graph && *device != Device::kGpu) {
      bench["variants"].push_back(unavailable_variant(
          name, dtype, target, "CUDA graphs need the gpu target"));
      continue;
    }
    nlohmann::json v = new_variant(name, "noeira", dtype, target);
    const ClockReading clocks_before = gpu ? read_gpu_clocks() : ClockReading{};
    for (uint64_t seed : seeds) {
      const std::string label = name + " seed " + std::to_string(seed);
      Result<nlohmann::json> run = run_our_variant(*recipe, *data, spec, seed, st, label);
      if (!run) {
        v["error"] = run.error().message;
        our_failure = true;
        std::fprintf(stderr, "  %s failed: %s\n", label.c_str(), run.error().message.c_str());
        break;
      }
      const auto& w = (*run)["timers"]["wall"];
      const char* score = lm ? "val loss" : "test top1";
      const auto& value = lm ? (*run)["test_loss"] : (*run)["test_top1"];
      std::fprintf(stderr, "  %s: %s ms/step, %s %s\n", label.c_str(),
                   w.is_object() ? format_ms(w["median_ms"].get<double>()).c_str() : "-", score,
                   value.is_number()
                       ? format_number(lm ? "%.4f" : "%.2f", value.get<double>()).c_str()
                       : "-");
      v["runs"].push_back(std::move(run).value());
    }
    v["summary"] = summarize_runs(v["runs"]);
    if (gpu) record_variant_clocks(v, clocks_before);
    bench["variants"].push_back(v);
    ran.push_back(spec);
  }
  // The other families: FLOPs per step from the planned matrix products (3 x forward).
  if (!lm)
    for (const auto& v : bench["variants"])
      if (!v["runs"].empty() && v["runs"][0].contains("planned_flops_per_step")) {
        bench["flops_per_step"] = v["runs"][0]["planned_flops_per_step"];
        break;
      }
  // Device (CUPTI) samples in a separate traced pass per run, after every untraced run:
  // CUPTI slows each launch on the host, so it must not touch the wall and event samples.
  if (*device == Device::kGpu) add_cupti_passes(*recipe, *data, ran, st, bench["variants"]);

  // ---- The twin. ----
  TwinPlan tp;
  tp.recipe = recipe->path;
  tp.data_dir = twin_data_dir(dataset_name, source);
  tp.log_dir = log_dir;
  tp.dataset = dataset;
  tp.device = *device == Device::kGpu ? "cuda" : "cpu";
  tp.dtype = o.dtype;
  tp.target = target;
  tp.seeds = seeds;
  tp.epochs = static_cast<int>((total_steps + spe - 1) / spe);
  tp.total_steps = total_steps;
  tp.warmup = warmup;
  tp.threads = threads;
  tp.timeout_seconds = o.twin_timeout;
  nlohmann::json twin_ctx = {{"python", ""}, {"torch_version", nullptr}, {"available", false},
                             {"reason", "not run (--twin none)"}};
  if (!twin_modes.empty() || o.parity) {
    const PythonProbe probe = find_python_with_torch(o.python);
    tp.python = probe.python;
    tp.unavailable = probe.reason;
    twin_ctx = {{"python", probe.python.empty() ? (o.python.empty() ? "python3" : o.python) : probe.python},
                {"torch_version", probe.torch_version.empty() ? nlohmann::json(nullptr) : nlohmann::json(probe.torch_version)},
                {"available", probe.reason.empty()},
                {"reason", probe.reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(probe.reason)}};
    if (!probe.reason.empty()) std::fprintf(stderr, "  twin unavailable: %s\n", probe.reason.c_str());
  }
  for (const std::string& mode : twin_modes) bench["variants"].push_back(run_twin_mode(tp, mode));

  std::string parity_note;
  if (o.parity) {
    const ParityOutcome p = run_parity(*recipe, *data, st, seeds.front(), tp, recipe->parity_steps);
    bench["parity"] = p.json;
    parity_note = p.note;
  }
  bench["seed_agreement"] = seed_agreement(bench["variants"], o.dtype);

  // ---- Results file, then the table. ----
  const nlohmann::json build = build_info();
  const nlohmann::json host = host_info();
  nlohmann::json results = {
      {"schema_version", kResultsSchemaVersion},
      {"tool", "noeira-bench"},
      {"tool_version", "0.1.0"},
      {"created_utc", utc_now()},
      {"context", {{"command_line", o.command_line},
                   {"git_sha", build.value("git_sha", "")},
                   {"git_dirty", build.value("git_dirty", false)},
                   {"host", host},
                   {"build", build},
                   {"device", device_info()},
                   {"twin", twin_ctx},
                   {"warnings", environment_warnings(host, build)}}},
      {"config", {{"target", target},
                  {"dtype", o.dtype},
                  {"seeds", seeds},
                  {"steps", total_steps},
                  {"warmup", warmup},
                  {"threads", o.threads},
                  {"quick", o.quick},
                  {"stopping", {{"min_samples", o.min_samples},
                                {"max_rel_noise", o.max_noise},
                                {"max_seconds", o.max_seconds}}}}},
      {"benchmarks", nlohmann::json::array({bench})}};
  if (Status s = write_results(out_path, results); !s)
    return report_error(s.error().message, kExitFailure);

  std::printf("\n%s", render_run_table(bench, target).c_str());
  std::printf("%s", render_warnings(results["context"]["warnings"]).c_str());
  if (!bench["parity"].is_null()) {
    std::printf("%s\n", parity_line(bench["parity"]).c_str());
  } else if (!parity_note.empty()) {
    std::printf("%s\n", parity_note.c_str());
  }
  if (!bench["seed_agreement"].is_null())
    std::printf("seeds: %s [%s, p = %s]\n", bench["seed_agreement"]["note"].get<std::string>().c_str(),
                bench["seed_agreement"]["test"].get<std::string>().c_str(),
                format_p(bench["seed_agreement"]["p_value"].get<double>()).c_str());
  std::printf("timers: wall = host clock per step%s; warm-up excluded; ratio < 1 means faster "
              "than the twin\n",
              *device == Device::kGpu ? " (blocks of 10 synchronised steps), event = CUDA events "
                                        "(both untraced), device = CUPTI busy time (a separate "
                                        "traced pass over the same steps)"
                                      : "");
  std::printf("results: %s (logs in %s)\n", out_path.c_str(), log_dir.c_str());
  if (our_failure) return kExitFailure;
  if (!bench["parity"].is_null() && !bench["parity"]["passed"].get<bool>()) return kExitFailure;
  if (o.parity && bench["parity"].is_null()) return kExitFailure;
  return kExitOk;
}

}  // namespace

std::function<int()> add_run_command(CLI::App& app, const std::string& command_line) {
  auto o = std::make_shared<RunOptions>();
  o->command_line = command_line;
  CLI::App* cmd = app.add_subcommand(
      "run", "Run the variant matrix over seeds plus the PyTorch twin, print the comparison "
             "table and write a results JSON (the default subcommand)");
  cmd->add_option("--model", o->model, "Model (a recipe in models/recipes)")->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "Precision")->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--target", o->target, "auto (gpu when a CUDA device is usable), cpu or gpu")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}))->capture_default_str();
  cmd->add_option("--variants", o->variants,
                  "Our variants: eager, graph, bf16, bf16+graph, host-batch (gpt family: the "
                  "batch built on the host) (default: those of --dtype the target supports; "
                  "bf16 keeps the fp32 ones as a baseline)")
      ->delimiter(',');
  auto* seeds = cmd->add_option("--seeds", o->seeds, "Number of seeds (0..N-1)")
                    ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--seed-list", o->seed_list, "Explicit seeds, e.g. 1,2,3")->delimiter(',')
      ->excludes(seeds);
  cmd->add_option("--steps", o->steps,
                  "Training steps per run (default: the recipe's epochs or, gpt family, steps; "
                  "on a CPU a gpt recipe is cut to a few steps)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", o->warmup, "Untimed steps at the start of each run (default 20, quick 5)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--twin", o->twin, "Twin modes: eager,compiled,graphs or none")->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--python", o->python, "Python interpreter with torch for the twin "
                                         "(default: $NOEIRA_PYTHON, python3, /usr/bin/python3)");
  cmd->add_option("--out", o->out, "Results JSON (default noeira-results-<model>-<target>-<dtype>.json); "
                                   "twin logs go to <out>.logs/");
  cmd->add_flag("--quick", o->quick, "The recipe's small smoke configuration (few steps)");
  cmd->add_flag("--parity", o->parity, "Also run the twin from our step-0 weights and batches and "
                                       "compare per-step losses (fp32, bound 1e-4)");
  cmd->add_option("--threads", o->threads, "CPU threads for us and the twin (default: all)")
      ->check(CLI::NonNegativeNumber);
  add_dataset_option(cmd, o->data.dataset);
  cmd->add_option("--data-dir", o->data.data_dir, "Directory holding <dataset>/ files");
  cmd->add_option("--min-samples", o->min_samples, "Stopping rule: minimum timed steps")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--max-noise", o->max_noise, "Stopping rule: relative noise target (std/mean)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--max-time", o->max_seconds, "Stopping rule: seconds of timing per run")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--twin-timeout", o->twin_timeout, "Seconds before a twin run is killed")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--ranks-list", o->ranks_list,
                  "gpt family: the data-parallel scaling benchmark over these rank counts "
                  "(e.g. 1,2,4; ranks > 1 start with mpirun), instead of the variant matrix")
      ->delimiter(',')->check(CLI::PositiveNumber);
  cmd->add_option("--zero", o->zero_list, "With --ranks-list: ZeRO stages (0 = DDP, 1, 2, 3), "
                                           "e.g. 0,1,2,3")
      ->delimiter(',')->check(CLI::Range(0, 3))->capture_default_str();
  return [cmd, o]() {
    if (!cmd->parsed()) return -1;
    // The benchmark starts its own ranks (an mpirun per configuration); under mpirun every
    // rank would run the whole matrix. Rank 0 says so, the others leave quietly.
    if (const char* n = std::getenv("OMPI_COMM_WORLD_SIZE"); n && std::atoi(n) > 1) {
      const char* r = std::getenv("OMPI_COMM_WORLD_RANK");
      if (r && std::atoi(r) != 0) return kExitUsage;
      return report_error("the benchmark starts its ranks itself: run it without mpirun, e.g. "
                          "noeira-bench --model " + o->model + " --ranks-list " + n +
                          " --zero 0,1,2,3 (training under mpirun: noeira-bench train ...)",
                          kExitUsage);
    }
    if (o->ranks_list.empty() && cmd->count("--zero") > 0)
      return report_error("--zero chooses the stages of the scaling benchmark: add --ranks-list, "
                          "e.g. --ranks-list 1,2 --zero 0,1,2,3", kExitUsage);
    if (!o->ranks_list.empty()) {
      ScalingOptions s;
      s.model = o->model;
      s.ranks = o->ranks_list;
      s.zero = o->zero_list;
      if (o->steps > 0) s.steps = o->steps;
      s.threads_per_rank = o->threads > 0 ? o->threads : 1;
      s.seed = o->seed_list.empty() ? 0 : o->seed_list.front();
      s.twin = !(o->twin.size() == 1 && o->twin[0] == "none");
      s.python = o->python;
      s.out = o->out;
      s.data = o->data;
      s.timeout_seconds = o->twin_timeout;
      return run_scaling(s);
    }
    return run_run(*o);
  };
}

}  // namespace noeira
