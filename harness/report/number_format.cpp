#include "harness/report/number_format.h"

#include <cmath>
#include <cstdio>

namespace noeira {

std::string format_number(const char* fmt, double v) {
  if (std::isnan(v)) return "?";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string format_ms(double ms) {
  if (std::isnan(ms) || std::isinf(ms)) return "?";
  const double a = std::abs(ms);
  if (a >= 1000.0) return format_number("%.0f", ms);
  if (a >= 100.0) return format_number("%.1f", ms);
  if (a >= 10.0) return format_number("%.2f", ms);
  if (a >= 1.0) return format_number("%.3f", ms);
  return format_number("%.4g", ms);
}

std::string format_p(double p) {
  if (std::isnan(p)) return "?";
  if (p < 1e-6) return "<1e-06";
  if (p < 0.001) return format_number("%.1e", p);
  return format_number("%.3f", p);
}

}  // namespace noeira
