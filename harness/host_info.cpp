#include "harness/host_info.h"

#include <cblas.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include "nn/backend.h"

namespace noeira {

#if defined(NOEIRA_WITH_CUDA)
nlohmann::json cuda_device_info();  // kernels/cuda
#endif

namespace {

std::string first_value(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      auto v = line.substr(colon + 1);
      const auto b = v.find_first_not_of(" \t");
      return b == std::string::npos ? "" : v.substr(b);
    }
  }
  return "";
}

// Output of a command run in the source tree, trimmed; empty on failure.
std::string command_output(const std::string& cmd) {
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    std::array<char, 256> buf{};
    while (std::fgets(buf.data(), buf.size(), p)) out += buf.data();
    if (::pclose(p) != 0) return "";
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

nlohmann::json host_info() {
  nlohmann::json h;
  h["cpu_model"] = first_value("/proc/cpuinfo", "model name");
  h["cores"] = default_thread_count();
  const std::string mem = first_value("/proc/meminfo", "MemTotal");  // "24576000 kB"
  h["memory_bytes"] = mem.empty() ? 0 : std::stoll(mem) * 1024;
  struct utsname u{};
  if (::uname(&u) == 0) h["os"] = std::string(u.sysname) + " " + u.release + " " + u.machine;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  h["hostname"] = host;
  return h;
}

nlohmann::json build_info() {
  nlohmann::json b;
#if defined(__clang__)
  b["compiler"] = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  b["compiler"] = std::string("g++ ") + __VERSION__;
#endif
#if defined(NDEBUG)
  b["build_type"] = "release";
#else
  b["build_type"] = "debug";
#endif
  b["blas"] = openblas_get_config();
#if defined(NOEIRA_WITH_CUDA)
  b["cuda_built"] = true;
#else
  b["cuda_built"] = false;
#endif
  const std::string git = std::string("git -C '") + NOEIRA_SOURCE_DIR + "' ";
  b["git_sha"] = command_output(git + "rev-parse HEAD 2>/dev/null");
  b["git_dirty"] = !command_output(git + "status --porcelain --untracked-files=no 2>/dev/null").empty();
  return b;
}

nlohmann::json device_info() {
#if defined(NOEIRA_WITH_CUDA)
  return cuda_device_info();
#else
  return {{"available", false}, {"reason", "built without CUDA (configure with -DNOEIRA_CUDA=ON)"}};
#endif
}

}  // namespace noeira
