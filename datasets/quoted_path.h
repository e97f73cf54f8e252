// How data-set errors name a file: in single quotes, so a path with spaces reads as one.
#pragma once
#include <filesystem>
#include <string>

namespace noeira {

inline std::string quoted(const std::filesystem::path& p) {
  // Built by appending: GCC 12's -Wrestrict misfires on "'" + std::string&&.
  std::string out(1, '\'');
  out += p.string();
  out += '\'';
  return out;
}

}  // namespace noeira
