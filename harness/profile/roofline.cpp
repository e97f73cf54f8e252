#include "harness/profile/roofline.h"

#include <algorithm>
#include <map>
#include <utility>

#include "harness/report/number_format.h"
#include "kernels/profiling/op_category.h"

namespace noeira {

std::optional<Roofline> known_roofline(const std::string& name) {
  // Dense TFLOP/s (bf16, TF32, fp32 on the CUDA cores) and memory TB/s, SXM parts unless
  // named; TF32 is half the bf16 rate on these parts.
  struct Part {
    const char* match;
    double bf16, fp32, tbs;
  };
  static const Part parts[] = {
      {"H200 NVL", 835.0, 60.0, 4.8}, {"H200", 989.4, 66.9, 4.8},
      {"H100 PCIe", 756.0, 51.2, 2.0}, {"H100 NVL", 835.0, 60.0, 3.9},
      {"H100", 989.4, 66.9, 3.35},     {"A100", 312.0, 19.5, 2.039},
  };
  for (const Part& p : parts)
    if (name.find(p.match) != std::string::npos)
      return Roofline{name, p.bf16 * 1e12, p.bf16 / 2.0 * 1e12, p.fp32 * 1e12, p.tbs * 1e12,
                      std::string("NVIDIA's data sheet for ") + p.match};
  return std::nullopt;
}

std::optional<Roofline> device_roofline(const nlohmann::json& device) {
  if (!device.is_object() || !device.value("available", false)) return std::nullopt;
  std::optional<Roofline> r = known_roofline(device.value("name", std::string()));
  if (!r) return std::nullopt;
  const double mem_mhz = device.value("memory_clock_max_mhz", 0.0);
  const double bus_bits = device.value("memory_bus_bits", 0.0);
  if (mem_mhz > 0 && bus_bits > 0) {
    r->bytes_per_s = 2.0 * mem_mhz * 1e6 * bus_bits / 8.0;
    r->basis += "; memory bandwidth from the device (" + format_number("%.0f", mem_mhz) +
                " MHz x " + format_number("%.0f", bus_bits) + "-bit bus x 2)";
  }
  return r;
}

namespace {

bool matrix_work(const std::string& category) {
  return category == "gemm" || category == "convolution" || category == "attention";
}

}  // namespace

std::vector<BudgetRow> roofline_budget(const OpProfiler& p, const Roofline& r, bool bf16,
                                       bool tf32, bool measured) {
  const double n = static_cast<double>(std::max<size_t>(1, p.steps().size()));
  const double matrix_rate = bf16 ? r.bf16_flops : tf32 ? r.tf32_flops : r.fp32_flops;
  // (op, step-0 shapes) -> sums over every profiled step.
  std::map<std::pair<std::string, std::string>, BudgetRow> rows;
  const std::vector<std::string>& shapes = p.call_shapes();
  for (const OpEvent& e : p.events()) {
    const size_t call = static_cast<size_t>(e.call);
    const std::string shape = call < shapes.size() ? shapes[call] : std::string();
    BudgetRow& row = rows[{e.op, shape}];
    row.op = e.op;
    row.shape = shape;
    row.category = op_category_name(e.category);
    row.calls_per_step += 1.0 / n;
    row.flops_per_step += e.cost.flops / n;
    row.bytes_per_step += e.cost.bytes / n;
    if (measured) row.measured_ms = std::max(0.0, row.measured_ms) + e.dur_us / 1e3 / n;
  }
  std::vector<BudgetRow> out;
  for (auto& [key, row] : rows) {
    const double rate = matrix_work(row.category) ? matrix_rate : r.fp32_flops;
    const double compute_s = rate > 0 ? row.flops_per_step / rate : 0.0;
    const double memory_s = r.bytes_per_s > 0 ? row.bytes_per_step / r.bytes_per_s : 0.0;
    row.compute_bound = compute_s > memory_s;
    row.budget_ms = std::max(compute_s, memory_s) * 1e3;
    out.push_back(row);
  }
  std::sort(out.begin(), out.end(), [](const BudgetRow& a, const BudgetRow& b) {
    return a.budget_ms != b.budget_ms ? a.budget_ms > b.budget_ms : a.op < b.op;
  });
  return out;
}

std::string render_budget(const std::vector<BudgetRow>& rows, const Roofline& r, bool bf16,
                          bool tf32, size_t top) {
  const bool measured = !rows.empty() && rows.front().measured_ms >= 0;
  std::string out = "roofline budget on " + r.device + " (" + r.basis + "): matrix work at " +
                    format_number("%.1f", (bf16 ? r.bf16_flops : tf32 ? r.tf32_flops : r.fp32_flops) / 1e12) +
                    " TFLOP/s (" + (bf16 ? "bf16" : tf32 ? "TF32" : "fp32, CUDA cores") +
                    "), other ops at " + format_number("%.2f", r.bytes_per_s / 1e12) +
                    " TB/s; an op's budget = max(FLOPs / rate, operand bytes / bandwidth)\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-24s %-13s %6s %10s %10s %8s %11s%s  %s\n", "op", "category",
                "calls", "GFLOP", "MB", "bound", "budget ms", measured ? "   measured ms  x budget" : "",
                "shapes");
  out += line;
  double total = 0, total_measured = 0;
  for (const BudgetRow& b : rows) {
    total += b.budget_ms;
    total_measured += std::max(0.0, b.measured_ms);
  }
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const BudgetRow& b = rows[i];
    std::string m;
    if (measured)
      m = format_number("%14.3f", b.measured_ms) + "  " +
          (b.budget_ms > 0 ? format_number("%7.1fx", b.measured_ms / b.budget_ms) : std::string("      -"));
    std::snprintf(line, sizeof line, "%-24s %-13s %6.1f %10.2f %10.1f %8s %11.4f%s  %.60s\n",
                  b.op.c_str(), b.category.c_str(), b.calls_per_step, b.flops_per_step / 1e9,
                  b.bytes_per_step / 1e6, b.compute_bound ? "compute" : "memory", b.budget_ms,
                  m.c_str(), b.shape.c_str());
    out += line;
  }
  if (rows.size() > top)
    out += "(" + std::to_string(rows.size() - top) + " more rows in the total)\n";
  out += "step budget at peak: " + format_number("%.3f", total) + " ms";
  if (measured)
    out += "; measured (the ops' sum): " + format_number("%.3f", total_measured) + " ms, " +
           format_number("%.1f", total > 0 ? total_measured / total : 0.0) + "x the budget";
  out += "\n";
  return out;
}

}  // namespace noeira
