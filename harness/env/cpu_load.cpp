#include "harness/env/cpu_load.h"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <vector>

namespace noeira {

namespace {

std::string first_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

}  // namespace

std::optional<CpuTimes> parse_proc_stat(std::string_view text) {
  // Find a line that starts with "cpu " (the aggregate; "cpu0" ... are per core).
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.substr(0, 4) != "cpu ") continue;
    std::vector<uint64_t> fields;
    size_t i = 4;
    while (i < line.size() && fields.size() < 8) {
      while (i < line.size() && line[i] == ' ') ++i;
      if (i >= line.size()) break;
      uint64_t v = 0;
      const auto [next, ec] = std::from_chars(line.data() + i, line.data() + line.size(), v);
      if (ec != std::errc()) return std::nullopt;
      fields.push_back(v);
      i = static_cast<size_t>(next - line.data());
    }
    if (fields.size() < 4) return std::nullopt;
    // user nice system idle iowait irq softirq steal (guest and guest_nice are already
    // inside user and nice, so they are left out of the total).
    CpuTimes t;
    for (uint64_t f : fields) t.total += f;
    t.steal = fields.size() >= 8 ? fields[7] : 0;
    return t;
  }
  return std::nullopt;
}

std::optional<double> parse_loadavg(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  const std::string token(text.substr(i, text.find_first_of(" \t\n", i) - i));
  if (token.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(token.c_str(), &end);
  if (end != token.c_str() + token.size() || !(v >= 0.0) || v > 1e9) return std::nullopt;
  return v;
}

CpuLoadSnapshot cpu_load_from_text(std::string_view stat, std::string_view loadavg) {
  return {parse_proc_stat(stat), parse_loadavg(loadavg)};
}

CpuLoadSnapshot read_cpu_load(const std::filesystem::path& proc) {
  return cpu_load_from_text(first_line(proc / "stat"), first_line(proc / "loadavg"));
}

CpuLoadWindow cpu_load_between(const CpuLoadSnapshot& a, const CpuLoadSnapshot& b) {
  CpuLoadWindow w;
  if (a.times && b.times && b.times->total > a.times->total && b.times->steal >= a.times->steal)
    w.steal_fraction = static_cast<double>(b.times->steal - a.times->steal) /
                       static_cast<double>(b.times->total - a.times->total);
  w.loadavg_start = a.loadavg_1m;
  w.loadavg_end = b.loadavg_1m;
  return w;
}

}  // namespace noeira
