// [gpu] tests run only where a CUDA device is usable. Elsewhere (no device, or a build
// without CUDA) a test prints exactly one line, `SKIP [gpu] <test name>: <reason>`, and
// returns early, so it passes — loudly, never silently.
//
//   TEST_CASE("cuda: ...", "[gpu]") {
//     if (!gpu_or_skip(current_test_name().c_str())) return;
//   #if defined(NOEIRA_WITH_CUDA)
//     ... CUDA-only code ...
//   #endif
//   }
#pragma once
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

namespace noeira {
#if defined(NOEIRA_WITH_CUDA)
bool cuda_device_usable(std::string* why);  // kernels/cuda/device_info.cpp
#endif
}  // namespace noeira

namespace noeira::test {

inline bool gpu_or_skip(const char* test_name) {
  std::string why;
#if defined(NOEIRA_WITH_CUDA)
  if (cuda_device_usable(&why)) return true;
#else
  why = "this build has no CUDA backend (configure with -DNOEIRA_CUDA=ON)";
#endif
  std::printf("SKIP [gpu] %s: %s\n", test_name, why.c_str());
  std::fflush(stdout);
  return false;
}

// The running Catch test's name, for gpu_or_skip.
inline std::string current_test_name() {
  return Catch::getResultCapture().getCurrentTestName();
}

}  // namespace noeira::test
