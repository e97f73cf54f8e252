#include "harness/report/report_profile.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "harness/report/html_escape.h"
#include "harness/report/number_format.h"
#include "harness/report/svg_primitives.h"
#include "harness/report/text_table.h"

namespace noeira {

namespace {

using svg::px;

// kernels/profiling/op_category.h's order, each with its color; the remainder grey.
constexpr std::array<std::pair<std::string_view, std::string_view>, 11> kColors = {{
    {"gemm", "#1f77b4"}, {"convolution", "#aec7e8"}, {"attention", "#ff7f0e"},
    {"normalisation", "#9467bd"}, {"activation", "#2ca02c"}, {"embedding", "#8c564b"},
    {"loss", "#e377c2"}, {"optimizer", "#bcbd22"}, {"data", "#17becf"}, {"copy", "#98df8a"},
    {"other", "#7f7f7f"}}};
constexpr std::string_view kRemainderColor = "#d9d9d9";

std::string ms(double v) { return format_number("%.3f", v); }

std::string title(const ReportRow& row) {
  return "Where the step's time goes: " + row.label + ", our " + row.profile->variant + " (" +
         std::to_string(row.profile->steps) + " steps, " + std::to_string(row.profile->threads) +
         " threads)";
}

// One model: a bar per available side, 520 px for the longest step.
std::string profile_svg(const ProfileRecord& p) {
  std::vector<const ProfileSideRecord*> sides;
  double longest = 0;
  for (const ProfileSideRecord& s : p.sides)
    if (s.available) {
      sides.push_back(&s);
      longest = std::max(longest, std::max(s.step_ms, s.attributed_ms));
    }
  if (sides.empty() || longest <= 0) return "";
  const double left = 130, width = 520, bar = 22, gap = 10, top = 10;
  const double legend_y = top + static_cast<double>(sides.size()) * (bar + gap) + 30;
  const double height = legend_y + 20 * ((kColors.size() + 1 + 5) / 6) + 10;
  std::string out = svg::open(left + width + 80, height, "ms per step by op category");
  const double scale = width / longest;
  for (size_t i = 0; i < sides.size(); ++i) {
    const ProfileSideRecord& s = *sides[i];
    const double y = top + static_cast<double>(i) * (bar + gap);
    out += svg::text(left - 6, y + bar * 0.7, s.side, "end");
    double x = left;
    for (const auto& [name, color] : kColors) {
      const ProfileCategoryRecord* c = s.category(std::string(name));
      if (!c || c->ms_per_step <= 0) continue;
      const double w = c->ms_per_step * scale;
      out += "<rect x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" + px(w) + "\" height=\"" + px(bar) +
             "\" fill=\"" + std::string(color) + "\"><title>" +
             html_escape(std::string(name) + ": " + ms(c->ms_per_step) + " ms") + "</title></rect>\n";
      x += w;
    }
    if (s.unattributed_ms() > 0) {
      const double w = s.unattributed_ms() * scale;
      out += "<rect x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" + px(w) + "\" height=\"" + px(bar) +
             "\" fill=\"" + std::string(kRemainderColor) + "\"><title>" +
             html_escape("unattributed: " + ms(s.unattributed_ms()) + " ms") + "</title></rect>\n";
    }
    out += svg::text(left + std::max(s.step_ms, s.attributed_ms) * scale + 6, y + bar * 0.7, ms(s.step_ms) + " ms");
  }
  for (size_t k = 0; k <= kColors.size(); ++k) {
    const bool rest = k == kColors.size();
    const double x = left + static_cast<double>(k % 6) * 95, y = legend_y + static_cast<double>(k / 6) * 20;
    out += "<rect x=\"" + px(x) + "\" y=\"" + px(y - 10) + "\" width=\"12\" height=\"12\" fill=\"" +
           std::string(rest ? kRemainderColor : kColors[k].second) + "\"/>\n";
    out += svg::text(x + 16, y, rest ? std::string("unattributed") : std::string(kColors[k].first));
  }
  return out + "</svg>\n";
}

TableRows profile_rows(const ProfileRecord& p) {
  TableRows rows = {{"category"}};
  std::vector<const ProfileSideRecord*> sides;
  for (const ProfileSideRecord& s : p.sides)
    if (s.available) {
      sides.push_back(&s);
      rows[0].push_back(s.side + " ms/step");
    }
  for (const auto& [name, color] : kColors) {
    std::vector<std::string> r = {std::string(name)};
    bool any = false;
    for (const ProfileSideRecord* s : sides) {
      const ProfileCategoryRecord* c = s->category(std::string(name));
      const double v = c ? c->ms_per_step : 0.0;
      any = any || v > 0;
      r.push_back(ms(v));
    }
    if (any) rows.push_back(r);
  }
  std::vector<std::string> rest = {"unattributed"}, step = {"step (measured)"};
  for (const ProfileSideRecord* s : sides) {
    rest.push_back(ms(s->unattributed_ms()));
    step.push_back(ms(s->step_ms) + " (" + s->clock + ")");
  }
  rows.push_back(rest);
  rows.push_back(step);
  return rows;
}

}  // namespace

std::string profile_html(const ReportData& d) {
  std::string out;
  for (const ReportRow& row : d.rows) {
    if (!row.profile) continue;
    out += "<h2>" + html_escape(title(row)) + "</h2>\n";
    out += profile_svg(*row.profile);
    const TableRows rows = profile_rows(*row.profile);
    out += "<table>\n<tr>";
    for (const std::string& h : rows[0]) out += "<th>" + html_escape(h) + "</th>";
    out += "</tr>\n";
    for (size_t i = 1; i < rows.size(); ++i) {
      out += "<tr>";
      for (const std::string& c : rows[i]) out += "<td>" + html_escape(c) + "</td>";
      out += "</tr>\n";
    }
    out += "</table>\n";
  }
  return out;
}

std::string profile_markdown(const ReportData& d) {
  std::string out;
  for (const ReportRow& row : d.rows) {
    if (!row.profile) continue;
    const TableRows rows = profile_rows(*row.profile);
    std::vector<bool> right(rows[0].size(), true);
    right[0] = false;
    out += "## " + title(row) + "\n\n" + render_markdown_table(rows, right) + "\n";
  }
  return out;
}

}  // namespace noeira
