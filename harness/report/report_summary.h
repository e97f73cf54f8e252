// The suite's first table (`noeira-bench suite`): one row per entry, in the suite's order
// (GPT fp32, GPT bf16, ResNet-20, CIFAR CNN, then the others): our best variant and the
// twin's best mode, each named, their ratio, the test score over seeds with the agreement
// test, and achieved TFLOP/s (MFU on a GPU of known peak) from the file's FLOPs per step.
// An entry that failed is a row with its reason.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/report/report_data.h"
#include "harness/report/report_tables.h"
#include "harness/run/ratio_interval.h"

namespace noeira {

struct SummaryEntry {
  std::string label;     // "gpt-tiny fp32"
  std::string source;    // its results file (a LoadedResults path), when it ran
  std::string variants;  // which of ours compete: "fp32", "bf16" or "all"
  std::string failure;   // non-empty: the entry failed, this is why
};

// The row's best of ours and of the twin, for the table and the ratio chart.
struct SummaryPick {
  std::string label, ours_variant, twin_variant;
  double ours_ms = 0, twin_ms = 0;  // 0: none measured
  // ours / twin's 95% interval (harness/run/ratio_interval.h), when both have samples.
  std::optional<RatioInterval> interval;
  bool noisy = false;
};

ReportTable summary_table(const std::vector<SummaryEntry>& entries, const ReportData& d,
                          std::vector<SummaryPick>* picks = nullptr);

}  // namespace noeira
