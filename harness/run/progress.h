// A progress line on stderr: rewritten in place on a terminal, a line every 10%
// otherwise (CI logs stay short).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace noeira {

class Progress {
 public:
  explicit Progress(std::string label);
  void update(int64_t done, int64_t total);
  void finish();

 private:
  std::string label_;
  bool tty_;
  int last_decile_ = -1;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool drawn_ = false;
};

}  // namespace noeira
