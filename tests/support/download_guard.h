// Tests that download (from file:// URLs) need a build with download support. In a build
// without it (NOEIRA_DOWNLOAD=OFF: the GPU bundle, which links no libcurl) such a test
// prints exactly one line, `SKIP [download] <test name>: <reason>`, and returns early, like
// [gpu] tests: loudly, never silently.
//
//   TEST_CASE("locate: downloads ...", "[datasets]") {
//     if (!downloads_or_skip()) return;
//     ...
//   }
#pragma once
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "datasets/data_files.h"

namespace noeira::test {

inline bool downloads_or_skip() {
  if (downloads_supported()) return true;
  std::printf("SKIP [download] %s: this build has no download support (NOEIRA_DOWNLOAD=OFF, "
              "a GPU bundle)\n",
              Catch::getResultCapture().getCurrentTestName().c_str());
  std::fflush(stdout);
  return false;
}

}  // namespace noeira::test
