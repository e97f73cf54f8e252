#include "harness/run/resource_table.h"

#include <set>

#include "harness/report/number_format.h"

namespace noeira {

namespace {

std::string step_cell(const VariantRecord& v) {
  const std::optional<TimerKind> t = v.best_timer();
  if (!t) return "-";
  return format_ms(v.summary.timers[*t]->median_ms) + " (" + timer_name(*t)[0] + ")";
}

bool any_resources(const BenchmarkRecord& b) {
  for (const VariantRecord& v : b.variants)
    for (const RunRecord& r : v.runs)
      if (r.memory || r.time_to_target || r.energy) return true;
  return false;
}

}  // namespace

TableRows resource_rows(const BenchmarkRecord& b, bool gpu) {
  TableRows rows;
  std::vector<std::string> header = {"variant", "ms/step", "plan", "peak RSS"};
  if (gpu) header.push_back("device mem");
  header.insert(header.end(), {"time to target", "energy"});
  rows.push_back(header);
  for (const VariantRecord& v : b.variants) {
    if (!v.ran() || v.runs.empty()) continue;
    const VariantResources r = variant_resources(v);
    std::vector<std::string> row = {v.name, step_cell(v), format_bytes(r.plan_total_bytes),
                                    format_bytes(r.peak_rss_bytes)};
    if (gpu) row.push_back(format_bytes(r.device_bytes) + (r.device_bytes ? " (" + r.device_bytes_what + ")" : ""));
    row.push_back(ttt_text(r));
    row.push_back(energy_text(r));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string resource_notes(const BenchmarkRecord& b) {
  if (!any_resources(b)) return "";
  std::string s;
  std::set<std::string> rss, energy_why, energy_scope;
  std::optional<TimeToTargetRecord> target;
  for (const VariantRecord& v : b.variants)
    for (const RunRecord& r : v.runs) {
      if (r.memory && !r.memory->rss_method.empty()) rss.insert((v.twin() ? "twin: " : "ours: ") + r.memory->rss_method);
      if (r.time_to_target && !target) target = r.time_to_target;
      if (r.energy && !r.energy->available) energy_why.insert((v.twin() ? "twin: " : "ours: ") + r.energy->why);
      if (r.energy && r.energy->available) energy_scope.insert(r.energy->source + " over " + r.energy->scope);
    }
  s += "memory: plan = our memory plan's arenas (bytes per category in the results file); peak RSS = ";
  for (auto it = rss.begin(); it != rss.end(); ++it) s += (it == rss.begin() ? "" : "; ") + *it;
  s += "\n";
  if (target) {
    const bool top1 = target->metric == "test_top1";
    s += "time to target: " + std::string(top1 ? "test top-1 >= " : "validation loss <= ") +
         format_number("%g", target->target) + (top1 ? " %" : "") +
         ", wall time from the first touch of the data (ours: the process's one read of the files, " +
         format_number("%.2f", target->data_seconds.value_or(0.0)) +
         " s, plus the run from its trainer's construction; the twin: its process's read of the files on) "
         "to the end of the first evaluation that reaches it, evaluations (every epoch, or eval_interval, "
         "until reached) included; median over the seeds that reached it (reached/seeds)\n";
  } else {
    s += "time to target: the recipe names no target score\n";
  }
  if (!energy_scope.empty())
    for (const std::string& e : energy_scope) s += "energy: " + e + ", over the timed steps (evaluations left out)\n";
  for (const std::string& w : energy_why) s += "energy n/a: " + w + "\n";
  return s;
}

std::string render_resource_table(const BenchmarkRecord& b, const std::string& target) {
  if (!any_resources(b)) return "";
  const TableRows rows = resource_rows(b, target == "gpu");
  if (rows.size() < 2) return "";
  std::vector<bool> right(rows[0].size(), true);
  right[0] = false;
  std::string out = "\n";  // appended, not "\n" + ...: GCC 12 warns falsely (-Wrestrict)
  out += render_text_table(rows, right);
  out += resource_notes(b);
  return out;
}

}  // namespace noeira
