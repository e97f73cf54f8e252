#include "nn/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace noeira {

Status write_file_atomically(const std::filesystem::path& path, std::string_view contents,
                             std::string_view what) {
  const std::string tmp = path.string() + ".tmp." + std::to_string(::getpid());
  const std::string name = std::string(what) + " " + path.string();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return make_error("cannot write " + name + ": " + std::strerror(errno) +
                      " (does the directory exist and is it writable?)");
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return make_error("cannot write " + name + ": " + why);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return make_error("cannot write " + name + ": " + why);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return make_error("cannot write " + name + ": rename failed: " + why);
  }
  return {};
}

}  // namespace noeira
