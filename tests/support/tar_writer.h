// Test fixture: writes a gzip-compressed ustar archive (files, folders, symbolic links,
// any member name, hostile ones included) for the archive reader's tests. The product
// reads archives only through libarchive; this writer exists because libarchive's own
// writer pulls in its xar format and with it libxml2 and ICU (see CMakeLists.txt).
#pragma once
#include <zlib.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace noeira::test {

struct TarMember {
  std::string path;
  std::vector<unsigned char> bytes;  // regular files only
  char type = '0';                   // '0' file, '5' folder, '2' symbolic link
  std::string link_target;
};

namespace tar_detail {
using Block = std::array<char, 512>;

inline void put(Block& b, size_t at, size_t width, const std::string& s) {
  if (s.size() > width) throw std::runtime_error("tar fixture: '" + s + "' too long");
  std::memcpy(b.data() + at, s.data(), s.size());
}
// Octal, zero-padded to width - 1 digits, then NUL (ustar numeric fields).
inline void put_octal(Block& b, size_t at, size_t width, unsigned long long v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*llo", static_cast<int>(width - 1), v);
  put(b, at, width, buf);
}
}  // namespace tar_detail

inline void write_tar_gz(const std::filesystem::path& out, const std::vector<TarMember>& members) {
  using tar_detail::Block;
  std::filesystem::create_directories(out.parent_path());
  gzFile gz = gzopen(out.c_str(), "wb");
  if (!gz) throw std::runtime_error("tar fixture: cannot write " + out.string());
  auto write = [&](const void* p, size_t n) {
    if (gzwrite(gz, p, static_cast<unsigned>(n)) != static_cast<int>(n))
      throw std::runtime_error("tar fixture: gzwrite failed");
  };
  for (const TarMember& m : members) {
    Block h{};
    tar_detail::put(h, 0, 100, m.path);
    tar_detail::put_octal(h, 100, 8, m.type == '5' ? 0755 : 0644);
    tar_detail::put_octal(h, 108, 8, 0);
    tar_detail::put_octal(h, 116, 8, 0);
    tar_detail::put_octal(h, 124, 12, m.type == '0' ? m.bytes.size() : 0);
    tar_detail::put_octal(h, 136, 12, 0);
    h[156] = m.type;
    tar_detail::put(h, 157, 100, m.link_target);
    tar_detail::put(h, 257, 6, std::string("ustar\0", 6));
    tar_detail::put(h, 263, 2, "00");
    // The checksum: the sum of the header's bytes with its own field read as spaces.
    std::memset(h.data() + 148, ' ', 8);
    unsigned sum = 0;
    for (char c : h) sum += static_cast<unsigned char>(c);
    char chk[8];
    std::snprintf(chk, sizeof chk, "%06o", sum);
    std::memcpy(h.data() + 148, chk, 7);  // six digits, NUL, and the space already there
    write(h.data(), h.size());
    if (m.type == '0' && !m.bytes.empty()) {
      write(m.bytes.data(), m.bytes.size());
      const size_t pad = (512 - m.bytes.size() % 512) % 512;
      const Block zeros{};
      if (pad) write(zeros.data(), pad);
    }
  }
  const Block zeros{};
  write(zeros.data(), zeros.size());
  write(zeros.data(), zeros.size());
  if (gzclose(gz) != Z_OK) throw std::runtime_error("tar fixture: gzclose failed");
}

}  // namespace noeira::test
