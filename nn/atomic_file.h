// Nothing half-written is ever left at a path the user named (DESIGN.md rule 7).
#pragma once
#include <filesystem>
#include <string_view>

#include "nn/error.h"

namespace noeira {

// Writes `contents` to PATH.tmp.<pid>, flushes it, and renames it over PATH. On any
// failure the temporary file is removed and the error names PATH and `what`.
Status write_file_atomically(const std::filesystem::path& path, std::string_view contents,
                             std::string_view what);

}  // namespace noeira
