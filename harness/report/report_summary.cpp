#include "harness/report/report_summary.h"

#include "harness/report/number_format.h"
#include "harness/results/results_access.h"

namespace noeira {

namespace {

using nlohmann::json;

bool competes(const std::string& variant, const std::string& filter) {
  if (filter == "all") return true;
  const bool bf16 = variant.find("bf16") != std::string::npos;
  return filter == "bf16" ? bf16 : !bf16;
}

// The fastest measured cell among ours (twin = false) or the twin's.
const ReportCell* best_cell(const ReportRow& row, bool twin, const std::string& filter,
                            std::string* name) {
  const ReportCell* best = nullptr;
  for (const auto& [variant, c] : row.cells) {
    if (c.twin != twin || c.state != ReportCell::State::kMeasured) continue;
    if (!twin && !competes(variant, filter)) continue;
    if (!best || c.median_ms < best->median_ms) {
      best = &c;
      *name = variant;
    }
  }
  return best;
}

const json* variant_json(const std::vector<LoadedResults>& files, const ReportRow& row,
                         const std::string& variant, const json** benchmark) {
  for (const LoadedResults& f : files) {
    if (f.path != row.source) continue;
    for (const json& b : f.results.at("benchmarks")) {
      if (text_of(b, "model") != row.model || text_of(b, "dataset") != row.dataset) continue;
      *benchmark = &b;
      for (const json& v : b.at("variants"))
        if (text_of(v, "name") == variant) return &v;
    }
  }
  return nullptr;
}

// "97.81 ± 0.05 % (3)" or "loss 1.8721 ± 0.0141 (3)" from a variant's summary.
std::string score_text(const json* v) {
  if (!v) return "-";
  const json& s = v->at("summary");
  for (const char* key : {"test_top1", "test_loss"}) {
    if (!s.contains(key) || !s.at(key).is_object()) continue;
    const json& t = s.at(key);
    if (!t.contains("mean") || !t.at("mean").is_number()) continue;
    const bool top1 = std::string(key) == "test_top1";
    std::string out = top1 ? "" : "loss ";
    out += format_number(top1 ? "%.2f" : "%.4f", t.at("mean").get<double>());
    if (t.contains("std") && t.at("std").is_number())
      out += " ± " + format_number(top1 ? "%.2f" : "%.4f", t.at("std").get<double>());
    if (top1) out += " %";
    return out + " (" + std::to_string(t.value("n", 0)) + ")";
  }
  return "-";
}

}  // namespace

ReportTable summary_table(const std::vector<SummaryEntry>& entries, const ReportData& d,
                          const std::vector<LoadedResults>& files, std::vector<SummaryPick>* picks) {
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
    const json* benchmark = nullptr;
    const json* ours_v = ours ? variant_json(files, *row, ours_name, &benchmark) : nullptr;
    const json* twin_v = twin ? variant_json(files, *row, twin_name, &benchmark) : nullptr;
    std::vector<std::string> cells = {
        e.label + " (" + row->dataset + ")",
        ours ? format_ms(ours->median_ms) + " " + ours_name : "n/a",
        twin ? format_ms(twin->median_ms) + " " + twin_name : "n/a",
        ours && twin ? format_number("%.2fx", ours->median_ms / twin->median_ms) : "-",
        score_text(ours_v),
        score_text(twin_v),
        row->seed_agreement.is_object()
            ? std::string(row->seed_agreement.at("agree").get<bool>() ? "yes" : "NO") +
                  " (p = " + format_p(row->seed_agreement.at("p_value").get<double>()) + ")"
            : "-",
        "-"};
    if (ours && benchmark && benchmark->contains("flops_per_step") &&
        benchmark->at("flops_per_step").is_number()) {
      const double tflops =
          benchmark->at("flops_per_step").get<double>() / (ours->median_ms * 1e-3) / 1e12;
      cells[7] = format_number("%.3g", tflops);
      const json* peak = benchmark->contains("peak_flops") ? &benchmark->at("peak_flops") : nullptr;
      const std::string dtype = ours_name.find("bf16") != std::string::npos ? "bf16" : "fp32";
      if (peak && peak->is_object() && peak->contains(dtype) && peak->at(dtype).is_number())
        cells[7] += format_number(" (%.1f%%)", 100.0 * tflops * 1e12 / peak->at(dtype).get<double>());
    }
    t.rows.push_back(cells);
    if (picks && ours && twin)
      picks->push_back({e.label, ours_name, twin_name, ours->median_ms, twin->median_ms});
  }
  t.footnotes.push_back("Median ms per training step of the best variant of each side (the "
                        "timer: device, else event, else wall); ours / twin < 1: ours is faster. "
                        "Test score: top-1 % or loss, mean ± std over seeds (n). Seeds agree: "
                        "the results' seed-agreement test. TFLOP/s from the file's FLOPs per "
                        "step (gpt: nanoGPT's estimate; others: 3 x the planned forward matrix products); MFU on a GPU of known peak.");
  return t;
}

}  // namespace noeira
