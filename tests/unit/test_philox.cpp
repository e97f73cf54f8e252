// Philox4x32-10 against the published Random123 known-answer vectors, and the
// properties the shuffle and init rely on.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/common/philox.h"
#include "kernels/cpu/cpu_ops.h"

using namespace noeira;

TEST_CASE("Philox4x32-10 matches the Random123 known-answer vectors", "[philox]") {
  struct Kat {
    uint32_t ctr[4], key[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    const Philox4x32Out o =
        philox4x32_10(k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3], k.key[0], k.key[1]);
    for (int i = 0; i < 4; ++i) CHECK(o.v[i] == k.out[i]);
  }
}

TEST_CASE("Unit floats lie in the half-open unit interval", "[philox]") {
  CHECK(u32_to_unit_float(0u) == 0.0f);
  CHECK(u32_to_unit_float(0xffffffffu) < 1.0f);
}

TEST_CASE("The shuffle is a permutation, differs per epoch and repeats per seed", "[philox]") {
  CpuOps ops(1);
  const int64_t n = 1000;
  std::vector<int32_t> p0(n), p1(n), again(n);
  Result<size_t> ws_bytes = ops.shuffle_workspace_bytes(n);
  REQUIRE(ws_bytes.ok());
  std::vector<char> ws(*ws_bytes);
  ops.shuffle(42, 0, n, p0.data(), ws.data());
  ops.shuffle(42, 1, n, p1.data(), ws.data());
  ops.shuffle(42, 0, n, again.data(), ws.data());
  std::vector<int32_t> sorted = p0;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int32_t> iota(n);
  std::iota(iota.begin(), iota.end(), 0);
  CHECK(sorted == iota);
  CHECK(p0 != p1);
  CHECK(p0 == again);
  CHECK(p0 != iota);
}
