// What a report shows, gathered from one or more results files: the tables' rows and
// cells, the loss curves and the context. Markdown and HTML render this same data.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/report/report_context.h"
#include "harness/report/text_table.h"
#include "harness/results/records.h"
#include "harness/run/variant_ratio.h"

namespace noeira {

struct LoadedResults {
  std::string path;
  ResultsRecord results;  // from a validated file
};

struct ReportCell {
  enum class State { kAbsent, kUnavailable, kFailed, kPending, kNoTimer, kMeasured };
  State state = State::kAbsent;
  std::string reason;  // why unavailable / the error
  bool twin = false;
  std::string dtype;  // the variant's precision, "fp32" | "bf16"
  std::string timer;  // the summary timer shown: device, else event, else wall
  double median_ms = 0, q1_ms = 0, q3_ms = 0;
  Nullable<ScoreStats> top1, loss;  // over seeds
  std::vector<double> losses;  // runs[0].losses; NaN where the loss was null
  std::string clock_warning;   // NVML: ran throttled or at a changed clock (GPU), else ""
  int64_t seeds_done = 0;      // runs recorded
  int64_t pending_seeds = 0;   // a stopped run: seeds planned but not finished
  // For the ratios' intervals and the noisy mark (harness/run/variant_ratio.h): the shown
  // timer's samples per seed, its pooled count and cv, the load over the runs, and the
  // host's cores.
  std::vector<std::vector<double>> seed_samples;
  int64_t n = 0;
  double cv = 0;
  LoadSeen load;
  int64_t cores = 0;
  // Peak memory over the runs (harness/results/resource_records.h; empty in older files)
  // and the first run's memory plan, bytes per category (ours).
  VariantResources resources;
  std::map<std::string, int64_t> plan_bytes;
};

struct ReportRow {
  std::string label;  // "mlp (gpu, fp32)"
  std::string model, dataset, target, dtype, source;
  std::map<std::string, ReportCell> cells;  // by variant name
  Nullable<ParityRecord> parity;
  Nullable<SeedAgreementRecord> seed_agreement;
  Optional<double> flops_per_step;  // of the benchmark, where recorded
  Optional<PeakFlops> peak_flops;
  Optional<ProfileRecord> profile;  // a `noeira-bench profile` file's breakdown
};

struct ReportData {
  std::vector<ReportContext> contexts;  // one per file
  std::vector<ReportRow> rows;          // one per benchmark, in file order
  std::vector<std::string> columns;     // variant names present anywhere, table order
  std::vector<std::string> timers;      // timers used by measured cells, by preference
  // Memory, time to target, energy per variant (harness/report/report_resources.h): rows
  // (header first), empty when no file recorded them; how each was measured.
  TableRows resources;
  std::vector<std::string> resource_notes;
  // Set by the command that writes the report (harness/env/publish_guard.h): what
  // --allow-dirty let through, shown as warnings in the environment block.
  std::vector<std::string> publish_warnings;
};

ReportData build_report_data(const std::vector<LoadedResults>& files);

// The ratio of two measured cells' medians (num / den) with its 95% interval and the noisy
// mark (harness/run/variant_ratio.h), as the summary, the ratio table and the chart show it.
struct CellRatio {
  double ratio = 0;
  std::optional<RatioInterval> interval;
  bool noisy = false;
  std::string reason;  // why noisy
};
CellRatio cell_ratio(const ReportCell& num, const ReportCell& den);
// "0.23x [0.22-0.24]", with " noisy" when marked.
std::string cell_ratio_text(const CellRatio& r);

// The cell's text in the step-time table: "1.234", "n/a", "failed", "pending" (a stopped
// run did not get to it), "-" (not run); "1.234 (1/3 seeds)" when a stopped run finished only some.
// `mark_timer` appends " (w)"/" (e)"/" (d)" when the table mixes timers.
std::string step_time_text(const ReportCell& c, bool mark_timer);
// The cell's text in the accuracy table: "97.81 ± 0.05", "n/a", "failed", "pending", "-".
// Partial report banners: one line per partial file ("file: partial results (...)").
std::vector<std::string> partial_lines(const ReportData& d);
std::string top1_text(const ReportCell& c);
// "Parity (mlp (gpu, fp32)): max relative deviation 3.1e-06 over 100 steps (bound 1e-04): passed"
std::string parity_text(const ReportRow& r);
std::string seed_agreement_text(const ReportRow& r);

}  // namespace noeira
