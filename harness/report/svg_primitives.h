// The pieces every inline SVG chart of the report is drawn with (harness/report/svg_*.cpp):
// coordinates, text (always escaped), lines, the opening tag, and nice axis ticks.
#pragma once
#include <string>

namespace noeira::svg {

// A coordinate with one decimal: "12.5".
std::string px(double v);
// A "nice" tick spacing (1, 2 or 5 times a power of ten) giving about `ticks` ticks.
double nice_step(double range, int ticks);
// A tick's label with enough decimals to tell adjacent ticks apart.
std::string tick_label(double v, double step);
// <text> with the string escaped; `extra` holds further attributes (" fill=\"#888\"").
std::string text(double x, double y, const std::string& s, const char* anchor = "start",
                 const std::string& extra = "");
// <line>; `extra` holds further attributes.
std::string line(double x1, double y1, double x2, double y2, const std::string& stroke,
                 const std::string& extra = "");
// <svg ...><title>: sized, sans-serif 12 px, role img; the title is escaped.
std::string open(double width, double height, const std::string& title);

}  // namespace noeira::svg
