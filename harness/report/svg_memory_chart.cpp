#include "harness/report/svg_memory_chart.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include "harness/report/html_escape.h"
#include "harness/report/number_format.h"
#include "harness/report/svg_primitives.h"

namespace noeira {

namespace {

using svg::px;

// nn/memory_plan.cpp's category names in plan order, each with its color; others after.
constexpr std::array<std::pair<std::string_view, std::string_view>, 9> kCategories = {{
    {"parameters", "#1f77b4"}, {"bf16 weights", "#aec7e8"}, {"gradients", "#ff7f0e"},
    {"optimizer state", "#9467bd"}, {"buffers", "#8c564b"}, {"activations", "#2ca02c"},
    {"workspace", "#bcbd22"}, {"dataset", "#17becf"}, {"scalars", "#7f7f7f"}}};

// The results file's key ("optimizer_state") as the plan prints it ("optimizer state").
std::string category_label(std::string name) {
  for (char& c : name)
    if (c == '_') c = ' ';
  return name;
}

size_t category_rank(const std::string& name) {
  for (size_t i = 0; i < kCategories.size(); ++i)
    if (kCategories[i].first == name) return i;
  return kCategories.size();
}

std::string category_color(const std::string& name) {
  const size_t i = category_rank(name);
  return i < kCategories.size() ? std::string(kCategories[i].second) : "#c7c7c7";
}

std::string bytes_text(double b) {
  if (b >= 1024.0 * 1024 * 1024) return format_number("%.2f GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return format_number("%.1f MiB", b / (1024.0 * 1024));
  return format_number("%.1f KiB", b / 1024.0);
}

}  // namespace

std::string svg_memory_chart(const std::vector<MemoryGroup>& groups, const std::string& axis_label) {
  size_t rows = 0, longest = 0;
  double max_v = 0;
  std::vector<std::string> categories;  // those present, in plan order
  for (const MemoryGroup& g : groups) {
    if (g.bars.empty()) continue;
    rows += 1 + g.bars.size();
    longest = std::max(longest, g.label.size());
    for (const MemoryBar& b : g.bars) {
      longest = std::max(longest, b.label.size() + 2);
      int64_t plan_total = 0;
      for (const auto& [key, bytes] : b.plan) {
        plan_total += bytes;
        const std::string name = category_label(key);
        if (bytes > 0 && std::find(categories.begin(), categories.end(), name) == categories.end())
          categories.push_back(name);
      }
      max_v = std::max({max_v, static_cast<double>(b.bytes), static_cast<double>(plan_total)});
    }
  }
  if (rows == 0) return "";
  std::stable_sort(categories.begin(), categories.end(),
                   [](const std::string& a, const std::string& b) { return category_rank(a) < category_rank(b); });
  // The axis in MiB (GiB past 4 GiB).
  const double unit = max_v >= 4.0 * 1024 * 1024 * 1024 ? 1024.0 * 1024 * 1024 : 1024.0 * 1024;
  const std::string unit_name = unit > 1024.0 * 1024 ? "GiB" : "MiB";
  constexpr double kPlot = 460, kRight = 100, kRow = 22, kTop = 8, kAxis = 40, kLegendRow = 18;
  const double left = std::max(120.0, 6.5 * static_cast<double>(longest) + 16.0);
  const double width = left + kPlot + kRight;
  const double legend_rows = categories.empty() ? 0 : std::ceil(static_cast<double>(categories.size()) / 3.0);
  const double axis_y = kTop + kRow * static_cast<double>(rows);
  const double height = axis_y + kAxis + kLegendRow * legend_rows + (legend_rows > 0 ? 6 : 0);
  const double top_v = std::max(max_v / unit, 1e-9);
  const double step = svg::nice_step(top_v, 5);
  const double x_max = std::max(step, std::ceil(top_v / step) * step);
  auto x = [&](double bytes) { return left + kPlot * std::clamp(bytes / unit / x_max, 0.0, 1.0); };

  std::string s = svg::open(width, height, axis_label);
  for (double v = 0.0; v <= x_max * (1 + 1e-9); v += step) {
    s += svg::line(left + kPlot * v / x_max, kTop, left + kPlot * v / x_max, axis_y, "#e5e5e5");
    s += svg::text(left + kPlot * v / x_max, axis_y + 14, svg::tick_label(v, step), "middle");
  }
  s += svg::line(left, axis_y, left + kPlot, axis_y, "#444");
  s += svg::text(left + kPlot / 2, axis_y + 32, axis_label + " (" + unit_name + ")", "middle");
  size_t row = 0;
  for (const MemoryGroup& g : groups) {
    if (g.bars.empty()) continue;
    s += svg::text(8, kTop + kRow * static_cast<double>(row) + kRow / 2 + 4, g.label, "start",
                   " font-weight=\"bold\"");
    ++row;
    for (const MemoryBar& b : g.bars) {
      const double y = kTop + kRow * static_cast<double>(row++);
      s += "<g class=\"memory-bar\">";
      s += svg::text(left - 8, y + kRow / 2 + 4, b.label, "end");
      s += "<rect x=\"" + px(left) + "\" y=\"" + px(y + 4) + "\" width=\"" + px(x(static_cast<double>(b.bytes)) - left) +
           "\" height=\"" + px(kRow - 8) + "\" fill=\"" + html_escape(b.color) + "\" fill-opacity=\"0.35\" stroke=\"" +
           html_escape(b.color) + "\"><title>" + html_escape(g.label + " " + b.label + ": " + bytes_text(static_cast<double>(b.bytes))) +
           "</title></rect>\n";
      // Our plan, stacked in a strip along the bar's bottom, in plan order.
      std::vector<std::pair<std::string, int64_t>> plan;
      for (const auto& [key, bytes] : b.plan) plan.emplace_back(category_label(key), bytes);
      std::stable_sort(plan.begin(), plan.end(),
                       [](const auto& a, const auto& c) { return category_rank(a.first) < category_rank(c.first); });
      double at = 0;
      for (const auto& [name, bytes] : plan) {
        if (bytes <= 0) continue;
        s += "<rect class=\"plan\" x=\"" + px(x(at)) + "\" y=\"" + px(y + kRow - 10) + "\" width=\"" +
             px(std::max(0.5, x(at + static_cast<double>(bytes)) - x(at))) + "\" height=\"5\" fill=\"" +
             category_color(name) + "\"><title>" + html_escape("plan " + name + ": " + bytes_text(static_cast<double>(bytes))) +
             "</title></rect>\n";
        at += static_cast<double>(bytes);
      }
      s += svg::text(x(static_cast<double>(b.bytes)) + 6, y + kRow / 2 + 4, bytes_text(static_cast<double>(b.bytes)));
      s += "</g>\n";
    }
  }
  // The plan's categories.
  for (size_t i = 0; i < categories.size(); ++i) {
    const double lx = left + 175.0 * static_cast<double>(i % 3);
    const double ly = axis_y + kAxis + kLegendRow * static_cast<double>(i / 3) + 6;
    s += "<rect x=\"" + px(lx) + "\" y=\"" + px(ly - 9) + "\" width=\"12\" height=\"9\" fill=\"" +
         category_color(categories[i]) + "\"/>\n";
    s += svg::text(lx + 16, ly, "plan: " + categories[i]);
  }
  return s + "</svg>\n";
}

}  // namespace noeira
