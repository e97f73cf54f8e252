#include "datasets/data_files.h"

#if defined(NOEIRA_WITH_DOWNLOAD)
#include <curl/curl.h>
#endif
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <system_error>

#include "datasets/quoted_path.h"

namespace noeira {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> env_value(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

std::string fix_hint(const DataFile& file) {
  return "set NOEIRA_DATA or --data-dir to a directory holding " + file.relative_path;
}

bool is_accepted(const DataFile& file, const std::string& sha) {
  return sha == file.sha256 || std::find(file.also_accepted_sha256.begin(),
                                         file.also_accepted_sha256.end(),
                                         sha) != file.also_accepted_sha256.end();
}

Status verify(const DataFile& file, const fs::path& path) {
  constexpr const char* kFix = "; delete it to re-download, or point --data-dir at a good copy";
  bool published_bytes = true;  // false: an also-accepted repack, which the md5 is not of
  if (!file.sha256.empty()) {
    auto sha = sha256_file(path);
    if (!sha) return sha.error();
    if (!is_accepted(file, *sha))
      return make_error(quoted(path) + " is corrupt or a different version: sha256 " + *sha +
                        ", expected " + file.sha256 + kFix);
    published_bytes = *sha == file.sha256;
  }
  if (!file.md5.empty() && published_bytes) {
    auto md5 = md5_file(path);
    if (!md5) return md5.error();
    if (*md5 != file.md5)
      return make_error(quoted(path) + " is corrupt or a different version: md5 " + *md5 +
                        ", expected " + file.md5 + kFix);
  }
  if (file.sha256.empty() && file.md5.empty())
    return make_error("no checksum is known for " + file.relative_path +
                      " (a bug: every DataFile needs a sha256 or md5)");
  return {};
}

// Every place locate() looks, in order, without duplicates.
std::vector<fs::path> search_paths(const DataFile& file, const DataSource& source,
                                   const fs::path& cache) {
  std::vector<fs::path> paths;
  auto add = [&](fs::path p) {
    if (std::find(paths.begin(), paths.end(), p) == paths.end()) paths.push_back(std::move(p));
  };
  if (source.data_dir) add(*source.data_dir / file.relative_path);
  if (auto env = env_value("NOEIRA_DATA")) add(fs::path(*env) / file.relative_path);
  for (const auto& dir : source.system_dirs) add(dir / fs::path(file.relative_path).filename());
  add(cache / file.relative_path);
  return paths;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// The ancestors of `file` that do not exist yet, deepest first.
[[maybe_unused]] std::vector<fs::path> missing_parents(const fs::path& file) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::path dir = file.parent_path(); !dir.empty() && !fs::exists(dir, ec); dir = dir.parent_path()) {
    out.push_back(dir);
    if (dir == dir.parent_path()) break;
  }
  return out;
}

// Removes each directory of `dirs` (deepest first) that is empty; stops at one that is not.
[[maybe_unused]] void remove_empty(const std::vector<fs::path>& dirs) {
  std::error_code ec;
  for (const fs::path& d : dirs)
    if (!fs::is_directory(d, ec) || !fs::is_empty(d, ec) || !fs::remove(d, ec)) break;
}

#if defined(NOEIRA_WITH_DOWNLOAD)
// ---- libcurl ----

Status curl_ready() {
  // curl_global_init is not thread-safe on its own; call_once makes it so. It is never
  // cleaned up: the process may download again at any time until it exits.
  static std::once_flag once;
  static CURLcode init_code = CURLE_OK;
  std::call_once(once, [] { init_code = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (init_code != CURLE_OK)
    return make_error(std::string("cannot initialise libcurl: ") +
                      curl_easy_strerror(init_code));
  return {};
}

size_t write_to_file(char* data, size_t size, size_t count, void* file) {
  return std::fwrite(data, size, count, static_cast<std::FILE*>(file));
}

struct Progress {
  std::string url;
  int last_percent = -1;
};

// One self-overwriting line on stderr; only installed when stderr is a terminal.
int print_progress(void* user, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  auto* p = static_cast<Progress*>(user);
  if (total <= 0) return 0;
  const int percent = static_cast<int>(100 * now / total);
  if (percent == p->last_percent) return 0;
  p->last_percent = percent;
  std::fprintf(stderr, "\rdownloading %s: %3d%% of %.1f MB", p->url.c_str(), percent,
               static_cast<double>(total) / 1e6);
  return 0;
}

struct CurlCleanup {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};

// Downloads url to `out_path`; on failure the reason (the caller removes the file).
Status download_to(const std::string& url, const fs::path& out_path) {
  NOEIRA_TRY(curl_ready());
  std::unique_ptr<std::FILE, FileCloser> out(std::fopen(out_path.c_str(), "wb"));
  if (!out) return make_error("cannot write " + quoted(out_path) + ": " + std::strerror(errno));
  std::unique_ptr<CURL, CurlCleanup> curl(curl_easy_init());
  if (!curl) return make_error("cannot create a libcurl handle");

  char error_text[CURL_ERROR_SIZE] = "";
  Progress progress{url};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_to_file);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, out.get());
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);  // an HTTP 404 page is not the file
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);     // no SIGALRM games: we may be threaded
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  // No overall time limit (files are large, links slow); give up on a stalled transfer.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "noeira-bench");
  const bool show_progress = isatty(STDERR_FILENO) == 1;
  if (show_progress) {
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, print_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &progress);
  }

  const CURLcode code = curl_easy_perform(c);
  if (show_progress && progress.last_percent >= 0) std::fputc('\n', stderr);
  if (code != CURLE_OK)
    return make_error(*error_text != '\0' ? error_text : curl_easy_strerror(code));
  if (std::fclose(out.release()) != 0)
    return make_error("cannot write " + quoted(out_path) + ": " + std::strerror(errno));
  return {};
}

// Downloads into <target>.part.<pid>, verifies, and renames into place, so the target
// path only ever holds a complete, verified file.
Result<fs::path> download(const DataFile& file, const fs::path& target,
                          const std::vector<fs::path>& looked_in) {
  std::vector<std::string> failures;
  std::error_code ec;
  // The directories made for this download, deepest first: removed again (when still
  // empty) if no URL gives the file, so a failed lookup leaves the data directory as it was.
  const std::vector<fs::path> made = missing_parents(target);
  fs::create_directories(target.parent_path(), ec);
  if (ec) {
    remove_empty(made);
    return make_error("cannot create cache directory " + quoted(target.parent_path()) + " (" +
                      ec.message() + ") to download " + file.relative_path + "; " +
                      fix_hint(file));
  }
  fs::path part = target;
  part += ".part." + std::to_string(getpid());
  for (const auto& url : file.urls) {
    Status fetched = download_to(url, part);
    if (fetched) fetched = verify(file, part);
    if (fetched) {
      fs::rename(part, target, ec);
      if (!ec) return target;
      fetched = make_error("cannot move it to " + quoted(target) + ": " + ec.message());
    }
    fs::remove(part, ec);
    failures.push_back(url + ": " + fetched.error().message);
  }
  remove_empty(made);
  std::vector<std::string> looked;
  for (const auto& p : looked_in) looked.push_back(p.string());
  return make_error("cannot find or download " + file.relative_path + " (looked in " +
                    join(looked, ", ") + "; " +
                    (failures.empty() ? "no download URL" : join(failures, "; ")) + "); " +
                    fix_hint(file));
}
#else
// A build without libcurl (NOEIRA_DOWNLOAD=OFF, the GPU bundle): the file must be there.
Result<fs::path> download(const DataFile& file, const fs::path&,
                          const std::vector<fs::path>& looked_in) {
  std::vector<std::string> looked;
  for (const auto& p : looked_in) looked.push_back(p.string());
  return make_error(file.relative_path + " not found (looked in " + join(looked, ", ") +
                    ") and this build has no download support (a GPU bundle); put the files "
                    "in NOEIRA_DATA: " + fix_hint(file));
}
#endif  // NOEIRA_WITH_DOWNLOAD

// Lower-case hex digest of a file's bytes with one of OpenSSL's EVP digests.
Result<std::string> digest_file(const fs::path& path, const EVP_MD* md, const char* name) {
  std::unique_ptr<std::FILE, FileCloser> in(std::fopen(path.c_str(), "rb"));
  if (!in) return make_error("cannot read " + quoted(path) + ": " + std::strerror(errno));
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(),
                                                              EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), md, nullptr) != 1)
    return make_error(std::string("OpenSSL cannot compute ") + name +
                      " (EVP_DigestInit_ex failed)");
  std::vector<unsigned char> buf(1 << 20);
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), in.get())) > 0)
    EVP_DigestUpdate(ctx.get(), buf.data(), n);
  if (std::ferror(in.get()))
    return make_error("cannot read " + quoted(path) + ": " + std::strerror(errno));
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned i = 0; i < len; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xf];
  }
  return hex;
}

}  // namespace

bool downloads_supported() {
#if defined(NOEIRA_WITH_DOWNLOAD)
  return true;
#else
  return false;
#endif
}

fs::path default_cache_dir() {
  if (auto dir = env_value("NOEIRA_DATA")) return *dir;
  if (auto xdg = env_value("XDG_CACHE_HOME")) return fs::path(*xdg) / "noeira";
  if (auto home = env_value("HOME")) return fs::path(*home) / ".cache" / "noeira";
  std::error_code ec;  // no home at all (a bare container): still somewhere writable
  fs::path tmp = fs::temp_directory_path(ec);
  return (ec ? fs::path("/tmp") : tmp) / "noeira-cache";
}

Result<std::string> sha256_file(const fs::path& path) {
  return digest_file(path, EVP_sha256(), "sha256");
}

Result<std::string> md5_file(const fs::path& path) {
  return digest_file(path, EVP_md5(), "md5");
}

fs::path resolved_cache_dir(const DataSource& source) {
  return source.cache_dir.value_or(default_cache_dir());
}

std::vector<fs::path> data_dirs(const DataSource& source) {
  std::vector<fs::path> dirs;
  auto add = [&](fs::path p) {
    if (std::find(dirs.begin(), dirs.end(), p) == dirs.end()) dirs.push_back(std::move(p));
  };
  if (source.data_dir) add(*source.data_dir);
  if (auto env = env_value("NOEIRA_DATA")) add(fs::path(*env));
  add(resolved_cache_dir(source));
  return dirs;
}

Result<fs::path> locate(const DataFile& file, const DataSource& source) {
  const fs::path cache = resolved_cache_dir(source);
  const std::vector<fs::path> paths = search_paths(file, source, cache);
  auto find_existing = [&]() -> std::optional<fs::path> {
    std::error_code ec;
    for (const auto& p : paths)
      if (fs::is_regular_file(p, ec)) return p;
    return std::nullopt;
  };
  if (auto found = find_existing()) {
    NOEIRA_TRY(verify(file, *found));
    return *found;
  }
  if (!source.allow_download) {
    std::vector<std::string> looked;
    for (const auto& p : paths) looked.push_back(p.string());
    return make_error(file.relative_path + " not found (looked in " + join(looked, ", ") +
                      ") and downloads are off; " + fix_hint(file));
  }
  // One download at a time per process: two threads wanting the same file must not
  // write the same .part.<pid>; the second then finds the first one's result.
  static std::mutex download_mutex;
  std::lock_guard<std::mutex> lock(download_mutex);
  if (auto found = find_existing()) {
    NOEIRA_TRY(verify(file, *found));
    return *found;
  }
  return download(file, cache / file.relative_path, paths);
}

}  // namespace noeira
