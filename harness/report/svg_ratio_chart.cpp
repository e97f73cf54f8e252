#include "harness/report/svg_ratio_chart.h"

#include <algorithm>
#include <cmath>

#include "harness/report/html_escape.h"
#include "harness/report/number_format.h"
#include "harness/report/svg_primitives.h"

namespace noeira {

namespace {

using svg::px;

// Tick values for a log axis over [lo, hi]: 1, 2, 5 x 10^k (more within about a decade),
// or, over less than half a decade, evenly spaced nice values (0.9, 1.0, 1.1, ...).
std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> out;
  if (std::log10(hi / lo) < 0.5) {
    const double step = svg::nice_step(hi - lo, 5);
    for (double v = std::ceil(lo / step) * step; v <= hi * (1 + 1e-9); v += step) out.push_back(v);
    return out;
  }
  // Within about a decade, more steps per decade (0.4, 0.5, 0.7, 1, 1.5, 2).
  const std::vector<double> steps = std::log10(hi / lo) < 1.2 ? std::vector<double>{1, 1.5, 2, 3, 4, 5, 7}
                                                               : std::vector<double>{1, 2, 5};
  for (int k = static_cast<int>(std::floor(std::log10(lo))); k <= static_cast<int>(std::ceil(std::log10(hi))); ++k)
    for (const double m : steps) {
      const double v = m * std::pow(10.0, k);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
    }
  return out;
}

std::string ratio_text(const RatioPoint& p) {
  std::string s = format_number(p.ratio < 0.1 ? "%.3gx" : "%.2fx", p.ratio);
  if (p.lo && p.hi)
    s += " [" + format_number(*p.lo < 0.1 ? "%.3g" : "%.2f", *p.lo) + "-" +
         format_number(*p.hi < 0.1 ? "%.3g" : "%.2f", *p.hi) + "]";
  else
    s += " (no interval)";
  return s;
}

}  // namespace

std::string svg_ratio_chart(const std::vector<RatioPoint>& points, const std::string& axis_label) {
  if (points.empty()) return "";
  constexpr double kPlot = 440, kRight = 200, kRow = 24, kTop = 10, kAxis = 42;
  size_t longest = 0;
  for (const RatioPoint& p : points) longest = std::max(longest, p.label.size());
  const double left = std::max(120.0, 6.5 * static_cast<double>(longest) + 16.0);
  const double width = left + kPlot + kRight;
  const double height = kTop + kRow * static_cast<double>(points.size()) + kAxis;
  // The axis: every point and interval end, and 1, with a margin.
  double lo = 1.0, hi = 1.0;
  for (const RatioPoint& p : points)
    for (const std::optional<double>& v : {std::optional<double>(p.ratio), p.lo, p.hi})
      if (v && *v > 0.0 && std::isfinite(*v)) lo = std::min(lo, *v), hi = std::max(hi, *v);
  lo /= 1.15;
  hi *= 1.15;
  auto x = [&](double v) {
    const double c = std::clamp(v, lo, hi);
    return left + kPlot * std::log(c / lo) / std::log(hi / lo);
  };
  const double axis_y = kTop + kRow * static_cast<double>(points.size());

  std::string s = svg::open(width, height, axis_label);
  for (const double v : log_ticks(lo, hi)) {
    s += svg::line(x(v), kTop, x(v), axis_y, "#e5e5e5");
    s += svg::text(x(v), axis_y + 14, format_number("%g", v), "middle");
  }
  s += svg::line(left, axis_y, left + kPlot, axis_y, "#444");
  s += svg::text(left + kPlot / 2, axis_y + 34, axis_label, "middle");
  // Parity: ours as fast as the twin.
  s += svg::line(x(1.0), kTop - 4, x(1.0), axis_y, "#444",
                 " class=\"reference\" stroke-width=\"1.2\" stroke-dasharray=\"5 3\"");
  for (size_t i = 0; i < points.size(); ++i) {
    const RatioPoint& p = points[i];
    const double mid = kTop + kRow * static_cast<double>(i) + kRow / 2;
    const std::string color = p.noisy ? "#e08a00" : p.ratio <= 1.0 ? "#2ca02c" : "#d62728";
    s += "<g class=\"ratio-row" + std::string(p.noisy ? " noisy" : "") + "\"><title>" +
         html_escape(p.label + ": " + ratio_text(p) + (p.noisy ? " noisy" : "") +
                     (p.note.empty() ? "" : " (" + p.note + ")")) +
         "</title>\n";
    s += svg::text(left - 8, mid + 4, p.label, "end");
    if (p.lo && p.hi) {
      const std::string w = " stroke-width=\"1.6\"";
      s += svg::line(x(*p.lo), mid, x(*p.hi), mid, color, " class=\"interval\"" + w);
      s += svg::line(x(*p.lo), mid - 5, x(*p.lo), mid + 5, color, w);
      s += svg::line(x(*p.hi), mid - 5, x(*p.hi), mid + 5, color, w);
    }
    s += "<circle class=\"point\" cx=\"" + px(x(p.ratio)) + "\" cy=\"" + px(mid) + "\" r=\"4.5\" fill=\"" +
         (p.noisy ? std::string("#fff") : color) + "\" stroke=\"" + color + "\" stroke-width=\"1.8\"/>\n";
    const double at = left + kPlot + 8;
    s += svg::text(at, mid + 4, ratio_text(p));
    if (p.noisy)
      s += svg::text(width - 6, mid + 4, "noisy", "end",
                     " class=\"noisy-mark\" fill=\"#b36b00\" font-weight=\"bold\"");
    s += "</g>\n";
  }
  return s + "</svg>\n";
}

}  // namespace noeira
