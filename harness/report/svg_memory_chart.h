// Inline SVG of peak memory per model, ours against the twin: a group of horizontal bars
// per model (one per variant that recorded it), the bar the peak, and inside our bars a
// thin stacked strip of the memory plan by category (parameters, gradients, ...), with a
// legend of the categories. Every string is escaped.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace noeira {

struct MemoryBar {
  std::string label, color;  // the variant: "eager", "twin:eager"
  int64_t bytes = 0;         // the peak
  std::vector<std::pair<std::string, int64_t>> plan;  // ours: bytes per plan category ("optimizer_state" or "optimizer state"); empty for the twin
};

struct MemoryGroup {
  std::string label;  // the model: "mlp (cpu, bf16)"
  std::vector<MemoryBar> bars;
};

// No group with a bar: an empty string.
std::string svg_memory_chart(const std::vector<MemoryGroup>& groups, const std::string& axis_label);

}  // namespace noeira
