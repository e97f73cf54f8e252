#include "harness/report/svg_primitives.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/report/html_escape.h"
#include "harness/report/number_format.h"

namespace noeira::svg {

std::string px(double v) { return format_number("%.1f", v); }

double nice_step(double range, int ticks) {
  if (!(range > 0.0)) return 1.0;
  const double raw = range / ticks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / magnitude;
  return (f < 1.5 ? 1.0 : f < 3.0 ? 2.0 : f < 7.0 ? 5.0 : 10.0) * magnitude;
}

std::string tick_label(double v, double step) {
  const int decimals = step >= 1.0 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  char fmt[16];
  std::snprintf(fmt, sizeof fmt, "%%.%df", std::min(decimals, 6));
  return format_number(fmt, std::abs(v) < step * 1e-9 ? 0.0 : v);
}

std::string text(double x, double y, const std::string& s, const char* anchor, const std::string& extra) {
  return "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\" text-anchor=\"" + anchor + "\"" + extra + ">" +
         html_escape(s) + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& stroke, const std::string& extra) {
  return "<line x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" + px(y2) +
         "\" stroke=\"" + html_escape(stroke) + "\"" + extra + "/>\n";
}

std::string open(double width, double height, const std::string& title) {
  return "<svg width=\"" + px(width) + "\" height=\"" + px(height) + "\" viewBox=\"0 0 " + px(width) + " " +
         px(height) + "\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\"><title>" + html_escape(title) +
         "</title>\n";
}

}  // namespace noeira::svg
