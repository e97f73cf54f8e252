// IDX files (MNIST's format, gzip-compressed): load_idx_gz on an images and a labels file.
// Contract: a data set whose counts, shapes, pixels and labels agree, or an Error; never a
// crash, a hang or undefined behaviour.
//
// Input: a flags byte, then two parts (fuzz_support.h: split_parts), the images file and
// the labels file. Flag bit 0 (images) and bit 1 (labels): the part is the IDX content and
// the target gzips it, so that mutations reach the IDX header and data rather than only
// zlib's checks; otherwise the part is the file as stored (corrupt or truncated gzip).
//
// Cap: no allocation above 64 MiB and RSS below 1 GiB for inputs up to 16 KiB. The reader
// grows its buffers with the bytes that really arrive, whatever size a header claims, so
// memory is bounded by the decompressed input (gzip expands at most ~1032x: 16 MiB here).
// libFuzzer flags: -max_len=16384 -malloc_limit_mb=64 -rss_limit_mb=1024 -timeout=10
#include <zlib.h>

#include "datasets/idx.h"
#include "fuzz/fuzz_support.h"

namespace {

using noeira::fuzz::Bytes;

std::vector<uint8_t> gzip(Bytes raw) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    std::abort();
  std::vector<uint8_t> out(deflateBound(&z, raw.size()));
  z.next_in = const_cast<Bytef*>(raw.data());
  z.avail_in = static_cast<uInt>(raw.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  const std::vector<Bytes> parts = noeira::fuzz::split_parts(Bytes(data + 1, size - 1), 2);
  std::vector<uint8_t> images_gz, labels_gz;
  const Bytes images = flags & 1 ? Bytes(images_gz = gzip(parts[0])) : parts[0];
  const Bytes labels = flags & 2 ? Bytes(labels_gz = gzip(parts[1])) : parts[1];
  const noeira::fuzz::MemFile images_file(images), labels_file(labels);

  constexpr int kClasses = 10;
  auto ds = noeira::load_idx_gz(images_file.path(), labels_file.path(), "fuzz", kClasses);
  if (!ds) {
    FUZZ_EXPECT(!ds.error().message.empty());
    return 0;
  }
  FUZZ_EXPECT(ds->sample_shape.size() == 2);
  const uint64_t per_sample =
      static_cast<uint64_t>(ds->sample_shape[0]) * static_cast<uint64_t>(ds->sample_shape[1]);
  FUZZ_EXPECT(ds->count >= 0 && ds->labels.size() == static_cast<size_t>(ds->count));
  FUZZ_EXPECT(ds->pixels.size() == static_cast<uint64_t>(ds->count) * per_sample);
  for (int32_t label : ds->labels) FUZZ_EXPECT(label >= 0 && label < kClasses);
  return 0;
}
