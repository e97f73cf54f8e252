// Inline SVG of step-time ratios with their 95% intervals (harness/run/ratio_interval.h):
// one row per ratio, a point at the ratio and an error bar over its interval, on a log
// axis with a dashed reference line at 1 (parity). A noisy row (interval wider than
// +-10%, or none) is drawn hollow in orange and marked "noisy"; a row without an interval
// has its point only. Every string is escaped.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace noeira {

struct RatioPoint {
  std::string label;  // "mlp (cpu, bf16) eager / twin:eager"
  double ratio = 0;
  std::optional<double> lo, hi;  // the 95% interval, when there is one
  bool noisy = false;
  std::string note;  // the row's tooltip: why it is noisy ("" when not)
};

// No rows: an empty string.
std::string svg_ratio_chart(const std::vector<RatioPoint>& points, const std::string& axis_label);

}  // namespace noeira
