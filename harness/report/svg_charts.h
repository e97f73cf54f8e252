// Inline SVG charts for the HTML report: no scripts, no external resources (inline SVG
// in HTML5 needs no xmlns, so the page holds no URL at all).
#pragma once
#include <string>
#include <vector>

namespace noeira {

struct BarItem {
  std::string label, color;
  bool measured = false;     // false: `missing_text` is shown instead of a bar
  std::string missing_text;  // "n/a", "failed"
  double median = 0, q1 = 0, q3 = 0;
};

// Horizontal bars of the median, with a q1-q3 whisker and the value at the end. `unit`
// follows each value ("ms"; "x" for ratios, which also draws no whisker when q1 = q3).
std::string svg_bar_chart(const std::vector<BarItem>& bars, const std::string& axis_label,
                          const std::string& unit = "ms");

struct LineSeries {
  std::string label, color;
  bool dashed = false;
  std::vector<double> y;  // x = index; NaN breaks the line
};

// Line chart with axes, ticks and a legend; long series are thinned to ~1000 points.
// log_y: a logarithmic y axis (ticks at 1, 2, 5 x 10^k); values <= 0 break the line.
std::string svg_line_chart(const std::vector<LineSeries>& series, const std::string& x_label,
                           const std::string& y_label, bool log_y = false);

}  // namespace noeira
