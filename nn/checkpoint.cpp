#include "nn/checkpoint.h"

#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>

#include "nn/atomic_file.h"

namespace noeira {

namespace {

template <class T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
  out.append(b, sizeof(T));
}

template <class T>
T get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

Result<DType> parse_dtype(const std::string& s) {
  if (s == "f32") return DType::kF32;
  if (s == "bf16") return DType::kBF16;
  if (s == "i32") return DType::kI32;
  return make_error("unknown dtype '" + s + "'");
}

}  // namespace

const CheckpointTensor* Checkpoint::find(const std::string& name) const {
  for (const CheckpointTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::string json_hash(const nlohmann::json& j) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : j.dump()) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

Status write_checkpoint(const std::filesystem::path& path, const Checkpoint& ckpt) {
  nlohmann::json header = ckpt.meta;
  nlohmann::json list = nlohmann::json::array();
  uint64_t offset = 0;
  for (const CheckpointTensor& t : ckpt.tensors) {
    std::vector<int64_t> dims(t.shape.dims.begin(), t.shape.dims.begin() + t.shape.rank);
    list.push_back({{"name", t.name},
                    {"group", t.group},
                    {"dtype", dtype_name(t.dtype)},
                    {"shape", dims},
                    {"offset", offset},
                    {"nbytes", t.bytes.size()}});
    offset += t.bytes.size();
  }
  header["tensors"] = list;
  const std::string h = header.dump();

  std::string out;
  out.reserve(24 + h.size() + offset + 4);
  out.append(kCheckpointMagic, 8);
  put<uint32_t>(out, kCheckpointVersion);
  put<uint32_t>(out, 0);
  put<uint64_t>(out, h.size());
  out += h;
  for (const CheckpointTensor& t : ckpt.tensors)
    out.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  const uint32_t crc = static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(out.data()), static_cast<uInt>(out.size())));
  put<uint32_t>(out, crc);
  return write_file_atomically(path, out, "checkpoint");
}

Result<Checkpoint> read_checkpoint(const std::filesystem::path& path) {
  const std::string where = "checkpoint " + path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(where + ": cannot open it (does the file exist?)");
  const std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  if (data.size() < 28)
    return make_error(where + ": truncated (" + std::to_string(data.size()) +
                      " bytes); it is not a complete noeira checkpoint");
  if (std::memcmp(data.data(), kCheckpointMagic, 8) != 0)
    return make_error(where + ": not a noeira checkpoint (bad magic); pass a file written "
                              "by `noeira-bench train --save`");
  const uint32_t version = get<uint32_t>(data.data() + 8);
  if (version != kCheckpointVersion)
    return make_error(where + ": format version " + std::to_string(version) +
                      ", this build reads version " + std::to_string(kCheckpointVersion));
  const uint64_t hlen = get<uint64_t>(data.data() + 16);
  if (hlen > data.size() - 28)
    return make_error(where + ": truncated (header says " + std::to_string(hlen) +
                      " header bytes, file has " + std::to_string(data.size()) + ")");
  const uint32_t stored_crc = get<uint32_t>(data.data() + data.size() - 4);
  const uint32_t crc = static_cast<uint32_t>(
      crc32(0L, data.data(), static_cast<uInt>(data.size() - 4)));
  if (crc != stored_crc)
    return make_error(where + ": checksum mismatch (file is corrupt or truncated); "
                              "re-create it or use another copy");

  Checkpoint ck;
  nlohmann::json header = nlohmann::json::parse(data.begin() + 24, data.begin() + 24 +
                                                static_cast<std::ptrdiff_t>(hlen),
                                                nullptr, false);
  if (header.is_discarded() || !header.is_object() || !header.contains("tensors"))
    return make_error(where + ": header is not valid JSON with a tensor list");
  const uint64_t data_start = 24 + hlen;
  const uint64_t data_len = data.size() - 4 - data_start;
  try {
    for (const auto& t : header.at("tensors")) {
      CheckpointTensor ct;
      ct.name = t.at("name").get<std::string>();
      ct.group = t.at("group").get<std::string>();
      Result<DType> dt = parse_dtype(t.at("dtype").get<std::string>());
      if (!dt) return make_error(where + ": tensor " + ct.name + ": " + dt.error().message);
      ct.dtype = *dt;
      const auto dims = t.at("shape").get<std::vector<int64_t>>();
      if (dims.size() > Shape::kMaxDims)
        return make_error(where + ": tensor " + ct.name + " has too many dimensions");
      for (int64_t d : dims) ct.shape.dims[static_cast<size_t>(ct.shape.rank++)] = d;
      const uint64_t off = t.at("offset").get<uint64_t>();
      const uint64_t nb = t.at("nbytes").get<uint64_t>();
      if (nb != static_cast<uint64_t>(ct.shape.numel()) * dtype_size(ct.dtype) ||
          off > data_len || nb > data_len - off)
        return make_error(where + ": tensor " + ct.name + " has inconsistent size/offset");
      const auto* p = data.data() + data_start + off;
      ct.bytes.assign(p, p + nb);
      ck.tensors.push_back(std::move(ct));
    }
  } catch (const nlohmann::json::exception& e) {
    return make_error(where + ": malformed tensor list in header (" + e.what() + ")");
  }
  header.erase("tensors");
  ck.meta = std::move(header);
  return ck;
}

}  // namespace noeira
