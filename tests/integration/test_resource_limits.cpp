// A plan that does not fit is refused before anything is allocated, with the numbers
// (needed, the largest categories, what is free), never an out-of-memory kill mid-fill.
#include <catch2/catch.hpp>

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
