#include "harness/report/report_summary.h"

#include "harness/report/number_format.h"

#include <algorithm>

namespace noeira {

namespace {

// Which of our cells compete: every one ("all"), the bf16 ones, or the others.
bool competes(const ReportCell& c, const std::string& filter) {
  if (filter == "all") return true;
  return (c.dtype == "bf16") == (filter == "bf16");
}

// The fastest measured cell among ours (twin = false) or the twin's.
const ReportCell* best_cell(const ReportRow& row, bool twin, const std::string& filter,
                            std::string* name) {
  const ReportCell* best = nullptr;
  for (const auto& [variant, c] : row.cells) {
    if (c.twin != twin || c.state != ReportCell::State::kMeasured) continue;
    if (!twin && !competes(c, filter)) continue;
    if (!best || c.median_ms < best->median_ms) {
      best = &c;
      *name = variant;
    }
  }
  return best;
}

// "97.81 ± 0.05 % (3)" or "loss 1.8721 ± 0.0141 (3)" from a cell's scores over seeds.
std::string score_text(const ReportCell* c) {
  if (!c) return "-";
  for (const bool top1 : {true, false}) {
    const Nullable<ScoreStats>& t = top1 ? c->top1 : c->loss;
    if (!t || !t->mean) continue;
    std::string out = top1 ? "" : "loss ";
    out += format_number(top1 ? "%.2f" : "%.4f", *t->mean);
    if (t->std) out += " ± " + format_number(top1 ? "%.2f" : "%.4f", *t->std);
    if (top1) out += " %";
    return out + " (" + std::to_string(t->n) + ")";
  }
  return "-";
}

}  // namespace

ReportTable summary_table(const std::vector<SummaryEntry>& entries, const ReportData& d,
                          std::vector<SummaryPick>* picks) {
  ReportTable t;
  t.title = "The comparison";
  t.rows.push_back({"model", "ours (best variant)", "twin (best mode)", "ours / twin",
                    "test score, ours", "test score, twin", "seeds agree", "TFLOP/s (MFU)"});
  t.right_aligned = {false, true, true, true, true, true, false, true};
  for (const SummaryEntry& e : entries) {
    if (!e.failure.empty()) {
      t.rows.push_back({e.label, "failed", "-", "-", "-", "-", "-", "-"});
      t.footnotes.push_back(e.label + " failed: " + e.failure);
      continue;
    }
    const ReportRow* row = nullptr;
    for (const ReportRow& r : d.rows)
      if (r.source == e.source) row = &r;
    if (!row) {
      t.rows.push_back({e.label, "-", "-", "-", "-", "-", "-", "-"});
      continue;
    }
    std::string ours_name, twin_name;
    const ReportCell* ours = best_cell(*row, false, e.variants, &ours_name);
    const ReportCell* twin = best_cell(*row, true, "all", &twin_name);
    const CellRatio ratio = ours && twin ? cell_ratio(*ours, *twin) : CellRatio{};
    std::string ratio_cell = "-";
    if (ours && twin) {
      ratio_cell = cell_ratio_text(ratio);
      if (ratio.noisy) {
        t.footnotes.push_back(e.label + " ours / twin is noisy (" +
                              (ratio.interval ? "interval " + interval_extent_text(*ratio.interval)
                                              : std::string("no interval")) +
                              "): " + ratio.reason);
      }
    }
    std::vector<std::string> cells = {
        e.label + " (" + row->dataset + ")",
        ours ? format_ms(ours->median_ms) + " " + ours_name : "n/a",
        twin ? format_ms(twin->median_ms) + " " + twin_name : "n/a",
        ratio_cell,
        score_text(ours),
        score_text(twin),
        row->seed_agreement ? std::string(row->seed_agreement->agree ? "yes" : "NO") + " (p = " +
                                  format_p(row->seed_agreement->p_value) + ")"
                            : "-",
        "-"};
    if (ours && row->flops_per_step) {
      const double tflops = *row->flops_per_step / (ours->median_ms * 1e-3) / 1e12;
      cells[7] = format_number("%.3g", tflops);
      if (const Optional<double> peak = row->peak_flops ? row->peak_flops->for_dtype(ours->dtype) : std::nullopt)
        cells[7] += format_number(" (%.1f%%)", 100.0 * tflops * 1e12 / *peak);
    }
    t.rows.push_back(cells);
    if (picks && ours && twin)
      picks->push_back({e.label, ours_name, twin_name, ours->median_ms, twin->median_ms,
                        ratio.interval, ratio.noisy});
  }
  t.footnotes.push_back("Median ms per training step of the best variant of each side (the "
                        "timer: device, else event, else wall); ours / twin < 1: ours is faster; " +
                        interval_method_note() + ". "
                        "Test score: top-1 % or loss, mean ± std over seeds (n). Seeds agree: "
                        "the results' seed-agreement test. TFLOP/s from the file's FLOPs per "
                        "step (gpt: nanoGPT's estimate; others: 3 x the planned forward matrix products); MFU on a GPU of known peak.");
  return t;
}

}  // namespace noeira
