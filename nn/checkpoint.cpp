#include "nn/checkpoint.h"

#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>

#include "nn/atomic_file.h"
#include "nn/json_input.h"

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

// The documented header fields (docs/checkpoint-format.md) that readers take as a type
// (a resume, `sample`), checked when present: older checkpoints lack some.
Status check_header_fields(const nlohmann::json& h) {
  for (const char* key : {"format", "model", "dataset", "recipe_hash", "amp"})
    if (h.contains(key) && !h[key].is_string())
      return make_error(std::string(key) + " is " + h[key].type_name() + ", not a string");
  // seed, epoch, step, batch, context: counts, non-negative; epoch is read as an int.
  for (const char* key : {"seed", "epoch", "step", "batch", "context"})
    if (h.contains(key) && !h[key].is_number_unsigned())
      return make_error(std::string(key) + " is " + h[key].dump() + ", not a count (0 or more)");
  if (h.contains("epoch") && h["epoch"].get<uint64_t>() > static_cast<uint64_t>(INT32_MAX))
    return make_error("epoch " + h["epoch"].dump() + " is out of range");
  if (h.contains("ranks") && !(h["ranks"].is_number_unsigned() && h["ranks"].get<uint64_t>() >= 1 &&
                               h["ranks"].get<uint64_t>() <= static_cast<uint64_t>(INT32_MAX)))
    return make_error("ranks is " + h["ranks"].dump() + ", not a rank count (1 or more)");
  if (h.contains("optimizer") && !h["optimizer"].is_object())
    return make_error(std::string("optimizer is ") + h["optimizer"].type_name() + ", not an object");
  if (h.contains("vocab") && !h["vocab"].is_array())
    return make_error(std::string("vocab is ") + h["vocab"].type_name() + ", not a list");
  return {};
}

// Bytes of a tensor of `dims` and `dtype`, or nothing when a dimension is negative or the
// product does not fit 64 bits.
std::optional<uint64_t> tensor_bytes(const std::vector<int64_t>& dims, DType dtype) {
  uint64_t n = dtype_size(dtype);
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return std::nullopt;
  return n;
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
  Result<nlohmann::json> parsed = parse_json_input(
      std::string_view(reinterpret_cast<const char*>(data.data()) + 24, static_cast<size_t>(hlen)));
  if (!parsed || !parsed->is_object() || !parsed->contains("tensors") ||
      !parsed->at("tensors").is_array())
    return make_error(where + ": header is not valid JSON with a tensor list" +
                      (parsed ? std::string() : " (" + parsed.error().message + ")"));
  nlohmann::json header = std::move(parsed).value();
  if (Status fields = check_header_fields(header); !fields)
    return make_error(where + ": header field " + fields.error().message);
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
      const std::vector<int64_t> dims = integer_list(t.at("shape"), "shape");
      if (dims.size() > Shape::kMaxDims)
        return make_error(where + ": tensor " + ct.name + " has too many dimensions");
      const std::optional<uint64_t> bytes = tensor_bytes(dims, ct.dtype);
      if (!bytes)
        return make_error(where + ": tensor " + ct.name + " has an impossible shape " +
                          t.at("shape").dump());
      for (int64_t d : dims) ct.shape.dims[static_cast<size_t>(ct.shape.rank++)] = d;
      const auto off = integer_field<uint64_t>(t, "offset");
      const auto nb = integer_field<uint64_t>(t, "nbytes");
      if (nb != *bytes || off > data_len || nb > data_len - off)
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
