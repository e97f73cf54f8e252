#include "harness/suite/suite_runner.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "harness/exit_codes.h"
#include "harness/cli/cli_options.h"
#include "harness/env/host_info.h"
#include "harness/env/publish_guard.h"
#include "harness/run/interrupt.h"
#include "harness/report/report_data.h"
#include "harness/report/report_html.h"
#include "harness/report/report_markdown.h"
#include "harness/report/report_summary.h"
#include "harness/results/results.h"
#include "harness/twin/subprocess.h"
#include "harness/suite/suite_manifest.h"
#include "models/family.h"
#include "nn/atomic_file.h"

namespace noeira {

namespace {

namespace fs = std::filesystem;

// The published order: GPT (fp32, then bf16), ResNet-20, the CIFAR CNN, then the others. On
// a CPU the small members of the families and the CIFAR-10 subset (the CPU scale).
std::vector<std::string> default_models(bool gpu) {
  if (gpu) return {"gpt", "resnet20", "cifar-cnn", "mlp", "conv2d-mnist", "vit"};
  return {"gpt-tiny", "resnet20", "cifar-cnn", "mlp", "conv2d-mnist", "vit-tiny"};
}

Result<std::vector<SuiteEntry>> plan_entries(const SuiteOptions& o, bool gpu) {
  const std::vector<std::string> models = o.models.empty() ? default_models(gpu) : o.models;
  const bool bf16 = std::find(o.dtypes.begin(), o.dtypes.end(), "bf16") != o.dtypes.end();
  std::vector<SuiteEntry> out;
  for (const std::string& m : models) {
    Result<Recipe> r = load_recipe_for_model(m);
    if (!r) return r.error();
    const std::string dataset = !gpu && r->dataset == "cifar10" ? "cifar10-subset" : "";
    if (family_traits(*r).language_model) {
      // One row per precision: the bf16 run times only the bf16 variants.
      for (const std::string& d : o.dtypes) {
        SuiteEntry e;
        e.model = m;
        e.dtype = d;
        e.dataset = dataset;
        e.variants = d;
        if (d == "bf16") e.run_variants = gpu ? std::vector<std::string>{"bf16", "bf16+graph"}
                                              : std::vector<std::string>{"bf16"};
        out.push_back(e);
      }
    } else {
      // One row: a bf16 run also times the fp32 variants (its baseline); the best competes.
      SuiteEntry e;
      e.model = m;
      e.dtype = bf16 ? "bf16" : o.dtypes.front();
      e.dataset = dataset;
      out.push_back(e);
    }
  }
  return out;
}

// The last line of the log that says why (an "error:" line, else the last line).
std::string failure_reason(const fs::path& log, const ProcessResult& r) {
  std::ifstream in(log);
  std::string line, last, error;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    last = line;
    if (line.find("error") != std::string::npos) error = line;
  }
  std::string why = !error.empty() ? error : last;
  const std::string how = r.timed_out ? "timed out" : r.signal ? "killed by signal " + std::to_string(r.signal)
                                                                 : "exit " + std::to_string(r.exit_code);
  return how + (why.empty() ? "" : ": " + why) + " (log: " + log.string() + ")";
}

std::vector<std::string> run_argv(const SuiteOptions& o, const SuiteEntry& e, const fs::path& out) {
  std::vector<std::string> a = {self_binary(), "run", "--model", e.model, "--dtype", e.dtype,
                                "--seeds", std::to_string(o.seeds), "--target", o.target,
                                "--out", out.string(), "--twin-timeout",
                                std::to_string(o.twin_timeout)};
  if (o.quick) a.push_back("--quick");
  a.insert(a.end(), {"--order", o.order});
  if (o.threads > 0) a.insert(a.end(), {"--threads", std::to_string(o.threads)});
  if (!e.dataset.empty()) a.insert(a.end(), {"--dataset", e.dataset});
  if (!o.data_dir.empty()) a.insert(a.end(), {"--data-dir", o.data_dir});
  if (!o.python.empty()) a.insert(a.end(), {"--python", o.python});
  a.push_back("--twin");
  for (const std::string& t : o.twin) a.push_back(t);
  if (!e.run_variants.empty()) {
    a.push_back("--variants");
    for (const std::string& v : e.run_variants) a.push_back(v);
  }
  return a;
}

std::string duration(double s) {
  char buf[32];
  if (s < 90) std::snprintf(buf, sizeof buf, "%.0f s", s);
  else if (s < 5400) std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  else std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  return buf;
}

// Before an entry runs again (after an interrupt, or a kill of the suite): the results
// file its earlier attempt left is kept as <name>.interrupted-<k>.json, not overwritten.
Status set_aside_partial(const fs::path& dir, const SuiteEntry& e) {
  const fs::path p = dir / (e.name() + ".json");
  std::error_code ec;
  if (!fs::exists(p, ec)) return {};
  fs::path kept;
  for (int k = 1;; ++k) {
    kept = dir / (e.name() + ".interrupted-" + std::to_string(k) + ".json");
    if (!fs::exists(kept, ec)) break;
  }
  fs::rename(p, kept, ec);
  if (ec) return make_error("cannot keep " + p.string() + " as " + kept.string() + ": " + ec.message());
  std::printf("  the earlier attempt's results are kept as %s\n", kept.c_str());
  return {};
}

int write_report(const fs::path& dir, const std::vector<SuiteEntry>& entries,
                 const std::vector<std::string>& publish_warnings) {
  std::vector<LoadedResults> files;
  std::vector<SummaryEntry> rows;
  for (const SuiteEntry& e : entries) {
    SummaryEntry s{e.label(), "", e.variants, ""};
    if (e.status == "done" || e.status == "interrupted") {
      const fs::path p = dir / (e.name() + ".json");
      if (e.status == "interrupted") s.label += " (partial)";
      Result<ResultsRecord> r = read_results_record(p);
      if (r) {
        files.push_back({p.string(), std::move(r).value()});
        s.source = p.string();
      } else {
        s.failure = e.status == "interrupted" ? e.reason : r.error().message;
      }
    } else {
      s.failure = e.status == "failed" ? e.reason : "not run (" + e.status + ")";
    }
    rows.push_back(s);
  }
  ReportData data = build_report_data(files);
  data.publish_warnings = publish_warnings;
  std::vector<SummaryPick> picks;
  const ReportTable summary = summary_table(rows, data, &picks);
  const std::string md = render_markdown(data, &summary);
  if (Status s = write_file_atomically(dir / "report.md", md, "the markdown report"); !s)
    return report_error(s.error().message, kExitFailure);
  if (Status s = write_file_atomically(dir / "report.html", render_html(data, &summary, &picks),
                                       "the HTML report");
      !s)
    return report_error(s.error().message, kExitFailure);
  std::fwrite(md.data(), 1, md.size(), stdout);
  std::printf("\nreport: %s and %s\n", (dir / "report.md").c_str(), (dir / "report.html").c_str());
  return kExitOk;
}

}  // namespace

int run_suite(const SuiteOptions& cli) {
  SuiteManifest m;
  SuiteOptions& o = m.options;
  std::vector<SuiteEntry>& entries = m.entries;
  fs::path dir;
  if (!cli.resume.empty()) {
    dir = cli.resume;
    Result<SuiteManifest> read = read_suite_manifest(dir, cli);
    if (!read) return report_error(read.error().message, kExitUsage);
    m = std::move(read).value();
    // A finished entry counts only if its results file is still valid.
    for (SuiteEntry& e : entries)
      if (e.status == "done" && !read_results(dir / (e.name() + ".json")).ok()) e.status = "pending";
  } else {
    o = cli;
    m.created = utc_timestamp();
    Result<Device> device = resolve_target(o.target);
    if (!device) return report_error(device.error().message, kExitUsage);
    o.target = *device == Device::kGpu ? "gpu" : "cpu";
    for (const std::string& d : o.dtypes)
      if (d != "fp32" && d != "bf16")
        return report_error("--dtype-list: '" + d + "' is not fp32 or bf16", kExitUsage);
    Result<std::vector<SuiteEntry>> planned = plan_entries(o, o.target == "gpu");
    if (!planned) return report_error(planned.error().message, kExitUsage);
    entries = std::move(planned).value();
    dir = o.out_dir.empty() ? fs::path("noeira-suite-" + o.target) : fs::path(o.out_dir);
    if (o.publish) {
      Result<fs::path> published = publish_dir(machine_slug(host_info(), device_info(), o.target == "gpu"));
      if (!published) return report_error(published.error().message, kExitUsage);
      dir = std::move(published).value();
    }
    if (fs::exists(dir / "suite.json"))
      return report_error((dir / "suite.json").string() + " exists: resume it with --resume " +
                              dir.string() + " or choose another --out-dir", kExitUsage);
  }
  // Into the repository's results/: not from a dirty tree, unless --allow-dirty.
  Result<std::vector<std::string>> publish_warnings = guard_publish(dir, cli.allow_dirty);
  if (!publish_warnings) return report_error(publish_warnings.error().message, kExitUsage);
  for (const std::string& w : *publish_warnings) std::printf("warning: %s\n", w.c_str());
  std::error_code ec;
  fs::create_directories(dir / "logs", ec);
  if (ec) return report_error("cannot create " + (dir / "logs").string() + ": " + ec.message(), kExitFailure);
  if (Status s = write_suite_manifest(dir, m); !s)
    return report_error(s.error().message, kExitFailure);

  size_t todo = 0;
  for (const SuiteEntry& e : entries) todo += e.status != "done" ? 1 : 0;
  std::printf("noeira-bench suite: %zu runs (%zu to do) on %s, %d seed(s)%s, in %s\n",
              entries.size(), todo, o.target.c_str(), o.seeds, o.quick ? ", quick" : "",
              dir.c_str());
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  double finished_seconds = 0;
  size_t finished = 0, k = 0;
  for (SuiteEntry& e : entries) {
    ++k;
    if (e.status == "done") continue;
    if (interrupt_requested()) break;  // between runs: the rest stay pending
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const size_t left = todo - finished;
    std::string eta = finished ? ", about " + duration(finished_seconds / finished * left) + " left" : "";
    std::printf("[%zu/%zu] %s (%s)%s: running (elapsed %s%s)\n", k, entries.size(),
                e.model.c_str(), e.dtype.c_str(), e.dataset.empty() ? "" : (" on " + e.dataset).c_str(),
                duration(elapsed).c_str(), eta.c_str());
    std::fflush(stdout);
    if (Status s = set_aside_partial(dir, e); !s) return report_error(s.error().message, kExitFailure);
    e.status = "running";
    (void)write_suite_manifest(dir, m);
    const fs::path log = dir / "logs" / (e.name() + ".log");
    // An interrupt reaches the run as SIGINT: it writes its finished seeds and ends (its
    // twin gets the same, so its grace is longer than the twin's).
    const ProcessResult r = run_process(run_argv(o, e, dir / (e.name() + ".json")), log,
                                        7 * 24 * 3600.0, {}, 60.0);
    {  // the run's stdout (its table) after its stderr, in the one log
      std::ofstream out(log, std::ios::app);
      out << r.out;
    }
    e.seconds = r.seconds;
    if (r.interrupted) {
      e.status = "interrupted";
      const bool kept = read_results(dir / (e.name() + ".json")).ok();
      e.reason = "stopped by " + interrupt_name() +
                 (kept ? "; its finished seeds are in " + (dir / (e.name() + ".json")).string()
                       : "; no seed had finished");
      std::printf("[%zu/%zu] %s (%s): %s\n", k, entries.size(), e.model.c_str(), e.dtype.c_str(),
                  e.reason.c_str());
      if (Status s = write_suite_manifest(dir, m); !s)
        return report_error(s.error().message, kExitFailure);
      break;
    }
    const bool valid = r.started && r.exit_code == kExitOk && read_results(dir / (e.name() + ".json")).ok();
    if (valid) {
      e.status = "done";
      e.reason.clear();
      std::printf("[%zu/%zu] %s (%s): done in %s\n", k, entries.size(), e.model.c_str(),
                  e.dtype.c_str(), duration(r.seconds).c_str());
    } else {
      e.status = "failed";
      e.reason = r.started ? failure_reason(log, r) : "cannot start: " + r.error;
      std::printf("[%zu/%zu] %s (%s): FAILED: %s\n", k, entries.size(), e.model.c_str(),
                  e.dtype.c_str(), e.reason.c_str());
    }
    std::fflush(stdout);
    finished_seconds += r.seconds;
    ++finished;
    if (Status s = write_suite_manifest(dir, m); !s)
      return report_error(s.error().message, kExitFailure);
  }
  const int rc = write_report(dir, entries, *publish_warnings);
  if (rc != kExitOk) return rc;
  if (interrupt_requested()) {
    std::printf("suite stopped by %s: resume it with noeira-bench suite --resume %s\n",
                interrupt_name().c_str(), dir.c_str());
    return interrupted_exit_code();
  }
  size_t failed = 0;
  for (const SuiteEntry& e : entries) failed += e.status != "done" ? 1 : 0;
  if (failed) std::printf("%zu of %zu runs failed (rows with their reasons above)\n", failed, entries.size());
  return failed ? kExitFailure : kExitOk;
}


}  // namespace noeira
