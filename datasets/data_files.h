// Finding data files on disk, or downloading them into a cache, always verified by
// sha256 (DESIGN.md section 6), and also by md5 where that is the published checksum.
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
  // Lower-case hex md5 as published (e.g. CIFAR-10's), checked in addition to sha256
  // (not for an also-accepted copy). Empty = no md5 check; sha256 empty = md5 only.
  std::string md5 = {};
};

struct DataSource {
  std::optional<std::filesystem::path> data_dir;  // --data-dir
  bool allow_download = true;
  std::vector<std::filesystem::path> system_dirs;  // searched by file name only
  std::optional<std::filesystem::path> cache_dir;  // overrides default_cache_dir()
};

// $NOEIRA_DATA if set, else $XDG_CACHE_HOME/noeira, else ~/.cache/noeira.
std::filesystem::path default_cache_dir();

// The data directories locate() searches, in its order and without duplicates:
// data_dir, $NOEIRA_DATA, the cache (source.cache_dir or default_cache_dir()); the last
// one is where downloads go. For data sets kept as a directory of files (an extracted
// archive) rather than one verified file.
std::vector<std::filesystem::path> data_dirs(const DataSource& source);
std::filesystem::path resolved_cache_dir(const DataSource& source);

// Whether this build can download (NOEIRA_DOWNLOAD=ON, the default, links libcurl). Without
// it (the GPU bundle) locate() with allow_download names the missing file and where to
// put it instead; checksums are verified either way.
bool downloads_supported();

// Searches, in order: data_dir/relative_path, $NOEIRA_DATA/relative_path,
// each system_dir/<file name>, cache/relative_path. The first file found is verified
// and returned; a checksum mismatch is an error (never a silent fallback to the next).
// If none is found and downloads are allowed, downloads each URL in turn into the
// cache (via a .part file renamed into place once verified).
Result<std::filesystem::path> locate(const DataFile& file, const DataSource& source);

// Lower-case hex sha256 / md5 of a file's bytes (OpenSSL EVP).
Result<std::string> sha256_file(const std::filesystem::path& path);
Result<std::string> md5_file(const std::filesystem::path& path);

}  // namespace noeira
