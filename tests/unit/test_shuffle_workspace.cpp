// The shuffle's workspace size query is an error, not 0 bytes, when the backend cannot
// shuffle that many samples (the trainer's plan then fails with it). The CUDA checks need
// no device: the count limit is checked before any CUDA call, and without a device cub's
// own size query fails, which must also be an error.
#include <catch2/catch.hpp>

#include <climits>

#include "kernels/cpu/cpu_ops.h"
#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include "kernels/cuda/cuda_ops.h"
#endif

using namespace noeira;

TEST_CASE("CpuOps::shuffle_workspace_bytes refuses counts it cannot shuffle", "[shuffle]") {
  CpuOps ops(1);
  Result<size_t> ok = ops.shuffle_workspace_bytes(1000);
  REQUIRE(ok.ok());
  CHECK(*ok == 1000 * sizeof(uint64_t));
  Result<size_t> none = ops.shuffle_workspace_bytes(0);
  REQUIRE(none.ok());
  CHECK(*none == 0);
  for (int64_t n : {int64_t{-1}, int64_t{INT32_MAX} + 1}) {
    Result<size_t> r = ops.shuffle_workspace_bytes(n);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains(std::to_string(n)) &&
                                      Catch::Contains("2147483647"));
  }
}

TEST_CASE("The CUDA shuffle's workspace query fails loudly, never with 0 bytes", "[shuffle]") {
#if defined(NOEIRA_WITH_CUDA)
  for (int64_t n : {int64_t{-5}, int64_t{INT_MAX} + 1}) {
    Result<size_t> r = cuda::shuffle_workspace_bytes(n);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains(std::to_string(n)) &&
                                      Catch::Contains("INT_MAX"));
  }
  Result<size_t> none = cuda::shuffle_workspace_bytes(0);
  REQUIRE(none.ok());
  CHECK(*none == 0);
  std::string why;
  Result<size_t> r = cuda::shuffle_workspace_bytes(60000);
  if (cuda_device_usable(&why)) {
    REQUIRE(r.ok());
    CHECK(*r >= 60000 * (2 * sizeof(uint64_t) + sizeof(int32_t)));
  } else {
    // No device: cub cannot size its storage, and says so instead of returning 0.
    INFO(why);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("cub::DeviceRadixSort") &&
                                      Catch::Contains("60000"));
  }
#else
  SUCCEED("no CUDA backend in this build");
#endif
}
