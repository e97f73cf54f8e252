// Reading tar archives (compressed with anything libarchive knows: gzip for the data sets
// here) through libarchive, never a hand-written tar reader (DESIGN.md section 6).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "nn/error.h"

namespace noeira {

struct ArchiveEntry {
  std::string path;  // as stored, less a leading "./", e.g. "cifar-10-batches-bin/test_batch.bin"
  int64_t size = 0;  // bytes; regular files only are listed
};

// The regular files of a tar archive, in archive order. Reads the whole archive, so a
// corrupt or truncated one is an error (one line naming it).
Result<std::vector<ArchiveEntry>> list_archive(const std::filesystem::path& archive);

// Extracts the regular files `members` (paths inside the archive, as list_archive shows
// them) into the directory `dest`, each as dest/<its file name>, all or nothing: they are
// written into a fresh temporary directory beside `dest` that is renamed to `dest` once
// the whole archive has been read without error. Nothing but the named members is ever
// written, so the archive's own paths (absolute, "..", links) cannot reach outside `dest`.
// Errors, one line naming the archive: not a tar archive, corrupt or truncated, a member
// missing or not a regular file, a member larger than `max_member_bytes` (by its header or
// by the bytes it really decompresses to: a compressed archive can expand a few KB into
// gigabytes), `dest` already present, a write failure. If `dest` appears meanwhile
// (another process extracted it first), that copy is kept.
Status extract_members(const std::filesystem::path& archive,
                       const std::vector<std::string>& members,
                       const std::filesystem::path& dest, int64_t max_member_bytes);

}  // namespace noeira
