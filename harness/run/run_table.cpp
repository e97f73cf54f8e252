#include "harness/run/run_table.h"

#include "harness/env/host_info.h"
#include "harness/report/number_format.h"
#include "harness/twin/parity.h"
#include "harness/results/partial_results.h"
#include "harness/results/results_access.h"
#include "harness/report/text_table.h"

namespace noeira {

namespace {

const nlohmann::json* timer_of(const nlohmann::json& v, const char* name) {
  return summary_timer(v, name);
}

std::string cell(const nlohmann::json& v, const char* timer) {
  const nlohmann::json* t = timer_of(v, timer);
  if (!t) return "-";
  return format_ms((*t)["median_ms"].get<double>()) + " [" + format_ms((*t)["q1_ms"].get<double>()) +
         "-" + format_ms((*t)["q3_ms"].get<double>()) + "]";
}

// "eager 1.234 vs 1.200 ms (+2.8%)": wall ms/step with CUPTI on vs off, or "" if unknown.
std::string cupti_overhead_cell(const nlohmann::json& v) {
  const nlohmann::json& o = v["summary"].value("cupti_overhead", nlohmann::json());
  if (!o.is_object()) return "";
  std::string s = v["name"].get<std::string>() + " " + format_ms(o["wall_on_ms"].get<double>()) +
                  " vs " + format_ms(o["wall_off_ms"].get<double>()) + " ms";
  if (o["ratio"].is_number())
    s += " (" + format_number("%+.1f%%", 100.0 * (o["ratio"].get<double>() - 1.0)) + ")";
  return s;
}

std::string seed_cell(const nlohmann::json& stats, const char* fmt) {
  if (!stats.is_object()) return "-";
  std::string s = format_number(fmt, stats["mean"].get<double>());
  if (stats["n"].get<int>() > 1 && stats["std"].is_number())
    s += " ± " + format_number(fmt, stats["std"].get<double>());
  return s;
}

}  // namespace

std::string render_run_table(const nlohmann::json& b, const std::string& target) {
  const bool gpu = target == "gpu";
  // The reference for the ratio column: the twin's eager mode, same timer.
  const nlohmann::json* ref = nullptr;
  const nlohmann::json* ours = nullptr;  // our fp32 eager: the baseline of bf16 rows
  bool any_bf16 = false;
  for (const auto& v : b["variants"]) {
    const bool ran = variant_ran(v);
    if (v["name"] == "twin:eager" && ran) ref = &v;
    if (v["name"] == "eager" && ran) ours = &v;
    if (v["impl"] == "noeira" && v["dtype"] == "bf16") any_bf16 = true;
  }
  auto ratio_to = [](const nlohmann::json& v, const nlohmann::json* base) -> std::string {
    if (!base || &v == base) return "-";
    for (const char* tn : {"device", "event", "wall"}) {
      const nlohmann::json *a = timer_of(v, tn), *r = timer_of(*base, tn);
      if (a && r && (*r)["n"].get<int64_t>() > 1)
        return format_number("%.2fx", (*a)["median_ms"].get<double>() / (*r)["median_ms"].get<double>()) +
               " (" + tn + ")";
    }
    return "-";
  };

  // Language models: throughput from the most precise timer, and the model FLOP
  // utilisation where the GPU's peak is known.
  const bool lm = b.contains("tokens_per_step");
  const bool mfu = lm && b.contains("peak_flops") && b["peak_flops"].is_object();
  auto step_ms = [&](const nlohmann::json& v) -> double {
    for (const char* tn : {"device", "event", "wall"})
      if (const nlohmann::json* t = timer_of(v, tn)) return (*t)["median_ms"].get<double>();
    return 0.0;
  };

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
  std::string notes, overheads;
  for (const auto& v : b["variants"]) {
    const std::string name = v["name"];
    // A stopped run (harness/results/partial_results.h): seeds that never finished.
    const size_t pending = v.contains("pending_seeds") ? v["pending_seeds"].size() : 0;
    if (pending > 0 && v["runs"].empty()) {
      std::vector<std::string> r(header.size(), "");
      r[0] = name;
      r[1] = "pending";
      rows.push_back(r);
      notes += "  " + name + ": not run (the run stopped first)\n";
      continue;
    }
    if (pending > 0)
      notes += "  " + name + ": " + std::to_string(v["runs"].size()) + " of " +
               std::to_string(v["runs"].size() + pending) + " seeds finished (the run stopped)\n";
    if (!variant_ran(v)) {
      const std::string why = !v["error"].is_null() ? v["error"].get<std::string>()
                                                    : "n/a: " + v["unavailable_reason"].get<std::string>();
      std::vector<std::string> r(header.size(), "");
      r[0] = name;
      r[1] = v["error"].is_null() ? "n/a" : "failed";
      rows.push_back(r);
      notes += "  " + name + ": " + why + "\n";
      continue;
    }
    // Ratios use the timer both sides have, most precise first.
    const nlohmann::json* w = timer_of(v, "wall");
    std::vector<std::string> r = {name, cell(v, "wall")};
    if (gpu) r.insert(r.end(), {cell(v, "device"), cell(v, "event")});
    r.push_back(w && (*w)["cv"].is_number() ? format_number("%.1f%%", 100.0 * (*w)["cv"].get<double>()) : "-");
    r.push_back(w ? std::to_string((*w)["n"].get<int64_t>()) : "-");
    r.push_back(ratio_to(v, ref));
    if (any_bf16) r.push_back(v["impl"] == "noeira" ? ratio_to(v, ours) : "-");
    if (const std::string o = cupti_overhead_cell(v); !o.empty())
      overheads += (overheads.empty() ? "" : ", ") + o;
    // NVML's view of the GPU around the variant (harness/env/gpu_clocks.h).
    if (v.contains("clocks") && v["clocks"].is_object() &&
        !v["clocks"].value("warning", std::string()).empty()) {
      r[0] += " [!]";
      notes += "  " + name + ": WARNING " + v["clocks"]["warning"].get<std::string>() + "\n";
    }
    if (lm) {
      const double ms = step_ms(v);
      const double per_s = ms > 0.0 ? 1000.0 / ms : 0.0;
      r.push_back(ms > 0.0 ? format_number("%.0f", per_s * b["tokens_per_step"].get<double>()) : "-");
      const double flops = per_s * b["flops_per_step"].get<double>();
      r.push_back(ms > 0.0 ? format_number("%.3g", flops / 1e12) : "-");
      if (mfu) {
        const double peak = b["peak_flops"].value(v["dtype"].get<std::string>(), 0.0);
        r.push_back(ms > 0.0 && peak > 0.0 ? format_number("%.1f%%", 100.0 * flops / peak) : "-");
      }
    } else {
      r.push_back(seed_cell(v["summary"]["test_top1"], "%.2f"));
    }
    r.push_back(seed_cell(v["summary"]["test_loss"], "%.4f"));
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
           "events, else wall); " + format_number("%.4g", b["flops_per_step"].get<double>() / 1e12) +
           " TFLOP per step (6N + 12LHQT per token)" +
           (mfu ? "; MFU against " + b["peak_flops"]["device"].get<std::string>() +
                      "'s dense peak for the variant's dtype"
                : std::string()) + "\n";
  if (!notes.empty()) out += "notes:\n" + notes;
  return out;
}

std::string render_run_notes(const nlohmann::json& results, const nlohmann::json& b,
                             const std::string& target, const std::string& parity_note) {
  std::string s = render_warnings(results["context"]["warnings"]);
  if (!b["parity"].is_null())
    s += parity_line(b["parity"]) + "\n";
  else if (!parity_note.empty())
    s += parity_note + "\n";
  // The twin's compiled modes: how long torch.compile took (inside the warm-up, not in
  // the step times) and what it made of the step.
  for (const auto& v : b["variants"]) {
    if (!v.contains("runs") || v["runs"].empty()) continue;
    const nlohmann::json& r0 = v["runs"][0];
    const auto c = r0.find("compile_seconds");
    if (c == r0.end() || !c->is_number()) continue;
    std::string line = v["name"].get<std::string>() + ": torch.compile took " + format_number("%.1f", c->get<double>()) +
                       " s (seed " + std::to_string(r0.value("seed", 0)) + ", in the warm-up, not in the step times)";
    if (const auto i = r0.find("twin_impl"); i != r0.end() && i->is_object() && i->contains("compiled_graphs"))
      line += "; " + std::to_string(i->value("compiled_graphs", 0)) + " graphs, " +
              std::to_string(i->value("graph_breaks", 0)) + " graph breaks";
    s += line + "\n";
  }
  if (!b["seed_agreement"].is_null())
    s += "seeds: " + b["seed_agreement"]["note"].get<std::string>() + " [" +
         b["seed_agreement"]["test"].get<std::string>() +
         ", p = " + format_p(b["seed_agreement"]["p_value"].get<double>()) + "]\n";
  s += std::string("timers: wall = host clock per step") +
       (target == "gpu" ? " (blocks of 10 synchronised steps), event = CUDA events (both "
                          "untraced), device = CUPTI busy time (a separate traced pass over the "
                          "same steps)"
                        : "") +
       "; warm-up excluded; ratio < 1 means faster than the twin\n";
  if (const std::string p = partial_summary(results); !p.empty()) s += p + "\n";
  return s;
}

std::string seed_line(const std::string& label, const nlohmann::json& run, FamilyScore score) {
  const bool lm = score == FamilyScore::kValidationLoss;
  const auto& w = run["timers"]["wall"];
  const auto& value = lm ? run["test_loss"] : run["test_top1"];
  return "  " + label + ": " + (w.is_object() ? format_ms(w["median_ms"].get<double>()) : "-") +
         " ms/step, " + (lm ? "val loss " : "test top1 ") +
         (value.is_number() ? format_number(lm ? "%.4f" : "%.2f", value.get<double>()) : "-") + "\n";
}

}  // namespace noeira
