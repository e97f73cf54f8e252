#include "datasets/archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <system_error>

#include "datasets/quoted_path.h"

namespace noeira {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFix = "delete it to re-download, or point --data-dir at a good copy";

struct ReadFree {
  void operator()(archive* a) const { archive_read_free(a); }
};
using ReadHandle = std::unique_ptr<archive, ReadFree>;

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// libarchive's last message, on one line.
std::string lib_message(archive* a) {
  const char* m = archive_error_string(a);
  std::string s = m != nullptr ? m : "unknown libarchive error";
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

Error unreadable(const fs::path& path, archive* a) {
  return make_error(quoted(path) + " is not a tar archive, or is corrupt or truncated " +
                    "(libarchive: " + lib_message(a) + "); " + kFix);
}

Result<ReadHandle> open_archive(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return make_error("archive " + quoted(path) +
                      " does not exist; check the path, or point --data-dir or NOEIRA_DATA at "
                      "a directory holding it");
  if (fs::file_size(path, ec) == 0 && !ec)
    return make_error(quoted(path) + " is empty (an interrupted download?); " + kFix);
  ReadHandle a(archive_read_new());
  if (!a) return make_error("cannot create a libarchive reader for " + quoted(path));
  // Tar only (ustar, pax, GNU), compressed or not; no format guessing beyond that.
  archive_read_support_format_tar(a.get());
  archive_read_support_filter_gzip(a.get());
  archive_read_support_filter_bzip2(a.get());
  archive_read_support_filter_xz(a.get());
  if (archive_read_open_filename(a.get(), path.c_str(), 1 << 16) != ARCHIVE_OK)
    return unreadable(path, a.get());
  return a;
}

// The entry's path as stored, less any leading "./".
std::string entry_path(archive_entry* entry) {
  const char* p = archive_entry_pathname(entry);
  std::string s = p != nullptr ? p : "";
  while (s.compare(0, 2, "./") == 0) s.erase(0, 2);
  return s;
}

// Reads every header of the archive, calling on_entry(path, entry) for each; on_entry may
// read the entry's data (unread data is skipped by the next header read). Stops at the
// first error, from libarchive or from on_entry.
template <class OnEntry>
Status for_each_entry(const fs::path& path, archive* a, OnEntry&& on_entry) {
  archive_entry* entry = nullptr;
  for (;;) {
    const int r = archive_read_next_header(a, &entry);
    if (r == ARCHIVE_EOF) return {};
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) return unreadable(path, a);
    NOEIRA_TRY(on_entry(entry_path(entry), entry));
  }
}

// `size`: what the member's header says, or "more than N" once its data ran past the cap.
Error too_large(const fs::path& archive_path, const std::string& member,
                const std::string& size, int64_t max_bytes) {
  return make_error(quoted(archive_path) + " holds member " + member + " of " + size +
                    " bytes, but such a file holds at most " + std::to_string(max_bytes) +
                    "; it is not the expected archive; " + kFix);
}

// Copies the current entry's data to `out_path`, stopping past `max_bytes`.
Status write_entry(const fs::path& archive_path, archive* a, archive_entry* entry,
                   const std::string& member, const fs::path& out_path, int64_t max_bytes) {
  if (archive_entry_size_is_set(entry) && archive_entry_size(entry) > max_bytes)
    return too_large(archive_path, member, std::to_string(archive_entry_size(entry)), max_bytes);
  std::unique_ptr<std::FILE, FileCloser> out(std::fopen(out_path.c_str(), "wb"));
  if (!out) return make_error("cannot write " + quoted(out_path) + ": " + std::strerror(errno));
  std::vector<char> buf(1 << 20);
  int64_t written = 0;
  for (;;) {
    const la_ssize_t n = archive_read_data(a, buf.data(), buf.size());
    if (n < 0) return unreadable(archive_path, a);
    if (n == 0) break;
    if (n > max_bytes - written)  // the header under-stated it, or had no size
      return too_large(archive_path, member, "more than " + std::to_string(max_bytes), max_bytes);
    if (std::fwrite(buf.data(), 1, static_cast<size_t>(n), out.get()) != static_cast<size_t>(n))
      return make_error("cannot write " + quoted(out_path) + ": " + std::strerror(errno));
    written += n;
  }
  if (std::fclose(out.release()) != 0)
    return make_error("cannot write " + quoted(out_path) + ": " + std::strerror(errno));
  if (archive_entry_size_is_set(entry) && written != archive_entry_size(entry))
    return make_error(quoted(archive_path) + " is truncated: member " + member + " holds " +
                      std::to_string(written) + " of its " +
                      std::to_string(archive_entry_size(entry)) + " bytes; " + kFix);
  return {};
}

// A directory removed with its contents unless released.
class TempDirGuard {
 public:
  explicit TempDirGuard(fs::path p) : path_(std::move(p)) {}
  ~TempDirGuard() {
    if (path_.empty()) return;
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDirGuard(const TempDirGuard&) = delete;
  TempDirGuard& operator=(const TempDirGuard&) = delete;
  void release() { path_.clear(); }

 private:
  fs::path path_;
};

}  // namespace

Result<std::vector<ArchiveEntry>> list_archive(const fs::path& archive_path) {
  auto opened = open_archive(archive_path);
  if (!opened) return opened.error();
  archive* a = opened->get();
  std::vector<ArchiveEntry> entries;
  Status read = for_each_entry(archive_path, a, [&](const std::string& path, archive_entry* e) {
    if (archive_entry_filetype(e) == AE_IFREG) entries.push_back({path, archive_entry_size(e)});
    return Status{};
  });
  if (!read) return read.error();
  return entries;
}

Status extract_members(const fs::path& archive_path, const std::vector<std::string>& members,
                       const fs::path& dest, int64_t max_member_bytes) {
  std::error_code ec;
  if (fs::exists(dest, ec))
    return make_error("cannot extract " + quoted(archive_path) + " into " + quoted(dest) +
                      ": it already exists; delete it to extract again");
  auto opened = open_archive(archive_path);
  if (!opened) return opened.error();
  archive* a = opened->get();

  // A fresh directory beside dest, named so that .gitignore's *.tmp.* covers it.
  static std::atomic<int> counter{0};
  fs::path tmp = dest;
  tmp += ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  auto cannot_create = [&](const fs::path& dir, const std::string& why) {
    return make_error("cannot create directory " + quoted(dir) + " (" + why + ") to extract " +
                      quoted(archive_path) +
                      " into; set NOEIRA_DATA or --data-dir to a writable directory");
  };
  // The parent, when this extraction makes it, goes again if the extraction fails.
  const bool parent_made = !dest.parent_path().empty() && !fs::exists(dest.parent_path(), ec);
  if (!dest.parent_path().empty()) {
    fs::create_directories(dest.parent_path(), ec);
    if (ec) return cannot_create(dest.parent_path(), ec.message());
  }
  struct ParentGuard {
    fs::path dir;
    bool armed;
    ~ParentGuard() {
      std::error_code e;
      if (armed && fs::is_empty(dir, e)) fs::remove(dir, e);
    }
  } parent_guard{dest.parent_path(), parent_made};
  const bool created = fs::create_directory(tmp, ec);
  if (ec) return cannot_create(tmp, ec.message());
  if (!created) return cannot_create(tmp, "it already exists");
  TempDirGuard guard(tmp);

  std::vector<bool> found(members.size(), false);
  Status read = for_each_entry(archive_path, a, [&](const std::string& path, archive_entry* e) {
    const auto it = std::find(members.begin(), members.end(), path);
    if (it == members.end()) return Status{};  // not wanted: its data is skipped
    if (archive_entry_filetype(e) != AE_IFREG)
      return Status(make_error(quoted(archive_path) + " holds " + path +
                               " but not as a regular file (a link or a directory); it is "
                               "not the expected archive; " + kFix));
    const auto index = static_cast<size_t>(it - members.begin());
    found[index] = true;
    return write_entry(archive_path, a, e, path, tmp / fs::path(path).filename(),
                       max_member_bytes);
  });
  if (!read) return read.error();
  for (size_t i = 0; i < members.size(); ++i)
    if (!found[i])
      return make_error(quoted(archive_path) + " has no member " + members[i] +
                        "; it is not the expected archive (or an incomplete one); " + kFix);

  fs::rename(tmp, dest, ec);
  if (ec) {
    std::error_code exists_ec;
    if (fs::is_directory(dest, exists_ec)) return {};  // another process was first: keep its copy
    return make_error("cannot move the files extracted from " + quoted(archive_path) +
                      " to " + quoted(dest) + ": " + ec.message());
  }
  guard.release();
  return {};
}

}  // namespace noeira
