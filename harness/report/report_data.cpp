#include "harness/report/report_data.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "harness/report/number_format.h"
#include "harness/report/report_resources.h"

namespace noeira {

namespace {

// Our variants, then the twin's modes: the column order of every table.
constexpr std::array<std::string_view, 7> kVariantOrder = {
    "eager", "graph", "bf16", "bf16+graph", "twin:eager", "twin:compiled", "twin:graphs"};

std::vector<double> losses_of(const VariantRecord& v) {
  std::vector<double> out;
  if (v.runs.empty()) return out;
  for (const Nullable<double>& l : v.runs[0].losses)
    out.push_back(l ? *l : std::numeric_limits<double>::quiet_NaN());
  return out;
}

ReportCell cell_of(const VariantRecord& v, int64_t cores) {
  ReportCell c;
  c.cores = cores;
  c.twin = v.twin();
  c.dtype = v.dtype;
  if (!v.available) {
    c.state = ReportCell::State::kUnavailable;
    c.reason = v.unavailable_reason.value_or("");
    return c;
  }
  if (v.error && !v.error->empty()) {
    c.state = ReportCell::State::kFailed;
    c.reason = *v.error;
    return c;
  }
  if (v.pending_seeds) c.pending_seeds = static_cast<int64_t>(v.pending_seeds->size());
  c.seeds_done = static_cast<int64_t>(v.runs.size());
  if (c.pending_seeds > 0 && c.seeds_done == 0) {
    c.state = ReportCell::State::kPending;
    return c;
  }
  c.losses = losses_of(v);
  c.resources = variant_resources(v);
  for (const RunRecord& r : v.runs)
    if (r.memory && !r.memory->plan_bytes.empty()) {
      c.plan_bytes = r.memory->plan_bytes;
      break;
    }
  if (v.clocks) c.clock_warning = v.clocks->warning;
  c.top1 = v.summary.test_top1;
  c.loss = v.summary.test_loss;
  const std::optional<TimerKind> timer = v.best_timer();
  if (!timer) {
    c.state = ReportCell::State::kNoTimer;
    return c;
  }
  const TimerStats& t = *v.summary.timers[*timer];
  c.timer = timer_name(*timer);
  c.state = ReportCell::State::kMeasured;
  c.median_ms = t.median_ms;
  c.q1_ms = t.q1_ms;
  c.q3_ms = t.q3_ms;
  c.seed_samples = seed_samples(v, *timer);
  c.n = t.n;
  c.cv = t.cv.value_or(0.0);
  c.load = load_seen(v);
  return c;
}

}  // namespace

ReportData build_report_data(const std::vector<LoadedResults>& files) {
  ReportData d;
  std::set<std::string> names, timers;
  for (const LoadedResults& f : files) {
    d.contexts.push_back(report_context(f.path, f.results));
    const ConfigRecord& config = f.results.config;
    for (const BenchmarkRecord& b : f.results.benchmarks) {
      ReportRow row{.label = b.model + " (" + config.target + ", " + config.dtype + ")",
                    .model = b.model,
                    .dataset = b.dataset,
                    .target = config.target,
                    .dtype = config.dtype,
                    .source = f.path,
                    .cells = {},
                    .parity = b.parity,
                    .seed_agreement = b.seed_agreement,
                    .flops_per_step = b.flops_per_step,
                    .peak_flops = b.peak_flops,
                    .profile = b.profile};
      for (const VariantRecord& v : b.variants) {
        ReportCell c = cell_of(v, f.results.context.host.cores);
        if (c.state == ReportCell::State::kMeasured) timers.insert(c.timer);
        row.cells[v.name] = std::move(c);
        names.insert(v.name);
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
  for (TimerKind t : kTimersByPreference)
    if (timers.count(timer_name(t))) d.timers.emplace_back(timer_name(t));
  fill_resources(d, files);  // memory, time to target, energy
  return d;
}

CellRatio cell_ratio(const ReportCell& num, const ReportCell& den) {
  CellRatio r;
  r.ratio = den.median_ms > 0.0 ? num.median_ms / den.median_ms : 0.0;
  r.interval = ratio_interval(num.seed_samples, den.seed_samples);
  r.noisy = !r.interval || r.interval->wide();
  if (r.noisy) {
    auto larger = [](std::optional<double> a, std::optional<double> b) {
      return a && b ? std::optional<double>(std::max(*a, *b)) : a ? a : b;
    };
    const LoadSeen load{larger(num.load.max_steal, den.load.max_steal),
                        larger(num.load.max_loadavg, den.load.max_loadavg)};
    r.reason = noisy_reason(load, std::min(num.n, den.n), std::max(num.cv, den.cv),
                            std::max(num.cores, den.cores));
  }
  return r;
}

std::string cell_ratio_text(const CellRatio& r) {
  std::string s = r.interval ? format_ratio_interval(*r.interval) : format_number("%.2fx", r.ratio);
  return r.noisy ? s + " noisy" : s;
}

std::vector<std::string> partial_lines(const ReportData& d) {
  std::vector<std::string> lines;
  for (const ReportContext& c : d.contexts)
    if (!c.partial.empty()) lines.push_back(c.source + ": " + c.partial);
  return lines;
}

namespace {

// What a cell that holds no figures shows, in any table: "-", "n/a", "failed", "pending".
std::optional<std::string> state_text(const ReportCell& c) {
  switch (c.state) {
    case ReportCell::State::kAbsent: return "-";
    case ReportCell::State::kUnavailable: return "n/a";
    case ReportCell::State::kFailed: return "failed";
    case ReportCell::State::kPending: return "pending";
    default: return std::nullopt;
  }
}

}  // namespace

std::string step_time_text(const ReportCell& c, bool mark_timer) {
  if (const std::optional<std::string> s = state_text(c)) return *s;
  if (c.state == ReportCell::State::kNoTimer) return "not timed";
  std::string s = format_ms(c.median_ms);
  if (mark_timer) s += std::string(" (") + c.timer[0] + ")";
  if (c.pending_seeds > 0)
    s += " (" + std::to_string(c.seeds_done) + "/" + std::to_string(c.seeds_done + c.pending_seeds) +
         " seeds)";
  return s;
}

std::string top1_text(const ReportCell& c) {
  if (const std::optional<std::string> s = state_text(c)) return *s;
  if (!c.top1 || !c.top1->mean) return "n/a";
  std::string s = format_number("%.2f", *c.top1->mean);
  if (c.top1->std && c.top1->n > 1) s += " ± " + format_number("%.2f", *c.top1->std);
  return s;
}

std::string parity_text(const ReportRow& r) {
  if (!r.parity) return "";
  const ParityRecord& p = *r.parity;
  return "Parity (" + r.label + "): max relative loss deviation " +
         format_number("%.2e", p.max_rel_dev.value_or(NAN)) + " over " + std::to_string(p.steps) +
         " steps (bound " + format_number("%.0e", p.bound) + ")" +
         (p.early && p.early->max_rel_dev
              ? ", " + format_number("%.2e", *p.early->max_rel_dev) + " over the first " +
                    std::to_string(p.early->steps) + " (bound " +
                    format_number("%.0e", p.early->bound) + ")"
              : "") +
         ": " + (p.passed ? "passed" : "FAILED");
}

std::string seed_agreement_text(const ReportRow& r) {
  if (!r.seed_agreement) return "";
  const SeedAgreementRecord& s = *r.seed_agreement;
  std::string line = "Seed agreement (" + r.label + "): " + s.test + " statistic " +
                     format_number("%.4g", s.statistic) + ", p = " + format_p(s.p_value) + ": " +
                     (s.agree ? "agree" : "DISAGREE");
  if (!s.note.empty()) line += " (" + s.note + ")";
  return line;
}

}  // namespace noeira
