#include "harness/report/report_data.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "harness/report/number_format.h"
#include "harness/results/partial_results.h"
#include "harness/results/results_access.h"

namespace noeira {

using nlohmann::json;

namespace {

ReportContext context_of(const LoadedResults& f) {
  const json& c = f.results.at("context");
  ReportContext rc;
  rc.source = f.path;
  rc.created = text_of(f.results, "created_utc");
  rc.partial = partial_summary(f.results);
  const json& host = c.at("host");
  rc.host = text_of(host, "cpu_model") + " (" + text_of(host, "cores") + " cores, " +
            text_of(host, "os") + ")";
  const json& dev = c.at("device");
  if (dev.value("available", false)) {
    rc.device = text_of(dev, "name");
    for (const char* k : {"sm", "driver", "runtime"})
      if (!text_of(dev, k).empty()) rc.device += std::string(", ") + k + " " + text_of(dev, k);
  } else {
    rc.device = "none (" + text_of(dev, "reason") + ")";
  }
  rc.git = text_of(c, "git_sha").substr(0, 12);  // as `git log --oneline` abbreviates it
  if (rc.git.empty()) rc.git = "unknown";
  if (c.value("git_dirty", false)) rc.git += " (dirty)";
  const json& twin = c.at("twin");
  rc.torch = twin.value("available", false) ? "torch " + text_of(twin, "torch_version")
                                            : "twin unavailable (" + text_of(twin, "reason") + ")";
  rc.command_line = text_of(c, "command_line");
  const json& build = c.at("build");
  if (const auto ob = build.find("openblas"); ob != build.end() && ob->is_object())
    rc.cpu_kernels = "OpenBLAS " + text_of(*ob, "core");
  if (const auto dn = build.find("onednn"); dn != build.end() && dn->is_object())
    rc.cpu_kernels += (rc.cpu_kernels.empty() ? "" : ", ") + std::string("oneDNN ") +
                      text_of(*dn, "version") + " " + text_of(*dn, "isa");
  if (const auto w = c.find("warnings"); w != c.end() && w->is_array())
    for (const json& line : *w)
      if (line.is_string()) rc.warnings.push_back(line.get<std::string>());
  if (const auto p = c.find("probes"); p != c.end() && p->is_object()) rc.probes = *p;
  return rc;
}

std::vector<double> losses_of(const json& variant) {
  std::vector<double> out;
  const json& runs = variant.at("runs");
  if (runs.empty()) return out;
  for (const json& l : runs[0].at("losses"))
    out.push_back(l.is_number() ? l.get<double>() : std::numeric_limits<double>::quiet_NaN());
  return out;
}

ReportCell cell_of(const json& v) {
  ReportCell c;
  c.twin = text_of(v, "impl") == "torch";
  if (!v.value("available", false)) {
    c.state = ReportCell::State::kUnavailable;
    c.reason = text_of(v, "unavailable_reason");
    return c;
  }
  if (!text_of(v, "error").empty()) {
    c.state = ReportCell::State::kFailed;
    c.reason = text_of(v, "error");
    return c;
  }
  if (const auto p = v.find("pending_seeds"); p != v.end() && p->is_array())
    c.pending_seeds = static_cast<int64_t>(p->size());
  c.seeds_done = static_cast<int64_t>(v.at("runs").size());
  if (c.pending_seeds > 0 && c.seeds_done == 0) {
    c.state = ReportCell::State::kPending;
    return c;
  }
  c.losses = losses_of(v);
  if (const auto clocks = v.find("clocks"); clocks != v.end() && clocks->is_object())
    c.clock_warning = text_of(*clocks, "warning");
  const json& summary = v.at("summary");
  if (const auto top1 = summary.find("test_top1"); top1 != summary.end() && top1->is_object()) {
    if (top1->at("mean").is_number()) c.top1_mean = top1->at("mean").get<double>();
    if (top1->at("std").is_number()) c.top1_std = top1->at("std").get<double>();
    c.top1_n = top1->at("n").get<int64_t>();
  }
  c.timer = best_summary_timer(v);
  if (c.timer.empty()) {
    c.state = ReportCell::State::kNoTimer;
    return c;
  }
  const json& t = *summary_timer(v, c.timer);
  c.state = ReportCell::State::kMeasured;
  c.median_ms = t.at("median_ms").get<double>();
  c.q1_ms = t.at("q1_ms").get<double>();
  c.q3_ms = t.at("q3_ms").get<double>();
  return c;
}

}  // namespace

ReportData build_report_data(const std::vector<LoadedResults>& files) {
  ReportData d;
  std::set<std::string> names, timers;
  for (const LoadedResults& f : files) {
    d.contexts.push_back(context_of(f));
    const json& config = f.results.at("config");
    for (const json& b : f.results.at("benchmarks")) {
      ReportRow row;
      row.model = text_of(b, "model");
      row.dataset = text_of(b, "dataset");
      row.target = text_of(config, "target");
      row.dtype = text_of(config, "dtype");
      row.source = f.path;
      row.label = row.model + " (" + row.target + ", " + row.dtype + ")";
      row.parity = b.at("parity");
      row.seed_agreement = b.at("seed_agreement");
      for (const json& v : b.at("variants")) {
        const std::string name = text_of(v, "name");
        ReportCell c = cell_of(v);
        if (c.state == ReportCell::State::kMeasured) timers.insert(c.timer);
        row.cells[name] = std::move(c);
        names.insert(name);
      }
      d.rows.push_back(std::move(row));
    }
  }
  // The same model/target/dtype from two files: tell the rows apart by file name.
  std::map<std::string, int> uses;
  for (const ReportRow& r : d.rows) ++uses[r.label];
  for (ReportRow& r : d.rows)
    if (uses[r.label] > 1)
      r.label += " [" + std::filesystem::path(r.source).filename().string() + "]";
  for (std::string_view known : kVariantOrder)
    if (names.erase(std::string(known))) d.columns.emplace_back(known);
  d.columns.insert(d.columns.end(), names.begin(), names.end());  // unknown names, sorted
  for (std::string_view t : kTimersByPreference)
    if (timers.count(std::string(t))) d.timers.emplace_back(t);
  return d;
}

std::vector<std::string> partial_lines(const ReportData& d) {
  std::vector<std::string> lines;
  for (const ReportContext& c : d.contexts)
    if (!c.partial.empty()) lines.push_back(c.source + ": " + c.partial);
  return lines;
}

std::string step_time_text(const ReportCell& c, bool mark_timer) {
  switch (c.state) {
    case ReportCell::State::kAbsent:
      return "-";
    case ReportCell::State::kUnavailable:
      return "n/a";
    case ReportCell::State::kFailed:
      return "failed";
    case ReportCell::State::kPending:
      return "pending";
    case ReportCell::State::kNoTimer:
      return "not timed";
    case ReportCell::State::kMeasured:
      break;
  }
  std::string s = format_ms(c.median_ms);
  if (mark_timer) s += std::string(" (") + c.timer[0] + ")";
  if (c.pending_seeds > 0)
    s += " (" + std::to_string(c.seeds_done) + "/" + std::to_string(c.seeds_done + c.pending_seeds) +
         " seeds)";
  return s;
}

std::string top1_text(const ReportCell& c) {
  switch (c.state) {
    case ReportCell::State::kAbsent:
      return "-";
    case ReportCell::State::kUnavailable:
      return "n/a";
    case ReportCell::State::kFailed:
      return "failed";
    case ReportCell::State::kPending:
      return "pending";
    default:
      break;
  }
  if (!c.top1_mean) return "n/a";
  std::string s = format_number("%.2f", *c.top1_mean);
  if (c.top1_std && c.top1_n > 1) s += " ± " + format_number("%.2f", *c.top1_std);
  return s;
}

std::string parity_text(const ReportRow& r) {
  if (!r.parity.is_object()) return "";
  const json& p = r.parity;
  return "Parity (" + r.label + "): max relative loss deviation " +
         format_number("%.2e", p.at("max_rel_dev").get<double>()) + " over " + text_of(p, "steps") +
         " steps (bound " + format_number("%.0e", p.at("bound").get<double>()) + ")" +
         (p.contains("early_steps") && p.at("early_max_rel_dev").is_number()
              ? ", " + format_number("%.2e", p.at("early_max_rel_dev").get<double>()) +
                    " over the first " + text_of(p, "early_steps") + " (bound " +
                    format_number("%.0e", p.at("early_bound").get<double>()) + ")"
              : "") +
         ": " + (p.at("passed").get<bool>() ? "passed" : "FAILED");
}

std::string seed_agreement_text(const ReportRow& r) {
  if (!r.seed_agreement.is_object()) return "";
  const json& s = r.seed_agreement;
  std::string line = "Seed agreement (" + r.label + "): " + text_of(s, "test") + " statistic " +
                     format_number("%.4g", s.at("statistic").get<double>()) +
                     ", p = " + format_p(s.at("p_value").get<double>()) + ": " +
                     (s.at("agree").get<bool>() ? "agree" : "DISAGREE");
  if (!text_of(s, "note").empty()) line += " (" + text_of(s, "note") + ")";
  return line;
}

}  // namespace noeira
