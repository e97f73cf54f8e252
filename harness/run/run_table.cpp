#include "harness/run/run_table.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "harness/env/host_info.h"
#include "harness/report/number_format.h"
#include "harness/report/text_table.h"
#include "harness/results/partial_results.h"
#include "harness/run/variant.h"
#include "harness/run/variant_ratio.h"
#include "harness/twin/parity.h"

namespace noeira {

namespace {

std::string cell(const VariantRecord& v, TimerKind timer) {
  const Nullable<TimerStats>& t = v.summary.timers[timer];
  if (!t) return "-";
  return format_ms(t->median_ms) + " [" + format_ms(t->q1_ms) + "-" + format_ms(t->q3_ms) + "]";
}

// "eager 1.234 vs 1.200 ms (+2.8%)": wall ms/step with CUPTI on vs off, or "" if unknown.
std::string cupti_overhead_cell(const VariantRecord& v) {
  const Nullable<CuptiOverheadStats>& o = v.summary.cupti_overhead;
  if (!o) return "";
  std::string s = v.name + " " + format_ms(o->wall_on_ms) + " vs " + format_ms(o->wall_off_ms) + " ms";
  if (o->ratio) s += " (" + format_number("%+.1f%%", 100.0 * (*o->ratio - 1.0)) + ")";
  return s;
}

std::string seed_cell(const Nullable<ScoreStats>& stats, const char* fmt) {
  if (!stats || !stats->mean) return "-";
  std::string s = format_number(fmt, *stats->mean);
  if (stats->n > 1 && stats->std) s += " ± " + format_number(fmt, *stats->std);
  return s;
}

// Ratios use the timer both sides have, most precise first, with their 95% interval
// (harness/run/variant_ratio.h); a noisy one is explained in the notes.
std::string ratio_to(const VariantRecord& v, const VariantRecord* base, int64_t cores, std::string& notes) {
  if (!base || &v == base) return "-";
  const std::optional<VariantRatio> r = variant_ratio(v, *base, cores);
  if (!r) return "-";
  if (r->noisy)
    notes += "  " + v.name + " / " + base->name + ": noisy (" +
             (r->interval ? "interval " + interval_extent_text(*r->interval)
                          : std::string("no interval")) +
             "): " + r->reason + "\n";
  return ratio_text(*r) + " (" + timer_name(r->timer) + ")";
}

// "order interleaved; CPU over the timed windows: steal up to 0.3%, load average 1.1-2.4
// (2 cores)", from the runs' records; "" when nothing was recorded.
std::string order_and_load_line(const BenchmarkRecord& b, const std::optional<std::string>& order,
                                 int64_t cores) {
  std::optional<double> steal, lo, hi;
  for (const VariantRecord& v : b.variants)
    for (const RunRecord& r : v.runs) {
      if (!r.cpu_load) continue;
      if (r.cpu_load->steal_fraction && (!steal || *r.cpu_load->steal_fraction > *steal))
        steal = r.cpu_load->steal_fraction;
      for (const std::optional<double>& l : {r.cpu_load->loadavg_start, r.cpu_load->loadavg_end})
        if (l) {
          if (!lo || *l < *lo) lo = l;
          if (!hi || *l > *hi) hi = l;
        }
    }
  std::string s;
  if (order) {
    s = "order: " + *order;
    std::string seq;
    std::vector<std::pair<int64_t, std::string>> runs;
    for (const VariantRecord& v : b.variants)
      for (const RunRecord& r : v.runs)
        if (r.sequence) runs.emplace_back(*r.sequence, v.name + " s" + std::to_string(r.seed));
    std::sort(runs.begin(), runs.end());
    for (size_t i = 0; i < runs.size() && i < 6; ++i) seq += (i ? ", " : "") + runs[i].second;
    if (runs.size() > 6) seq += ", ...";
    if (!seq.empty()) s += " (" + seq + ")";
  }
  if (steal || lo) {
    s += std::string(s.empty() ? "" : "; ") + "CPU over the timed windows:";
    if (steal) s += " steal up to " + format_number("%.1f%%", 100.0 * *steal);
    if (lo)
      s += std::string(steal ? "," : "") + " load average " + format_number("%.2f", *lo) + "-" +
           format_number("%.2f", *hi) + (cores > 0 ? " (" + std::to_string(cores) + " cores)" : "");
  }
  return s.empty() ? s : s + "\n";
}

// The median step of the most precise timer, or 0.
double step_ms(const VariantRecord& v) {
  const std::optional<TimerKind> t = v.best_timer();
  return t ? v.summary.timers[*t]->median_ms : 0.0;
}

}  // namespace

std::string render_run_table(const BenchmarkRecord& b, const std::string& target, int64_t cores,
                             const std::optional<std::string>& order) {
  const bool gpu = target == "gpu";
  // The reference for the ratio column: the twin's eager mode, same timer.
  const VariantRecord* ref = nullptr;
  const VariantRecord* ours = nullptr;  // our fp32 eager: the baseline of bf16 rows
  bool any_bf16 = false;
  for (const VariantRecord& v : b.variants) {
    if (v.name == "twin:eager" && v.ran()) ref = &v;
    if (v.name == Variant{}.name() && v.ran()) ours = &v;
    if (!v.twin() && v.dtype == "bf16") any_bf16 = true;
  }
  // Language models: throughput from the most precise timer, and the model FLOP
  // utilisation where the GPU's peak is known.
  const bool lm = b.tokens_per_step.has_value();
  const bool mfu = lm && b.peak_flops.has_value();

  TableRows rows;
  std::vector<std::string> header = {"variant", "wall ms/step [q1-q3]"};
  if (gpu) header.insert(header.end(), {"device ms/step", "event ms/step"});
  header.insert(header.end(), {"cv", "n", "vs twin:eager"});
  if (any_bf16) header.push_back("vs eager");
  if (lm) {
    header.insert(header.end(), {"tokens/s", "TFLOP/s"});
    if (mfu) header.push_back("MFU");
    header.push_back("val loss");
  } else {
    header.insert(header.end(), {"test top1 %", "test loss"});
  }
  rows.push_back(header);
  std::string notes, overheads, noisy;
  for (const VariantRecord& v : b.variants) {
    // A stopped run (harness/results/partial_results.h): seeds that never finished.
    const size_t pending = v.pending_seeds ? v.pending_seeds->size() : 0;
    if (pending > 0 && v.runs.empty()) {
      std::vector<std::string> r(header.size(), "");
      r[0] = v.name;
      r[1] = "pending";
      rows.push_back(r);
      notes += "  " + v.name + ": not run (the run stopped first)\n";
      continue;
    }
    if (pending > 0)
      notes += "  " + v.name + ": " + std::to_string(v.runs.size()) + " of " +
               std::to_string(v.runs.size() + pending) + " seeds finished (the run stopped)\n";
    if (!v.ran()) {
      const std::string why = v.error ? *v.error : "n/a: " + v.unavailable_reason.value_or("");
      std::vector<std::string> r(header.size(), "");
      r[0] = v.name;
      r[1] = v.error ? "failed" : "n/a";
      rows.push_back(r);
      notes += "  " + v.name + ": " + why + "\n";
      continue;
    }
    const Nullable<TimerStats>& w = v.summary.timers.wall;
    std::vector<std::string> r = {v.name, cell(v, TimerKind::kWall)};
    if (gpu) r.insert(r.end(), {cell(v, TimerKind::kDevice), cell(v, TimerKind::kEvent)});
    r.push_back(w && w->cv ? format_number("%.1f%%", 100.0 * *w->cv) : "-");
    r.push_back(w ? std::to_string(w->n) : "-");
    r.push_back(ratio_to(v, ref, cores, noisy));
    if (any_bf16) r.push_back(!v.twin() ? ratio_to(v, ours, cores, noisy) : "-");
    if (const std::string o = cupti_overhead_cell(v); !o.empty())
      overheads += (overheads.empty() ? "" : ", ") + o;
    // NVML's view of the GPU around the variant (harness/env/gpu_clocks.h).
    if (v.clocks && !v.clocks->warning.empty()) {
      r[0] += " [!]";
      notes += "  " + v.name + ": WARNING " + v.clocks->warning + "\n";
    }
    if (lm) {
      const double ms = step_ms(v);
      const double per_s = ms > 0.0 ? 1000.0 / ms : 0.0;
      r.push_back(ms > 0.0 ? format_number("%.0f", per_s * static_cast<double>(*b.tokens_per_step)) : "-");
      const double flops = per_s * b.flops_per_step.value_or(0.0);
      r.push_back(ms > 0.0 ? format_number("%.3g", flops / 1e12) : "-");
      if (mfu) {
        const double peak = b.peak_flops->for_dtype(v.dtype).value_or(0.0);
        r.push_back(ms > 0.0 && peak > 0.0 ? format_number("%.1f%%", 100.0 * flops / peak) : "-");
      }
    } else {
      r.push_back(seed_cell(v.summary.test_top1, "%.2f"));
    }
    r.push_back(seed_cell(v.summary.test_loss, "%.4f"));
    rows.push_back(r);
  }
  std::vector<bool> right(header.size(), true);
  right[0] = false;
  std::string out = render_text_table(rows, right);
  if (!overheads.empty())
    out += "CUPTI overhead (wall ms/step, device-timer pass with CUPTI on vs the timed run with "
           "it off): " + overheads + "\n";
  if (lm)
    out += "tokens/s and TFLOP/s from the median step (device timer where there is one, else "
           "events, else wall); " + format_number("%.4g", b.flops_per_step.value_or(0.0) / 1e12) +
           " TFLOP per step (6N + 12LHQT per token)" +
           (mfu ? "; MFU against " + b.peak_flops->device + "'s dense peak for the variant's dtype (fp32: " +
                     (b.peak_flops->fp32_basis == "tf32" ? "TF32 tensor cores" : "CUDA cores, TF32 off") + ")"
                : std::string()) + "\n";
  out += order_and_load_line(b, order, cores);
  if (ref || any_bf16) out += "ratios: " + interval_method_note() + "\n";
  if (!noisy.empty()) out += "noisy ratios:\n" + noisy;
  if (!notes.empty()) out += "notes:\n" + notes;
  return out;
}

std::string render_run_notes(const ResultsRecord& results, const BenchmarkRecord& b,
                             const std::string& target, const std::string& parity_note) {
  std::string s = render_warnings(results.context.warnings.value_or(std::vector<std::string>{}));
  if (b.parity)
    s += parity_line(*b.parity) + "\n";
  else if (!parity_note.empty())
    s += parity_note + "\n";
  // The twin's compiled modes: how long torch.compile took (inside the warm-up, not in
  // the step times) and what it made of the step.
  for (const VariantRecord& v : b.variants) {
    if (v.runs.empty()) continue;
    const RunRecord& r0 = v.runs[0];
    if (!r0.compile_seconds || !*r0.compile_seconds) continue;
    std::string line = v.name + ": torch.compile took " + format_number("%.1f", **r0.compile_seconds) +
                       " s (seed " + std::to_string(r0.seed) + ", in the warm-up, not in the step times)";
    if (r0.twin_impl && r0.twin_impl->compiled_graphs)
      line += "; " + std::to_string(*r0.twin_impl->compiled_graphs) + " graphs, " +
              std::to_string(r0.twin_impl->graph_breaks.value_or(0)) + " graph breaks";
    s += line + "\n";
  }
  if (b.seed_agreement)
    s += "seeds: " + b.seed_agreement->note + " [" + b.seed_agreement->test +
         ", p = " + format_p(b.seed_agreement->p_value) + "]\n";
  s += std::string("timers: wall = host clock per step") +
       (target == "gpu" ? " (blocks of 10 synchronised steps), event = CUDA events (both "
                          "untraced), device = CUPTI busy time (a separate traced pass over the "
                          "same steps)"
                        : "") +
       "; warm-up excluded; ratio < 1 means faster than the twin\n";
  if (const std::string p = partial_summary(results); !p.empty()) s += p + "\n";
  return s;
}

std::string seed_line(const std::string& label, const RunRecord& run, FamilyScore score) {
  const bool lm = score == FamilyScore::kValidationLoss;
  const Nullable<TimerRecord>& w = run.timers.wall;
  const Nullable<double>& value = lm ? run.test_loss : run.test_top1;
  return "  " + label + ": " + (w ? format_ms(w->stats.median_ms) : "-") + " ms/step, " +
         (lm ? "val loss " : "test top1 ") +
         (value ? format_number(lm ? "%.4f" : "%.2f", *value) : "-") + "\n";
}

}  // namespace noeira
