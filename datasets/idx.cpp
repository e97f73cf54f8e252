#include "datasets/idx.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <system_error>

#include "datasets/quoted_path.h"

namespace noeira {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // unsigned byte, 3 dims
constexpr uint32_t kLabelsMagic = 0x00000801;  // unsigned byte, 1 dim
constexpr const char* kFix = "delete it to re-download, or point --data-dir at a good copy";

struct GzCloser {
  void operator()(gzFile f) const { gzclose_r(f); }
};
using GzHandle = std::unique_ptr<gzFile_s, GzCloser>;

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// zlib's own words for a failed read: "incorrect data check" (CRC), "invalid block
// type", ... or the OS error when it could not read the file at all.
Error read_error(const std::filesystem::path& path, gzFile gz) {
  int code = Z_OK;
  std::string msg = gzerror(gz, &code);
  if (code == Z_ERRNO)
    return make_error("cannot read " + quoted(path) + ": " + std::strerror(errno));
  const std::string prefix = path.string() + ": ";  // zlib starts with the path; we quote it
  if (msg.compare(0, prefix.size(), prefix) == 0) msg.erase(0, prefix.size());
  return make_error(quoted(path) + " has a corrupt gzip stream (" + msg + "); " + kFix);
}

Error truncated_stream(const std::filesystem::path& path) {
  return make_error(quoted(path) +
                    " is truncated: its gzip stream ends early (an interrupted download?); " +
                    kFix);
}

// True when the last read hit the end of the file in the middle of a gzip stream.
bool stream_ended_early(gzFile gz) {
  int code = Z_OK;
  gzerror(gz, &code);
  return code == Z_BUF_ERROR;
}

Result<GzHandle> open_gz(const std::filesystem::path& path, const char* what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return make_error(std::string(what) + " file " + quoted(path) +
                      " does not exist; check the path, or point --data-dir or NOEIRA_DATA "
                      "at a directory holding it");
  if (std::filesystem::file_size(path, ec) == 0 && !ec)
    return make_error(quoted(path) + " is empty (an interrupted download?); " + kFix);
  GzHandle gz(gzopen(path.c_str(), "rb"));
  if (!gz) return make_error("cannot open " + quoted(path) + ": " + std::strerror(errno));
  gzbuffer(gz.get(), 1 << 17);
  // zlib reads a non-gzip file "transparently" as raw bytes; we want to know.
  if (gzdirect(gz.get()))
    return make_error(quoted(path) + " is not a gzip file (expected a gzip-compressed IDX "
                                     "file); " + kFix);
  return gz;
}

// Reads up to n bytes, growing `out` a chunk at a time as data arrives so that a corrupt
// header claiming a huge size cannot make us allocate more than the file really holds
// (plus one chunk): nothing is reserved on the header's word.
Status read_up_to(gzFile gz, const std::filesystem::path& path, uint64_t n,
                  std::vector<uint8_t>& out) {
  constexpr uint64_t kChunk = uint64_t{1} << 24;
  out.clear();
  uint64_t got = 0;
  while (got < n) {
    const auto want = static_cast<unsigned>(std::min(n - got, kChunk));
    out.resize(static_cast<size_t>(got + want));
    const int r = gzread(gz, out.data() + got, want);
    if (r < 0) return read_error(path, gz);
    got += static_cast<uint64_t>(r);
    if (r == 0) break;
  }
  out.resize(static_cast<size_t>(got));
  return {};
}

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

struct IdxFile {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;
};

// Reads one whole IDX file: magic, dims, then exactly prod(dims) bytes and nothing more.
Result<IdxFile> read_idx(const std::filesystem::path& path, const char* what,
                         uint32_t expected_magic) {
  auto opened = open_gz(path, what);
  if (!opened) return opened.error();
  GzHandle gz = std::move(opened.value());
  const size_t num_dims = expected_magic & 0xff;

  std::vector<uint8_t> header;
  NOEIRA_TRY(read_up_to(gz.get(), path, 4 + 4 * num_dims, header));
  if (header.size() >= 4 && big_endian_u32(header.data()) != expected_magic)
    return make_error(quoted(path) + " has IDX magic " + hex32(big_endian_u32(header.data())) +
                      " but " + what + " files have " + hex32(expected_magic) +
                      "; check that it is the right file (images and labels not swapped)");
  if (header.size() < 4 + 4 * num_dims) {
    if (stream_ended_early(gz.get())) return truncated_stream(path);
    return make_error(quoted(path) + " is truncated: only " + std::to_string(header.size()) +
                      " bytes, too short for an IDX header; " + kFix);
  }

  IdxFile idx;
  uint64_t bytes = 1;
  for (size_t d = 0; d < num_dims; ++d) {
    idx.dims.push_back(big_endian_u32(header.data() + 4 + 4 * d));
    if (__builtin_mul_overflow(bytes, uint64_t{idx.dims.back()}, &bytes))
      return make_error(quoted(path) + " has an impossible IDX header (dims overflow); " + kFix);
  }
  NOEIRA_TRY(read_up_to(gz.get(), path, bytes, idx.data));
  if (idx.data.size() < bytes) {
    if (stream_ended_early(gz.get())) return truncated_stream(path);
    return make_error(quoted(path) + " is truncated: its header implies " +
                      std::to_string(bytes) + " data bytes but it holds " +
                      std::to_string(idx.data.size()) + "; " + kFix);
  }

  // Read past the last byte so zlib reaches the end of the stream and checks its CRC.
  std::array<uint8_t, 1> extra{};
  const int r = gzread(gz.get(), extra.data(), 1);
  if (r < 0) return read_error(path, gz.get());
  if (r > 0)
    return make_error(quoted(path) + " holds more data than its IDX header implies (" +
                      std::to_string(bytes) + " bytes); " + kFix);
  if (stream_ended_early(gz.get())) return truncated_stream(path);
  const int closed = gzclose_r(gz.release());
  if (closed == Z_BUF_ERROR) return truncated_stream(path);
  if (closed != Z_OK)
    return make_error(quoted(path) + " has a corrupt gzip stream (zlib error " +
                      std::to_string(closed) + " on close); " + kFix);
  return idx;
}

}  // namespace

Result<ImageDataset> load_idx_gz(const std::filesystem::path& images,
                                 const std::filesystem::path& labels, std::string name,
                                 int num_classes) {
  auto image_file = read_idx(images, "images", kImagesMagic);
  if (!image_file) return image_file.error();
  auto label_file = read_idx(labels, "labels", kLabelsMagic);
  if (!label_file) return label_file.error();

  const uint32_t image_count = image_file->dims[0];
  const uint32_t label_count = label_file->dims[0];
  if (image_count != label_count)
    return make_error(quoted(labels) + " has " + std::to_string(label_count) + " labels but " +
                      quoted(images) + " has " + std::to_string(image_count) +
                      " images; the two files are from different data sets or splits");

  ImageDataset ds;
  ds.name = std::move(name);
  ds.count = image_count;
  ds.sample_shape = {image_file->dims[1], image_file->dims[2]};
  ds.num_classes = num_classes;
  ds.pixels = std::move(image_file->data);
  ds.labels.reserve(label_count);
  for (uint32_t i = 0; i < label_count; ++i) {
    const uint8_t label = label_file->data[i];
    if (label >= num_classes)
      return make_error(quoted(labels) + " has label " + std::to_string(label) +
                        " at index " + std::to_string(i) + " but " + ds.name + " has " +
                        std::to_string(num_classes) + " classes; check that it is the " +
                        ds.name + " labels file");
    ds.labels.push_back(label);
  }
  return ds;
}

}  // namespace noeira
