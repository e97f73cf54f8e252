#include "harness/run/scaling_runner.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <thread>

#include "harness/exit_codes.h"
#include "harness/cli/cli_options.h"
#include "harness/env/host_info.h"
#include "harness/twin/subprocess.h"
#include "harness/twin/twin.h"
#include "harness/twin/twin_runs.h"
#include "models/family.h"
#include "nn/atomic_file.h"

namespace noeira {

namespace {

// The launcher for N ranks: mpirun on this machine's cores. --oversubscribe only when the
// ranks' threads exceed the cores; --allow-run-as-root only as root (Open MPI refuses root
// otherwise): what a user would type, plus what this host needs.
std::vector<std::string> launcher(int ranks, int threads) {
  if (ranks == 1) return {};
  std::vector<std::string> argv = {"mpirun", "-np", std::to_string(ranks), "--bind-to", "none"};
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (static_cast<unsigned>(ranks * threads) > cores) argv.push_back("--oversubscribe");
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  return argv;
}

struct Row {
  int ranks = 1, zero = 0;
  nlohmann::json ours;  // train --timing-json, or {"error": why}
  nlohmann::json twin;  // the twin's row, or {"error": why}
};

nlohmann::json run_ours(const ScalingOptions& o, int ranks, int zero,
                        const std::filesystem::path& dir) {
  const auto summary = dir / ("ours-np" + std::to_string(ranks) + "-zero" + std::to_string(zero) + ".json");
  std::vector<std::string> argv = launcher(ranks, o.threads_per_rank);
  for (const std::string& a :
       {self_binary(), std::string("train"), std::string("--model"), o.model,
        std::string("--steps"), std::to_string(o.steps), std::string("--threads"),
        std::to_string(o.threads_per_rank), std::string("--seed"), std::to_string(o.seed),
        std::string("--timing-json"), summary.string()})
    argv.push_back(a);
  if (ranks > 1) argv.insert(argv.end(), {"--zero", std::to_string(zero)});
  if (!o.data.data_dir.empty()) argv.insert(argv.end(), {"--data-dir", o.data.data_dir});
  const auto log = dir / (summary.stem().string() + ".log");
  const ProcessResult r = run_process(argv, log, o.timeout_seconds, {});
  if (!r.started) return {{"error", "cannot start " + argv[0] + ": " + r.error}};
  if (r.timed_out) return {{"error", "timed out (log: " + log.string() + ")"}};
  std::ifstream in(summary);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (r.exit_code != kExitOk || j.is_discarded())
    return {{"error", "exit " + std::to_string(r.exit_code) + " (log: " + log.string() + ")"}};
  return j;
}

nlohmann::json run_twin_config(const ScalingOptions& o, const Recipe& recipe, int ranks, int zero,
                               const std::string& python, const std::filesystem::path& dir) {
  TwinRequest q;
  q.python = python;
  q.recipe = recipe.path;
  q.data_dir = twin_data_dir(recipe.dataset, make_data_source(o.data));
  q.device = "cpu";
  q.mode = "eager";
  q.dtype = "fp32";
  q.seed = o.seed;
  q.max_steps = o.steps;
  q.warmup = std::min<int64_t>(3, o.steps - 1);
  q.threads = o.threads_per_rank;
  q.ranks = ranks;
  q.zero = zero;
  q.timeout_seconds = o.timeout_seconds;
  q.log = dir / ("twin-np" + std::to_string(ranks) + "-zero" + std::to_string(zero) + ".log");
  const TwinOutcome t = run_twin(q);
  if (!t.ok || !t.available) return {{"error", t.reason}};
  return t.result;
}

double number(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

}  // namespace

int run_scaling(const ScalingOptions& o) {
  Result<Recipe> recipe = load_recipe_for_model(o.model);
  if (!recipe) return report_error(recipe.error().message, kExitUsage);
  if (!family_traits(*recipe).data_parallel)
    return report_error("--ranks-list: data parallelism is for the gpt family; " + o.model +
                        " is " + recipe->family, kExitUsage);
  for (int n : o.ranks)
    if (n < 1) return report_error("--ranks-list: rank counts must be positive", kExitUsage);
  const std::string out = o.out.empty() ? "noeira-scaling-" + o.model + ".json" : o.out;
  const std::filesystem::path dir = out + ".logs";
  std::filesystem::create_directories(dir);
  std::string python;
  if (o.twin) python = find_python_with_torch(o.python).python;

  std::printf("noeira-bench scaling: model %s, ranks %s, ZeRO stages %s, %lld steps per run "
              "(first 3 untimed), %d thread(s) per rank, seed %llu\n",
              o.model.c_str(), nlohmann::json(o.ranks).dump().c_str(),
              nlohmann::json(o.zero).dump().c_str(), static_cast<long long>(o.steps),
              o.threads_per_rank, static_cast<unsigned long long>(o.seed));
  if (static_cast<unsigned>(*std::max_element(o.ranks.begin(), o.ranks.end()) * o.threads_per_rank) >
      std::max(1u, std::thread::hardware_concurrency()))
    std::printf("note: more rank threads than the %u cores here: scaling is bounded by the "
                "cores, not by the communication\n",
                std::max(1u, std::thread::hardware_concurrency()));
  std::vector<Row> rows;
  for (int n : o.ranks)
    for (int z : o.zero) {
      if (n == 1 && z != o.zero.front()) continue;  // one process has no stages
      Row row{n, n == 1 ? -1 : z, {}, {}};
      std::printf("  %d rank(s)%s ...", n, n == 1 ? "" : (", ZeRO " + std::to_string(z)).c_str());
      std::fflush(stdout);
      row.ours = run_ours(o, n, z, dir);
      if (!o.twin) row.twin = {{"error", "not run (--twin none)"}};
      else if (python.empty()) row.twin = {{"error", "no python with torch"}};
      else if (z >= 2 && n > 1)
        row.twin = {{"error", "ZeRO-" + std::to_string(z) + ": the twin's equivalent is torch FSDP, "
                              "which shards over CUDA devices (NCCL), not gloo on the CPU"}};
      else row.twin = run_twin_config(o, *recipe, n, z, python, dir);
      std::printf(" %s\n", row.ours.contains("error") ? row.ours["error"].get<std::string>().c_str()
                                                     : "done");
      rows.push_back(std::move(row));
    }

  double base_tps = 0.0;
  for (const Row& r : rows)
    if (r.ranks == 1 && !r.ours.contains("error")) base_tps = number(r.ours, "tokens_per_s");
  std::printf("\n%-5s %-5s %10s %-22s %10s %6s %9s %28s %9s %10s %7s\n", "ranks", "zero",
              "ms/step", "per rank", "tokens/s", "eff.", "comm MB", "param/grad/optim MB per rank",
              "val loss", "twin ms", "ratio");
  nlohmann::json jrows = nlohmann::json::array();
  for (const Row& r : rows) {
    nlohmann::json jr = {{"ranks", r.ranks}, {"zero", r.zero}, {"ours", r.ours}, {"twin", r.twin}};
    const std::string zero = r.zero < 0 ? "-" : std::to_string(r.zero);
    if (r.ours.contains("error")) {
      std::printf("%-5d %-5s %s\n", r.ranks, zero.c_str(), r.ours["error"].get<std::string>().c_str());
      jrows.push_back(jr);
      continue;
    }
    const double ms = number(r.ours, "step_ms"), tps = number(r.ours, "tokens_per_s");
    const double eff = base_tps > 0 ? tps / (r.ranks * base_tps) : 0.0;
    jr["scaling_efficiency"] = eff;
    std::string per_rank;
    for (const auto& v : r.ours["per_rank_median_step_ms"])
      per_rank += (per_rank.empty() ? "" : "/") + std::to_string(static_cast<int>(v.get<double>() + 0.5));
    const auto& b = r.ours["bytes_per_rank"];
    char mem[64];
    std::snprintf(mem, sizeof mem, "%.2f/%.2f/%.2f", number(b, "parameters") / 1e6,
                  number(b, "gradients") / 1e6, number(b, "optimizer_state") / 1e6);
    const double twin_ms = r.twin.contains("error") ? 0.0 : number(r.twin, "median_step_ms");
    char twin_col[32] = "n/a", ratio[16] = "-";
    if (twin_ms > 0) {
      std::snprintf(twin_col, sizeof twin_col, "%.2f", twin_ms);
      std::snprintf(ratio, sizeof ratio, "%.2fx", ms / twin_ms);
    }
    std::printf("%-5d %-5s %10.2f %-22s %10.0f %5.0f%% %9.2f %28s %9.4f %10s %7s\n", r.ranks,
                zero.c_str(), ms, per_rank.c_str(), tps, 100.0 * eff,
                number(r.ours, "comm_bytes_per_step") / 1e6, mem, number(r.ours, "final_val_loss"),
                twin_col, ratio);
    jrows.push_back(jr);
  }
  for (const Row& r : rows) {
    const std::string which = "twin " + std::to_string(r.ranks) + " rank(s)" +
                              (r.zero < 0 ? "" : ", ZeRO " + std::to_string(r.zero));
    if (r.twin.contains("error") && o.twin)
      std::printf("%s: %s\n", which.c_str(), r.twin["error"].get<std::string>().c_str());
    else if (r.twin.contains("teardown_failure"))
      std::printf("%s: a rank failed in gloo's teardown after every rank had finished (%s); "
                  "the row stands\n",
                  which.c_str(), r.twin["teardown_failure"].get<std::string>().c_str());
  }
  std::printf("ms/step: the slowest rank's median (a step ends with it); eff. = tokens/s over "
              "(ranks x one process's tokens/s); comm = collective buffer bytes per step\n");
  const nlohmann::json doc = {{"schema", "noeira-scaling/1"},
                              {"context", environment()},
                              {"model", o.model},
                              {"steps", o.steps},
                              {"threads_per_rank", o.threads_per_rank},
                              {"rows", jrows}};
  if (Status s = write_file_atomically(out, doc.dump(2) + "\n", "the scaling results"); !s)
    return report_error(s.error().message, kExitFailure);
  std::printf("results: %s (logs in %s)\n", out.c_str(), dir.c_str());
  for (const Row& r : rows)
    if (r.ours.contains("error")) return kExitFailure;
  return kExitOk;
}

}  // namespace noeira
