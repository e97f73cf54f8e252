// The profiler's pieces (kernels/profiling): every op has a category, the work of an op
// call is counted from its arguments, the decorator forwards every call unchanged and
// records only inside profiled steps, and the Chrome trace it writes is well formed.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "harness/profile/chrome_trace.h"
#include "harness/profile/op_breakdown.h"
#include "kernels/backend.h"
#include "kernels/profiling/op_category.h"
#include "kernels/profiling/op_cost.h"
#include "kernels/profiling/profiling_ops.h"

using namespace noeira;

namespace {

const std::vector<std::string>& listed_ops() {
  static const std::vector<std::string> names = {
#define NOEIRA_OP(ret, name, params, args) #name,
#define NOEIRA_QUERY(ret, name, params, args)
#include "kernels/op_list.inc"
  };
  return names;
}

}  // namespace

TEST_CASE("every op of kernels/op_list.inc belongs to a category other than 'other'", "[profile]") {
  for (const std::string& op : listed_ops()) {
    INFO(op);
    CHECK(op_category_of(op) != OpCategory::kOther);
  }
  CHECK(op_category_of("no_such_op") == OpCategory::kOther);
  for (size_t c = 0; c < kOpCategoryCount; ++c)
    CHECK(op_category_from_name(op_category_name(static_cast<OpCategory>(c))) == static_cast<OpCategory>(c));
}

TEST_CASE("an op call's work: 2 FLOPs per multiply-add of the products, operand bytes elsewhere",
          "[profile]") {
  std::vector<float> a(6 * 4), b(4 * 5), c(6 * 5);
  const OpCost g = op_cost::of(op_cost::gemm_tag{}, false, false, int64_t{6}, int64_t{5}, int64_t{4},
                               1.0f, ConstView(a.data(), 24), int64_t{4}, ConstView(b.data(), 20),
                               int64_t{5}, 0.0f, c.data(), int64_t{5});
  CHECK(g.flops == 2.0 * 6 * 5 * 4);
  CHECK(g.bytes == 4.0 * (24 + 20 + 30));
  std::vector<bf16_t> x(100), y(100);
  const OpCost cast = op_cost::of(op_cost::cast_tag{}, ConstView(x.data(), 100), View(y.data(), 100));
  CHECK(cast.flops == 0);
  CHECK(cast.bytes == 400.0);
  ConvShape s{2, 3, 8, 8, 4, 3, 3, 1, 1, true, true};
  const OpCost conv = op_cost::of(op_cost::conv2d_forward_tag{}, s, ConstView(a.data(), 0));
  CHECK(conv.flops == 2.0 * s.y_elems() * 3 * 9);
  CHECK(op_cost::describe("(x, y, M)", ConstView(x.data(), 100), View(y.data(), 100), int64_t{7}) ==
        "x:bf16[100] y:bf16[100] M=7");
}

TEST_CASE("ProfilingOps forwards every call and records only inside profiled steps", "[profile]") {
  Result<Backend> b = make_backend(Device::kCpu, 1);
  REQUIRE(b);
  OpProfiler prof;
  ProfilingOps ops(std::move(b->ops), prof);
  std::vector<float> x = {-1.0f, 0.5f, 2.0f}, y1(3), y2(3);
  ops.act_forward(ConstView(x.data(), 3), View(y1.data(), 3), Act::kReLU);  // not recorded
  prof.begin_step();
  ops.act_forward(ConstView(x.data(), 3), View(y2.data(), 3), Act::kReLU);
  ops.add(ConstView(x.data(), 3), ConstView(x.data(), 3), View(y2.data(), 3));
  prof.end_step();
  CHECK(y1 == std::vector<float>{0.0f, 0.5f, 2.0f});
  CHECK(y2 == std::vector<float>{-2.0f, 1.0f, 4.0f});
  REQUIRE(prof.events().size() == 2);
  CHECK(std::string(prof.events()[0].op) == "act_forward");
  CHECK(prof.events()[1].category == OpCategory::kActivation);
  CHECK(prof.call_shapes()[0] == "x:f32[3] y:f32[3]");
  const ProfileSideRecord side = our_breakdown(prof, "noeira:eager");
  CHECK(side.steps == 1);
  CHECK(side.attributed_ms <= side.step_ms);
  CHECK(side.category("activation")->bytes_per_step == 12.0 * 2 + 12.0 * 3);
}

TEST_CASE("our Chrome trace is valid trace-event JSON: fields, order, one event per step",
          "[profile]") {
  OpProfiler prof;
  for (int s = 0; s < 3; ++s) {
    prof.begin_step();
    ProfiledCall call(&prof, "gemm", OpCost{10, 20});
    prof.end_step();
  }
  const nlohmann::json trace = chrome_trace(prof, "test");
  Result<TraceCheck> c = check_chrome_trace(trace, true);
  REQUIRE(c);
  CHECK(c->steps == 3);

  SECTION("the checker rejects what Perfetto would not load") {
    nlohmann::json bad = trace;
    bad["traceEvents"][1].erase("ts");
    CHECK_FALSE(check_chrome_trace(bad, true));
    nlohmann::json unbalanced = {{"traceEvents", {{{"name", "a"}, {"ph", "B"}, {"ts", 1}, {"pid", 1}, {"tid", 1}}}}};
    CHECK_FALSE(check_chrome_trace(unbalanced, true));
    nlohmann::json backwards = {{"traceEvents",
                                 {{{"name", "a"}, {"ph", "X"}, {"ts", 5}, {"dur", 1}, {"pid", 1}, {"tid", 1}},
                                  {{"name", "b"}, {"ph", "X"}, {"ts", 2}, {"dur", 1}, {"pid", 1}, {"tid", 1}}}}};
    CHECK_FALSE(check_chrome_trace(backwards, true));
    CHECK(check_chrome_trace(backwards, false));
  }
}
