#include "harness/gate/compare_files.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "harness/cli/cli_options.h"
#include "harness/exit_codes.h"
#include "harness/gate/compare_gate.h"
#include "harness/report/number_format.h"
#include "harness/report/text_table.h"
#include "harness/results/partial_results.h"
#include "harness/results/results.h"

namespace noeira {

namespace {

std::string describe_file(const std::string& path, const ResultsRecord& r) {
  std::string sha = r.context.git_sha.substr(0, 12);
  if (sha.empty()) sha = "unknown";
  if (r.context.git_dirty) sha += "+dirty";
  return path + " (git " + sha + ", " + r.measured_on() + ", " + r.created_utc + ")";
}

std::string timing_table(const GateReport& g, double confidence) {
  const std::string interval_header = format_number("%.0f%% interval", 100.0 * confidence);
  TableRows rows = {{"model", "variant", "timer", "base ms", "new ms", "ratio", interval_header,
                     "p-value", "verdict", "note"}};
  for (const TimingComparison& t : g.timings) {
    if (!t.compared) {
      rows.push_back({t.model, t.variant, "-", "-", "-", "-", "-", "-", "SKIPPED", t.note});
      continue;
    }
    std::string interval = "-";
    if (t.has_interval)
      interval = "[" + format_number("%.3f", t.lo) + "-" + format_number("%.3f", t.hi) + "]" +
                 (t.seeds_resampled ? "" : " b") + (t.noisy ? " noisy" : "");
    rows.push_back({t.model, t.variant, t.timer,
                    format_ms(t.base_median_ms) + " (n=" + std::to_string(t.base_n) + ")",
                    format_ms(t.new_median_ms) + " (n=" + std::to_string(t.new_n) + ")",
                    format_number("%.3f", t.ratio), interval, format_p(t.p), verdict_name(t.verdict),
                    t.note});
  }
  return render_text_table(rows, {false, false, false, true, true, true, true, true, false, false});
}

std::string accuracy_table(const GateReport& g) {
  TableRows rows = {
      {"model", "variant", "base top-1 %", "new top-1 %", "change", "tolerance", "accuracy"}};
  auto score = [](double m, double s, int64_t n) {
    return format_number("%.2f", m) + " ± " + format_number("%.2f", s) +
           " (n=" + std::to_string(n) + ")";
  };
  for (const AccuracyComparison& a : g.accuracy)
    rows.push_back({a.model, a.variant, score(a.base_mean, a.base_std, a.base_n),
                    score(a.new_mean, a.new_std, a.new_n),
                    format_number("%+.2f pp", std::abs(a.change_pp) < 0.005 ? 0.0 : a.change_pp),
                    format_number("%.2f pp", a.tolerance_pp), a.regression ? "REGRESSION" : "ok"});
  return render_text_table(rows, {false, false, true, true, true, true, false});
}

int run_compare_files(const CompareOptions& o);

// Two suite directories (`noeira-bench suite`): every results file of the base compared
// with the same file of the new suite; one missing from the new suite is a missing model.
int run_compare_suites(const CompareOptions& o) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(o.new_path))
    return report_error(o.base_path + " is a directory (a suite) but " + o.new_path +
                            " is not: compare two results files or two suite directories",
                        kExitUsage);
  std::vector<fs::path> bases;
  for (const auto& e : fs::directory_iterator(o.base_path))
    if (e.path().extension() == ".json" && e.path().filename() != "suite.json")
      bases.push_back(e.path());
  std::sort(bases.begin(), bases.end());
  if (bases.empty())
    return report_error(o.base_path + " holds no results files (*.json)", kExitUsage);
  int worst = kExitOk;
  size_t missing = 0;
  for (const fs::path& b : bases) {
    const fs::path n = fs::path(o.new_path) / b.filename();
    if (!fs::exists(n)) {
      std::printf("MISSING %s: not in %s%s\n\n", b.filename().c_str(), o.new_path.c_str(),
                  o.allow_missing ? " (--allow-missing)" : "");
      ++missing;
      continue;
    }
    CompareOptions one = o;
    one.base_path = b.string();
    one.new_path = n.string();
    const int rc = run_compare_files(one);
    std::printf("\n");
    worst = std::max(worst, rc);
  }
  if (missing && !o.allow_missing) worst = std::max(worst, kExitFailure);
  std::printf("suite %s vs %s: %zu file(s), %zu missing: %s\n", o.base_path.c_str(),
              o.new_path.c_str(), bases.size(), missing,
              worst == kExitOk ? "PASS" : worst == kExitFailure ? "FAIL" : "UNUSABLE INPUT");
  return worst;
}

int run_compare_files(const CompareOptions& o) {
  Result<double> threshold = parse_slowdown_threshold(o.max_slowdown);
  if (!threshold) return report_error(threshold.error().message, kExitUsage);
  Result<ResultsRecord> base = read_results_record(o.base_path);
  if (!base) return report_error(base.error().message, kExitUsage);
  Result<ResultsRecord> next = read_results_record(o.new_path);
  if (!next) return report_error(next.error().message, kExitUsage);

  GateOptions gate;
  gate.max_slowdown = *threshold;
  gate.alpha = o.alpha;
  gate.timer = o.timer;
  gate.ignore_device = o.ignore_device;
  gate.allow_missing = o.allow_missing;
  Result<GateReport> report = compare_results(*base, *next, gate);
  if (!report)
    return report_error(o.base_path + " vs " + o.new_path + ": " + report.error().message,
                        kExitUsage);

  std::printf("noeira-bench compare\n  base: %s\n  new:  %s\n",
              describe_file(o.base_path, *base).c_str(), describe_file(o.new_path, *next).c_str());
  std::printf(
      "  gate: ratio = new / base median (per-step samples pooled over seeds); its %.0f%% "
      "interval is a bootstrap of blocks of steps within seeds, and of seeds where both sides "
      "have >= 3 (b: blocks only). SLOWER = the whole interval above %.4g, FASTER = below "
      "%.4g, SAME = inside [%.4g, %.4g], AMBIGUOUS = straddling a bound; noisy = the "
      "interval reaches more than 10%% from the ratio (docs/regression-gate.md). p-value: "
      "Mann-Whitney U, for reference. Times in ms per step\n\n",
      100.0 * (1.0 - gate.alpha), 1.0 + gate.max_slowdown, 1.0 - gate.max_slowdown,
      1.0 - gate.max_slowdown, 1.0 + gate.max_slowdown);
  // A stopped run's file: its variants hold fewer seeds (or none) than planned.
  for (const auto& [path, r] : {std::pair{o.base_path, &*base}, std::pair{o.new_path, &*next}})
    if (const std::string p = partial_summary(*r); !p.empty())
      std::printf("  PARTIAL %s: %s\n", path.c_str(), p.c_str());
  if (base->partial() || next->partial()) std::printf("\n");
  // What biases either file's figures (a crippled baseline's probe, a library on a
  // fallback kernel set): the same warnings run and report print.
  bool warned = false;
  for (const auto& [side, r] : {std::pair{"base", &*base}, std::pair{"new", &*next}})
    for (const std::string& w : r->context.warnings.value_or(std::vector<std::string>{})) {
      std::printf("  warning (%s): %s\n", side, w.c_str());
      warned = true;
    }
  if (warned) std::printf("\n");
  std::printf("%s", timing_table(*report, 1.0 - gate.alpha).c_str());
  if (!report->accuracy.empty()) std::printf("\n%s", accuracy_table(*report).c_str());
  if (!report->missing.empty()) {
    std::printf("\nran in the base, not in the new file%s:\n",
                gate.allow_missing ? " (--allow-missing: listed, not failing)" : "");
    for (const MissingVariant& m : report->missing)
      std::printf("  MISSING %s (%s) %s: %s\n", m.model.c_str(), m.dataset.c_str(),
                  m.variant.c_str(), m.why.c_str());
  }
  const bool failed = report->failed();
  std::printf("\n%d slower, %d faster, %d same, %d ambiguous; %d accuracy regression%s; "
              "%zu missing: %s\n",
              report->count(Verdict::kSlower), report->count(Verdict::kFaster),
              report->count(Verdict::kSame), report->count(Verdict::kAmbiguous),
              report->regressions(), report->regressions() == 1 ? "" : "s",
              report->missing.size(), failed ? "FAIL" : "PASS");
  return failed ? kExitFailure : kExitOk;
}

}  // namespace

int run_compare(const CompareOptions& o) {
  if (std::filesystem::is_directory(o.base_path)) return run_compare_suites(o);
  return run_compare_files(o);
}

}  // namespace noeira
