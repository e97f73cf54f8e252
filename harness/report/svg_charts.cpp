#include "harness/report/svg_charts.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "harness/report/html_escape.h"
#include "harness/report/number_format.h"
#include "harness/report/svg_primitives.h"

namespace noeira {

using svg::line;
using svg::nice_step;
using svg::px;
using svg::text;
using svg::tick_label;

std::string svg_bar_chart(const std::vector<BarItem>& bars, const std::string& axis_label,
                          const std::string& unit) {
  constexpr double kPlot = 480, kRight = 110, kRow = 26, kTop = 8, kAxis = 40;
  // Room for the longest label (about 6.5 px per character at the charts' font size).
  size_t longest = 0;
  for (const BarItem& b : bars) longest = std::max(longest, b.label.size());
  const double kLeft = std::max(120.0, 6.5 * static_cast<double>(longest) + 16.0);
  const double width = kLeft + kPlot + kRight;
  const double height = kTop + kRow * static_cast<double>(bars.size()) + kAxis;
  double max_v = 0.0;
  for (const BarItem& b : bars)
    if (b.measured) max_v = std::max({max_v, b.median, b.q3});
  const double step = nice_step(max_v > 0 ? max_v : 1.0, 5);
  const double x_max = std::max(step, std::ceil(max_v / step) * step);
  auto x = [&](double v) { return kLeft + kPlot * std::clamp(v / x_max, 0.0, 1.0); };

  std::string s = svg::open(width, height, axis_label);
  const double axis_y = kTop + kRow * static_cast<double>(bars.size());
  for (double v = 0.0; v <= x_max * (1 + 1e-9); v += step) {
    s += line(x(v), kTop, x(v), axis_y, "#e5e5e5");
    s += text(x(v), axis_y + 14, tick_label(v, step), "middle");
  }
  s += line(kLeft, axis_y, kLeft + kPlot, axis_y, "#444");
  s += text(kLeft + kPlot / 2, axis_y + 32, axis_label, "middle");
  for (size_t i = 0; i < bars.size(); ++i) {
    const BarItem& b = bars[i];
    const double y = kTop + kRow * static_cast<double>(i);
    const double mid = y + kRow / 2;
    s += text(kLeft - 8, mid + 4, b.label, "end");
    if (!b.measured) {
      s +=
          text(kLeft + 6, mid + 4, b.missing_text, "start", " fill=\"#888\" font-style=\"italic\"");
      continue;
    }
    s += "<rect x=\"" + px(kLeft) + "\" y=\"" + px(y + 5) + "\" width=\"" +
         px(x(b.median) - kLeft) + "\" height=\"" + px(kRow - 10) + "\" fill=\"" +
         html_escape(b.color) + "\" fill-opacity=\"0.75\"><title>" +
         html_escape(b.label + ": " + format_ms(b.median) + " " + unit +
                     (b.q1 != b.q3 ? ", q1 " + format_ms(b.q1) + ", q3 " + format_ms(b.q3) : "")) +
         "</title></rect>\n";
    if (b.q1 != b.q3) {
      s += line(x(b.q1), mid, x(b.q3), mid, "#222", " stroke-width=\"1.5\"");
      s += line(x(b.q1), mid - 5, x(b.q1), mid + 5, "#222", " stroke-width=\"1.5\"");
      s += line(x(b.q3), mid - 5, x(b.q3), mid + 5, "#222", " stroke-width=\"1.5\"");
    }
    s += text(std::max(x(b.median), x(b.q3)) + 6, mid + 4,
              format_ms(b.median) + (unit == "x" ? "x" : " " + unit));
  }
  return s + "</svg>\n";
}

std::string svg_line_chart(const std::vector<LineSeries>& series, const std::string& x_label,
                           const std::string& y_label, bool log_y) {
  constexpr double kLeft = 64, kPlot = 480, kRight = 150, kTop = 10, kHeight = 260, kBottom = 44;
  const double width = kLeft + kPlot + kRight, height = kTop + kHeight + kBottom;
  size_t n_max = 0;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const LineSeries& l : series) {
    n_max = std::max(n_max, l.y.size());
    for (double v : l.y)
      if (std::isfinite(v) && (!log_y || v > 0.0)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  std::string s = svg::open(width, height, y_label + " by " + x_label);
  if (n_max == 0 || !std::isfinite(lo)) {
    s += text(kLeft + kPlot / 2, kTop + kHeight / 2, "no data", "middle", " fill=\"#888\"");
    return s + "</svg>\n";
  }
  if (hi - lo < 1e-12) hi = log_y ? lo * 10.0 : lo + 1.0;  // a flat line still needs a y range
  const double y_step = nice_step(hi - lo, 5);
  // Linear: the data range rounded out to ticks. Log: whole decades (positions in log10).
  const double y_lo = log_y ? std::floor(std::log10(lo)) : std::floor(lo / y_step) * y_step;
  const double y_hi = log_y ? std::ceil(std::log10(hi)) : std::ceil(hi / y_step) * y_step;
  const double x_hi = std::max<double>(1.0, static_cast<double>(n_max - 1));
  const double x_step = nice_step(x_hi, 6);
  auto X = [&](double i) { return kLeft + kPlot * i / x_hi; };
  auto Y = [&](double v) {
    const double at = log_y ? std::log10(v) : v;
    return kTop + kHeight * (1.0 - (at - y_lo) / (y_hi - y_lo));
  };

  if (log_y) {
    for (double d = y_lo; d <= y_hi + 1e-9; d += 1.0)
      for (const double m : {1.0, 2.0, 5.0}) {
        const double v = m * std::pow(10.0, d);
        if (std::log10(v) > y_hi + 1e-9) break;
        s += line(kLeft, Y(v), kLeft + kPlot, Y(v), "#e5e5e5");
        s += text(kLeft - 6, Y(v) + 4, format_number("%g", v), "end");
      }
  } else {
    for (double v = y_lo; v <= y_hi + y_step * 1e-9; v += y_step) {
      s += line(kLeft, Y(v), kLeft + kPlot, Y(v), "#e5e5e5");
      s += text(kLeft - 6, Y(v) + 4, tick_label(v, y_step), "end");
    }
  }
  for (double i = 0; i <= x_hi + 1e-9; i += x_step) {
    s += line(X(i), kTop + kHeight, X(i), kTop + kHeight + 4, "#444");
    s += text(X(i), kTop + kHeight + 16, tick_label(i, x_step), "middle");
  }
  s += line(kLeft, kTop, kLeft, kTop + kHeight, "#444");
  s += line(kLeft, kTop + kHeight, kLeft + kPlot, kTop + kHeight, "#444");
  s += text(kLeft + kPlot / 2, height - 6, x_label, "middle");
  s += text(14, kTop + kHeight / 2, y_label, "middle",
            " transform=\"rotate(-90 14 " + px(kTop + kHeight / 2) + ")\"");

  for (size_t k = 0; k < series.size(); ++k) {
    const LineSeries& l = series[k];
    const size_t stride = std::max<size_t>(1, l.y.size() / 1000);
    const std::string style = "fill=\"none\" stroke=\"" + html_escape(l.color) +
                              "\" stroke-width=\"1.5\"" +
                              (l.dashed ? " stroke-dasharray=\"6 3\"" : "");
    std::string points;
    auto flush = [&]() {
      if (!points.empty()) s += "<polyline " + style + " points=\"" + points + "\"/>\n";
      points.clear();
    };
    for (size_t i = 0; i < l.y.size(); i += stride) {
      if (!std::isfinite(l.y[i]) || (log_y && l.y[i] <= 0.0)) {
        flush();  // a diverged step breaks the curve instead of drawing to infinity
        continue;
      }
      points += px(X(static_cast<double>(i))) + "," + px(Y(l.y[i])) + " ";
    }
    flush();
    const double ly = kTop + 12 + 18 * static_cast<double>(k);
    const double lx = kLeft + kPlot + 14;
    s += "<line x1=\"" + px(lx) + "\" y1=\"" + px(ly - 4) + "\" x2=\"" + px(lx + 24) + "\" y2=\"" +
         px(ly - 4) + "\" " + style + "/>\n";
    s += text(lx + 30, ly, l.label);
  }
  return s + "</svg>\n";
}

}  // namespace noeira
