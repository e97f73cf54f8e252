// Results files (results/SCHEMA.md), the input of `noeira-bench compare` and `report`:
// read_results on the input as a file, then on a file it accepts what those commands do
// with it: the report's data, its markdown and HTML, and the gate comparing the file with
// itself. Contract: a validated results JSON that compare and report can use without a
// crash, or an Error naming the file and the field; never a crash, a hang or undefined
// behaviour.
//
// Input: the results file. Cap: no allocation above 128 MiB, RSS below 1.5 GiB for
// inputs up to 256 KiB (a real results file is 35-140 KB).
// libFuzzer flags: -max_len=262144 -malloc_limit_mb=128 -rss_limit_mb=1536 -timeout=20
#include "fuzz/fuzz_support.h"
#include "harness/gate/compare_gate.h"
#include "harness/report/report_data.h"
#include "harness/report/report_html.h"
#include "harness/report/report_markdown.h"
#include "harness/results/results.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const noeira::fuzz::MemFile file(noeira::fuzz::Bytes(data, size));
  auto results = noeira::read_results(file.path());
  if (!results) {
    FUZZ_EXPECT(!results.error().message.empty());
    return 0;
  }
  FUZZ_EXPECT(noeira::validate_results(*results));
  // Every file read_results accepts reads as records (what compare and report use).
  auto record = noeira::read_results_record(file.path());
  FUZZ_EXPECT(record);
  if (!record) return 0;

  const noeira::ReportData report = noeira::build_report_data({{file.path().string(), *record}});
  FUZZ_EXPECT(report.rows.size() == results->at("benchmarks").size());
  for (const noeira::ReportRow& row : report.rows) {
    for (const auto& [variant, cell] : row.cells) {
      (void)noeira::step_time_text(cell, true);
      (void)noeira::top1_text(cell);
    }
    (void)noeira::parity_text(row);
    (void)noeira::seed_agreement_text(row);
  }
  FUZZ_EXPECT(!noeira::render_markdown(report).empty());
  FUZZ_EXPECT(!noeira::render_html(report).empty());

  noeira::GateOptions options;
  options.allow_missing = true;
  auto gate = noeira::compare_results(*record, *record, options);
  if (gate) FUZZ_EXPECT(gate->count(noeira::Verdict::kSlower) == 0 && gate->regressions() == 0);
  else FUZZ_EXPECT(!gate.error().message.empty());
  return 0;
}
