#include "models/install_root.h"

#include <cstdlib>
#include <system_error>

namespace noeira {

std::filesystem::path executable_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path{} : exe.parent_path();
}

std::filesystem::path install_root() {
  if (const char* env = std::getenv("NOEIRA_HOME"); env && *env) return env;
  const auto dir = executable_dir();
  if (!dir.empty()) {
    const auto bundled = dir.parent_path() / "share" / "noeira-bench";
    std::error_code ec;
    if (std::filesystem::is_directory(bundled / "models" / "recipes", ec)) return bundled;
  }
  return NOEIRA_SOURCE_DIR;
}

}  // namespace noeira
