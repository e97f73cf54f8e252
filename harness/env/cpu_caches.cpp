#include "harness/env/cpu_caches.h"

#include <unistd.h>

#include <cctype>
#include <fstream>

namespace noeira {

namespace {

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

// The size of cpu0's data or unified cache of `level` in sysfs, or 0.
int64_t sysfs_cache(int level) {
  for (int i = 0; i < 16; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string lv = read_line(dir + "level");
    if (lv.empty()) break;
    const std::string type = read_line(dir + "type");
    if (lv == std::to_string(level) && type != "Instruction") return parse_cache_size(read_line(dir + "size"));
  }
  return 0;
}

// sysconf's cache names are glibc's: elsewhere 0 (unknown).
int64_t sysconf_cache(int level) {
#if defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
  const long v = ::sysconf(level == 2 ? _SC_LEVEL2_CACHE_SIZE : _SC_LEVEL3_CACHE_SIZE);
  return v > 0 ? v : 0;
#else
  (void)level;
  return 0;
#endif
}

}  // namespace

int64_t parse_cache_size(std::string_view text) {
  int64_t v = 0;
  size_t i = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) v = v * 10 + (text[i] - '0');
  if (i == 0 || v <= 0) return 0;
  const std::string_view rest = text.substr(i);
  if (rest.empty()) return v;
  switch (rest.front()) {
    case 'K': case 'k': return v << 10;
    case 'M': case 'm': return v << 20;
    case 'G': case 'g': return v << 30;
    default: return 0;
  }
}

CpuCaches cpu_caches() {
  CpuCaches c;
  std::string l2_from = "sysfs", l3_from = "sysfs";
  c.l2_bytes = sysfs_cache(2);
  c.l3_bytes = sysfs_cache(3);
  if (c.l2_bytes <= 0) c.l2_bytes = sysconf_cache(2), l2_from = "sysconf";
  if (c.l3_bytes <= 0) c.l3_bytes = sysconf_cache(3), l3_from = "sysconf";
  if (c.l2_bytes <= 0) c.l2_bytes = int64_t{1} << 20, l2_from = "assumed";
  if (c.l3_bytes <= 0) c.l3_bytes = int64_t{32} << 20, l3_from = "assumed";
  c.source = l2_from == l3_from ? l2_from : "L2 " + l2_from + ", L3 " + l3_from;
  return c;
}

}  // namespace noeira
