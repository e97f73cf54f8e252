// Runs the built noeira-bench binary through the shell and captures its output.
#pragma once
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "models/install_root.h"

namespace noeira::test {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

inline CommandResult run_shell(const std::string& cmd) {
  CommandResult r;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The noeira-bench beside this test binary (a build folder or a relocated bundle's bin/),
// else the one this test binary was built with.
inline std::string bench_binary() {
  const auto beside = executable_dir() / "noeira-bench";
  std::error_code ec;
  return std::filesystem::exists(beside, ec) ? beside.string() : std::string(NOEIRA_BENCH_BINARY);
}

inline CommandResult run_bench(const std::string& args) {
  std::string cmd = "'";  // built up piecewise: g++ 12 misreports "'" + s (-Wrestrict)
  cmd += bench_binary();
  cmd += "' ";
  cmd += args;
  return run_shell(cmd);
}

}  // namespace noeira::test
