// A plan that does not fit is refused before anything is allocated, with the numbers
// (needed, the largest categories, what is free), never an out-of-memory kill mid-fill.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "nn/memory_plan.h"
#include "tests/support/run_binary.h"

using namespace noeira;
using namespace noeira::test;

TEST_CASE("the host allocator knows how much memory is available", "[resources]") {
  HostAllocator host;
  std::string where;
  const std::optional<size_t> avail = host.available_bytes(&where);
  REQUIRE(avail.has_value());
  CHECK(*avail > 0);
  CHECK_FALSE(where.empty());
}

TEST_CASE("the host allocator zeroes; large blocks start on a 2 MiB (huge page) boundary",
          "[resources]") {
  HostAllocator host;
  for (const size_t bytes : {size_t{100}, size_t{3} << 20}) {
    auto p = host.allocate(bytes, "a test block");
    REQUIRE(p.ok());
    const auto at = reinterpret_cast<uintptr_t>(*p);
    CHECK(at % (bytes >= (size_t{2} << 20) ? (size_t{2} << 20) : 64) == 0);
    const auto* b = static_cast<const unsigned char*>(*p);
    CHECK(std::all_of(b, b + bytes, [](unsigned char c) { return c == 0; }));
    host.release(*p);
  }
}

TEST_CASE("an oversized batch is refused at planning time with needed vs free",
          "[resources]") {
  // 5,000,000 rows of gpt-tiny's activations: terabytes.
  const CommandResult r = run_bench("train --model gpt-tiny --target cpu --threads 1 --steps 1 "
                                    "--batch 5000000");
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("the memory plan needs") &&
                           Catch::Contains("activations") && Catch::Contains("free (") &&
                           Catch::Contains("reduce the batch size"));
}

TEST_CASE("a plan whose sizes pass 64 bits is marked overflowed and refused, never wrapped",
          "[resources]") {
  constexpr int64_t kBig = int64_t{1} << 40;
  CHECK(Shape{kBig, kBig}.numel() == std::numeric_limits<int64_t>::max());  // saturates
  CHECK(Shape{7, kBig, kBig}.row_elems() == std::numeric_limits<int64_t>::max());
  CHECK(Shape{kBig, 1024}.numel() == kBig * 1024);

  SECTION("elements past int64") {
    MemoryPlan plan;
    plan.reserve(MemCategory::kParams, Shape{10}, DType::kF32);
    CHECK_FALSE(plan.overflowed());
    plan.reserve(MemCategory::kActivations, Shape{kBig, kBig}, DType::kF32);
    CHECK(plan.overflowed());
    CHECK(plan.overflow() == "activations " + Shape{kBig, kBig}.str() + " f32");
    CHECK(plan.total_bytes() == std::numeric_limits<size_t>::max());
  }
  SECTION("bytes past size_t: 2^62 floats") {
    MemoryPlan plan;
    plan.reserve(MemCategory::kActivations, Shape{int64_t{1} << 62}, DType::kF32);
    CHECK(plan.overflowed());
  }
  SECTION("a category's total past size_t: two buffers of 2^63 bytes") {
    MemoryPlan plan;
    plan.reserve(MemCategory::kDataset, Shape{int64_t{1} << 61}, DType::kF32);
    CHECK_FALSE(plan.overflowed());
    plan.reserve(MemCategory::kDataset, Shape{int64_t{1} << 61}, DType::kF32);
    CHECK(plan.overflowed());
    CHECK(plan.overflow().rfind("dataset ", 0) == 0);
  }
  SECTION("a workspace size query's SIZE_MAX (too large to say) is not wrapped to 0") {
    MemoryPlan plan;
    CHECK(plan.reserve_bytes(MemCategory::kWorkspace, std::numeric_limits<size_t>::max()).bytes > 0);
    CHECK(plan.overflowed());
  }
  MemoryPlan plan;
  plan.reserve(MemCategory::kActivations, Shape{kBig, kBig}, DType::kBF16);
  HostAllocator host;
  Result<Arenas> arenas = Arenas::allocate(plan, host);
  REQUIRE_FALSE(arenas.ok());
  CHECK_THAT(arenas.error().message, Catch::Contains("does not fit 64-bit sizes") &&
                                         Catch::Contains(Shape{kBig, kBig}.str()) &&
                                         Catch::Contains("far too large"));
}

TEST_CASE("a --batch above 2^24 is refused before anything is planned", "[resources]") {
  // 2^61 windows: products of the plan's sizes would wrap 64 bits.
  const CommandResult r = run_bench("train --model gpt-tiny --target cpu --threads 1 --steps 1 "
                                    "--batch 2305843009213693952");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("--batch") && Catch::Contains("16777216"));
}
