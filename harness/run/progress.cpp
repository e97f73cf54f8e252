#include "harness/run/progress.h"

#include <unistd.h>

#include <cstdio>

namespace noeira {

Progress::Progress(std::string label)
    : label_(std::move(label)), tty_(::isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

void Progress::update(int64_t done, int64_t total) {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double frac = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  if (tty_) {
    if (done != total && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    std::fprintf(stderr, "\r  %s %5.1f%% (%lld/%lld) %.1fs", label_.c_str(), 100.0 * frac,
                 static_cast<long long>(done), static_cast<long long>(total), elapsed);
    drawn_ = true;
  } else {
    const int decile = static_cast<int>(frac * 10.0);
    if (decile == last_decile_ || decile == 10) return;  // the caller prints the end
    last_decile_ = decile;
    std::fprintf(stderr, "  %s %3d%% (%lld/%lld) %.1fs\n", label_.c_str(), decile * 10,
                 static_cast<long long>(done), static_cast<long long>(total), elapsed);
  }
  std::fflush(stderr);
}

void Progress::finish() {
  if (tty_ && drawn_) std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace noeira
