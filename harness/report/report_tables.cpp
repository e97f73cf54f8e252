#include "harness/report/report_tables.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "harness/report/number_format.h"
#include "harness/run/ratio_interval.h"

namespace noeira {

namespace {

// Cells that cannot show a number explain themselves in a numbered footnote; the same
// explanation is numbered once.
class Footnotes {
 public:
  std::string mark(const std::string& variant, const ReportCell& c) {
    std::string what;
    if (c.state == ReportCell::State::kUnavailable)
      what = "unavailable: ";
    else if (c.state == ReportCell::State::kFailed)
      what = "failed: ";
    else
      return "";
    const std::string note =
        variant + " " + what + (c.reason.empty() ? "no reason given" : c.reason);
    auto it = std::find(notes_.begin(), notes_.end(), note);
    if (it == notes_.end()) it = notes_.insert(notes_.end(), note);
    std::string marker = " ";
    marker += number(static_cast<size_t>(it - notes_.begin()));
    return marker;
  }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < notes_.size(); ++i) out.push_back(number(i) + " " + notes_[i]);
    return out;
  }

 private:
  static std::string number(size_t index) {
    std::string s = "[";  // appended, not "[" + ...: GCC 12 warns falsely (-Wrestrict)
    s += std::to_string(index + 1);
    s += "]";
    return s;
  }
  std::vector<std::string> notes_;
};

ReportTable variant_table(const ReportData& d, std::string title,
                          const std::function<std::string(const ReportCell&)>& text) {
  ReportTable t;
  t.title = std::move(title);
  t.rows.push_back({"model"});
  t.right_aligned.push_back(false);
  for (const std::string& c : d.columns) {
    t.rows[0].push_back(c);
    t.right_aligned.push_back(true);
  }
  Footnotes notes;
  for (const ReportRow& r : d.rows) {
    std::vector<std::string> row = {r.label};
    for (const std::string& c : d.columns) {
      const auto it = r.cells.find(c);
      if (it == r.cells.end()) {
        row.push_back("-");
        continue;
      }
      row.push_back(text(it->second) + notes.mark(c, it->second));
    }
    t.rows.push_back(std::move(row));
  }
  t.footnotes = notes.lines();
  return t;
}

std::string step_time_title(const ReportData& d) {
  std::string title = "Step time: median ms per training step";
  if (d.timers.empty()) return title + " (no timings)";
  if (d.timers.size() == 1) return title + ", " + d.timers[0] + " timer";
  return title + ", timer per cell: (d) device, (e) event, (w) wall";
}

}  // namespace

ReportTable step_time_table(const ReportData& d) {
  const bool mixed = d.timers.size() > 1;
  ReportTable t = variant_table(d, step_time_title(d),
                                [mixed](const ReportCell& c) { return step_time_text(c, mixed); });
  t.footnotes.insert(t.footnotes.begin(),
                     "Timers: wall = host clock over the steps; device = GPU activity recorded "
                     "by CUPTI; event = CUDA events. Warm-up excluded; '-' = not run.");
  // The GPU's clocks around each variant (NVML): a throttled or re-clocked one is flagged.
  for (const ReportRow& r : d.rows)
    for (const auto& [name, c] : r.cells)
      if (!c.clock_warning.empty())
        t.footnotes.push_back("WARNING " + r.label + " " + name + ": " + c.clock_warning);
  return t;
}

ReportTable ratio_table(const ReportData& d) {
  ReportTable t;
  t.title = "Step-time ratios with 95% intervals";
  const auto measured = [](const ReportRow& r, const std::string& name) -> const ReportCell* {
    const auto it = r.cells.find(name);
    return it != r.cells.end() && it->second.state == ReportCell::State::kMeasured ? &it->second : nullptr;
  };
  for (const ReportRow& r : d.rows) {
    for (const auto& [base, label] : {std::pair<std::string, std::string>{"twin:eager", "/ twin:eager"},
                                      {"eager", "/ eager"}}) {
      const ReportCell* den = measured(r, base);
      if (!den) continue;
      std::vector<std::string> row = {r.label, label};
      bool any = false;
      for (const std::string& c : d.columns) {
        const ReportCell* num = measured(r, c);
        // Ours over our eager: only our other variants.
        if (!num || c == base || (base == "eager" && num->twin)) {
          row.push_back("-");
          continue;
        }
        const CellRatio ratio = cell_ratio(*num, *den);
        std::string text = cell_ratio_text(ratio);
        if (ratio.noisy) {
          t.footnotes.push_back("[" + std::to_string(t.footnotes.size() + 1) + "] " + r.label + " " + c + " " +
                                label + " noisy (" +
                                (ratio.interval ? "interval " + interval_extent_text(*ratio.interval)
                                                : std::string("no interval")) +
                                "): " + ratio.reason);
          text += " [" + std::to_string(t.footnotes.size()) + "]";
        }
        row.push_back(text);
        any = true;
      }
      if (!any) continue;
      if (t.rows.empty()) {
        t.rows.push_back({"model", "over"});
        t.right_aligned = {false, false};
        for (const std::string& c : d.columns) {
          t.rows[0].push_back(c);
          t.right_aligned.push_back(true);
        }
      }
      t.rows.push_back(std::move(row));
    }
  }
  if (!t.rows.empty()) t.footnotes.insert(t.footnotes.begin(), "Ratio of medians; " + interval_method_note() + ".");
  return t;
}

ReportTable accuracy_table(const ReportData& d) {
  ReportTable t = variant_table(d, "Test top-1 accuracy (%, mean ± std over seeds)", top1_text);
  t.footnotes.clear();  // the step-time table already explains n/a and failed cells
  return t;
}

std::vector<std::string> agreement_lines(const ReportData& d) {
  std::vector<std::string> lines;
  for (const ReportRow& r : d.rows) {
    if (std::string p = parity_text(r); !p.empty()) lines.push_back(std::move(p));
    if (std::string s = seed_agreement_text(r); !s.empty()) lines.push_back(std::move(s));
  }
  return lines;
}

}  // namespace noeira
