// Finding data files on disk, or downloading them into a cache, always verified by
// sha256 (DESIGN.md section 6).
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "nn/error.h"

namespace noeira {

struct DataFile {
  std::string relative_path;  // under a data directory, e.g. "mnist/train-images-idx3-ubyte.gz"
  std::string sha256;         // lower-case hex, of the file as published at `urls`
  std::vector<std::string> urls;  // tried in order
  // Byte-different copies of the same content that are also accepted, e.g. a distro
  // package that re-wrote the gzip header (see mnist.cpp). Never used for downloads.
  std::vector<std::string> also_accepted_sha256 = {};
};

struct DataSource {
  std::optional<std::filesystem::path> data_dir;  // --data-dir
  bool allow_download = true;
  std::vector<std::filesystem::path> system_dirs;  // searched by file name only
  std::optional<std::filesystem::path> cache_dir;  // overrides default_cache_dir()
};

// $NOEIRA_DATA if set, else $XDG_CACHE_HOME/noeira, else ~/.cache/noeira.
std::filesystem::path default_cache_dir();

// Searches, in order: data_dir/relative_path, $NOEIRA_DATA/relative_path,
// each system_dir/<file name>, cache/relative_path. The first file found is verified
// and returned; a sha256 mismatch is an error (never a silent fallback to the next).
// If none is found and downloads are allowed, downloads each URL in turn into the
// cache (via a .part file renamed into place once verified).
Result<std::filesystem::path> locate(const DataFile& file, const DataSource& source);

// Lower-case hex sha256 of a file's bytes.
Result<std::string> sha256_file(const std::filesystem::path& path);

}  // namespace noeira
