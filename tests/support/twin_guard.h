// Tests that launch the real PyTorch twin need a python with torch. Where there is none
// (a relocated bundle's self-containment check runs in a root without torch) such a
// test prints `SKIP [twin] <test name>: <reason>` and returns early, like [gpu] tests.
// NOEIRA_REQUIRE_TWIN=1 (scripts/test sets it; setup installs torch) turns the skip into
// a failure, so CI cannot pass by skipping.
#pragma once
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness/twin/twin.h"

namespace noeira::test {

inline bool twin_or_skip(const std::string& test_name) {
  static const PythonProbe probe = find_python_with_torch("");
  if (!probe.python.empty()) return true;
  if (const char* req = std::getenv("NOEIRA_REQUIRE_TWIN"); req && std::string(req) == "1")
    FAIL("NOEIRA_REQUIRE_TWIN=1 but " << probe.reason);
  std::printf("SKIP [twin] %s: %s\n", test_name.c_str(), probe.reason.c_str());
  std::fflush(stdout);
  return false;
}

}  // namespace noeira::test
