// noeira-bench profile --budget (harness/profile/roofline.h): a known part's figures, the
// bandwidth from a device's own clock and bus, and each op's budget as the larger of its
// FLOPs over the tensor cores' rate and its bytes over the bandwidth.
#include <string>

#include <catch2/catch.hpp>

#include "harness/profile/roofline.h"
#include "kernels/profiling/op_profiler.h"

using namespace noeira;
using Catch::Matchers::Contains;

TEST_CASE("roofline: the parts we know, by name", "[profile][budget]") {
  const std::optional<Roofline> h200 = known_roofline("NVIDIA H200");
  REQUIRE(h200);
  CHECK(h200->bf16_flops == Approx(989.4e12));
  CHECK(h200->tf32_flops == Approx(494.7e12));
  CHECK(h200->fp32_flops == Approx(66.9e12));
  CHECK(h200->bytes_per_s == Approx(4.8e12));
  CHECK(known_roofline("NVIDIA H100 80GB HBM3")->bytes_per_s == Approx(3.35e12));
  CHECK(known_roofline("NVIDIA H100 PCIe")->bf16_flops == Approx(756e12));
  CHECK_FALSE(known_roofline("NVIDIA GeForce GT 710"));

  // A device record (kernels/cuda/device_info.cpp) as an H200 reports it: 3201 MHz memory
  // clock, 6144-bit bus -> 2 x 3201e6 x 768 bytes = 4.92 TB/s.
  const nlohmann::json dev = {{"available", true}, {"name", "NVIDIA H200"},
                              {"memory_clock_max_mhz", 3201}, {"memory_bus_bits", 6144}};
  const std::optional<Roofline> measured = device_roofline(dev);
  REQUIRE(measured);
  CHECK(measured->bytes_per_s == Approx(4.917e12).epsilon(1e-3));
  CHECK_THAT(measured->basis, Contains("6144-bit bus"));
  CHECK_FALSE(device_roofline({{"available", false}}));
}

TEST_CASE("roofline budget: matrix work at the dtype's tensor-core rate, the rest at bandwidth",
          "[profile][budget]") {
  OpProfiler p;  // no stream attached: host clock
  for (int step = 0; step < 2; ++step) {
    p.begin_step();
    // 1 TFLOP over 1 GB of operands: compute-bound on an H200 in bf16 (1.01 ms vs 0.21).
    double t = p.begin_op("linear_forward");
    p.end_op("linear_forward", t, OpCost{1e12, 1e9}, "M=1 N=1 K=1");
    // 4.8 GB and no FLOPs: 1 ms at 4.8 TB/s.
    t = p.begin_op("act_backward");
    p.end_op("act_backward", t, OpCost{0.0, 4.8e9}, "n=1");
    p.end_step();
  }
  const Roofline h200 = *known_roofline("NVIDIA H200");
  const std::vector<BudgetRow> bf16 = roofline_budget(p, h200, /*bf16=*/true, /*tf32=*/true, false);
  REQUIRE(bf16.size() == 2);
  CHECK(bf16[0].op == "linear_forward");  // largest budget first
  CHECK(bf16[0].compute_bound);
  CHECK(bf16[0].calls_per_step == Approx(1.0));
  CHECK(bf16[0].budget_ms == Approx(1e12 / 989.4e12 * 1e3));
  CHECK(bf16[1].op == "act_backward");
  CHECK_FALSE(bf16[1].compute_bound);
  CHECK(bf16[1].budget_ms == Approx(1.0));
  CHECK(bf16[1].measured_ms < 0);  // not measured on the part
  // fp32 with TF32 on: half the bf16 rate; with it off, the CUDA cores'.
  CHECK(roofline_budget(p, h200, false, true, false)[0].budget_ms == Approx(1e12 / 494.7e12 * 1e3));
  CHECK(roofline_budget(p, h200, false, false, false)[0].budget_ms == Approx(1e12 / 66.9e12 * 1e3));

  const std::string table = render_budget(bf16, h200, true, true);
  CHECK_THAT(table, Contains("roofline budget on NVIDIA H200") && Contains("989.4 TFLOP/s (bf16)") &&
                        Contains("4.80 TB/s") && Contains("step budget at peak: 2.011 ms"));
  // Measured on the part: the ops' times beside their budgets.
  const std::vector<BudgetRow> timed = roofline_budget(p, h200, true, true, true);
  CHECK(timed[0].measured_ms >= 0);
  CHECK_THAT(render_budget(timed, h200, true, true), Contains("measured ms") && Contains("x the budget"));
}
