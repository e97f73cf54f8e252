// The bootstrap interval of a ratio of medians (harness/run/ratio_interval.h), the noisy
// mark and its reasons (harness/run/variant_ratio.h), and the run order
// (harness/run/run_order.h). Samples are synthetic: no assertion depends on a real time.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "harness/results/summary.h"
#include "harness/run/ratio_interval.h"
#include "harness/run/run_order.h"
#include "harness/run/variant_ratio.h"

using namespace noeira;

namespace {

// Step times around `median_ms` with AR(1) noise (consecutive steps correlated with
// coefficient phi, as a slow stretch of a machine slows several steps) of relative size
// `rel`, from a fixed LCG; symmetric innovations, so the series' median is median_ms.
struct Series {
  uint64_t state;
  double uniform() {  // in [-1, 1)
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
  }
  std::vector<double> take(size_t n, double median_ms, double rel, double phi) {
    std::vector<double> x;
    double e = 0.0;
    for (size_t i = 0; i < n; ++i) {
      e = phi * e + std::sqrt(1.0 - phi * phi) * std::sqrt(3.0) * rel * uniform();
      x.push_back(median_ms * (1.0 + e));
    }
    return x;
  }
};

std::vector<std::vector<double>> seeds_of(Series& s, int seeds, size_t n, double median_ms, double rel,
                                          double phi = 0.7) {
  std::vector<std::vector<double>> out;
  for (int k = 0; k < seeds; ++k) out.push_back(s.take(n, median_ms, rel, phi));
  return out;
}

VariantRecord variant_of(const std::string& name, const std::vector<std::vector<double>>& seeds,
                         std::optional<double> steal = std::nullopt, std::optional<double> load = std::nullopt) {
  VariantRecord v = new_variant(name, name.rfind("twin:", 0) == 0 ? "torch" : "noeira", "fp32", "cpu");
  for (size_t k = 0; k < seeds.size(); ++k) {
    RunRecord r;
    r.seed = k;
    r.timers.wall = timer_record(seeds[k]);
    if (steal || load) r.cpu_load = CpuLoadWindow{steal, load, load};
    v.runs.push_back(r);
  }
  v.summary = summarize_runs(v.runs);
  return v;
}

}  // namespace

TEST_CASE("Block length is ceil(sqrt(n))", "[interval]") {
  CHECK(bootstrap_block_length(0) == 1);
  CHECK(bootstrap_block_length(1) == 1);
  CHECK(bootstrap_block_length(4) == 2);
  CHECK(bootstrap_block_length(5) == 3);
  CHECK(bootstrap_block_length(100) == 10);
  CHECK(bootstrap_block_length(585) == 25);
}

TEST_CASE("A synthetic pair with a known ratio gives an interval that covers it", "[interval]") {
  Series s{42};
  // ours 6 ms, the twin 24 ms: the ratio of medians is 0.25; 3 seeds each, correlated steps.
  const auto ours = seeds_of(s, 3, 300, 6.0, 0.05);
  const auto twin = seeds_of(s, 3, 300, 24.0, 0.05);
  const std::optional<RatioInterval> r = ratio_interval(ours, twin);
  REQUIRE(r);
  CHECK(r->seeds_resampled);
  CHECK(r->n_num == 900);
  CHECK(r->lo <= 0.25);
  CHECK(r->hi >= 0.25);
  CHECK(r->lo <= r->ratio);
  CHECK(r->ratio <= r->hi);
  CHECK(r->half_width() < 0.10);
  CHECK_FALSE(r->wide());
  // Reproducible: the same inputs, the same interval, every call.
  const std::optional<RatioInterval> again = ratio_interval(ours, twin);
  CHECK(again->lo == r->lo);
  CHECK(again->hi == r->hi);
  CHECK(format_ratio_interval(*r).rfind("0.25x [0.2", 0) == 0);
}

TEST_CASE("Over many synthetic pairs the 95% interval covers the true ratio about 95% of the time",
          "[interval]") {
  // Independent pairs with correlated steps (phi 0.8) and a true ratio of 1.5: a bootstrap
  // of single steps would cover it far less often; blocks keep the correlation.
  IntervalOptions o;
  o.resamples = 400;
  int covered = 0;
  const int pairs = 60;
  Series s{7};
  for (int i = 0; i < pairs; ++i) {
    const auto a = seeds_of(s, 3, 150, 15.0, 0.08, 0.8);
    const auto b = seeds_of(s, 3, 150, 10.0, 0.08, 0.8);
    const std::optional<RatioInterval> r = ratio_interval(a, b, o);
    REQUIRE(r);
    if (r->lo <= 1.5 && 1.5 <= r->hi) ++covered;
  }
  INFO(covered << " of " << pairs);
  CHECK(covered >= 51);  // >= 85%
}

TEST_CASE("Fewer than 3 seeds a side: blocks only; too few samples: no interval", "[interval]") {
  Series s{3};
  const auto a = seeds_of(s, 2, 100, 10.0, 0.02);
  const auto b = seeds_of(s, 3, 100, 10.0, 0.02);
  const std::optional<RatioInterval> r = ratio_interval(a, b);
  REQUIRE(r);
  CHECK_FALSE(r->seeds_resampled);
  CHECK(r->lo <= 1.0);
  CHECK(r->hi >= 1.0);
  CHECK_FALSE(ratio_interval({{1.0, 1.1, 0.9, 1.0}}, b));  // 4 samples
  CHECK_FALSE(ratio_interval({}, b));
  CHECK_FALSE(ratio_interval({{0, 0, 0, 0, 0, 0}}, b));  // a median of 0
}

TEST_CASE("A wide interval is noisy, with the reason the runs recorded", "[interval]") {
  Series s{11};
  // Quiet: not noisy.
  const VariantRecord quiet_a = variant_of("eager", seeds_of(s, 3, 200, 5.0, 0.02));
  const VariantRecord quiet_b = variant_of("twin:eager", seeds_of(s, 3, 200, 10.0, 0.02));
  const std::optional<VariantRatio> q = variant_ratio(quiet_a, quiet_b, 2);
  REQUIRE(q);
  CHECK(q->timer == TimerKind::kWall);
  CHECK(q->ratio == Approx(0.5).epsilon(0.02));
  CHECK_FALSE(q->noisy);
  CHECK(ratio_text(*q).find("noisy") == std::string::npos);

  // Very noisy steps on a machine with steal time and a load above its 2 cores.
  const VariantRecord loud_a = variant_of("eager", seeds_of(s, 3, 8, 5.0, 0.5), 0.06, 3.5);
  const VariantRecord loud_b = variant_of("twin:eager", seeds_of(s, 3, 8, 10.0, 0.5));
  const std::optional<VariantRatio> l = variant_ratio(loud_a, loud_b, 2);
  REQUIRE(l);
  CHECK(l->noisy);
  CHECK_THAT(l->reason, Catch::Contains("steal up to 6.0%") &&
                            Catch::Contains("load average up to 3.5 on 2 cores") &&
                            Catch::Contains("too few samples (n = 24)"));
  CHECK_THAT(ratio_text(*l), Catch::EndsWith(" noisy"));

  // Nothing on the machine to blame: the spread itself.
  const VariantRecord wild = variant_of("eager", seeds_of(s, 3, 100, 5.0, 0.4));
  const std::optional<VariantRatio> w = variant_ratio(wild, quiet_b, 2);
  REQUIRE(w);
  CHECK(w->noisy);
  CHECK_THAT(w->reason, Catch::StartsWith("step times vary (cv up to"));
}

TEST_CASE("Interleaved order alternates the sides seed by seed; blocked keeps the old order",
          "[interval][order]") {
  const std::vector<uint64_t> seeds = {0, 1};
  const std::vector<RunSlot> inter = plan_run_order(2, 1, seeds, RunOrder::kInterleaved);
  const std::vector<RunSlot> want_inter = {{false, 0, 0}, {false, 1, 0}, {true, 0, 0},
                                           {false, 0, 1}, {false, 1, 1}, {true, 0, 1}};
  CHECK(inter == want_inter);
  const std::vector<RunSlot> blocked = plan_run_order(2, 1, seeds, RunOrder::kBlocked);
  const std::vector<RunSlot> want_blocked = {{false, 0, 0}, {false, 0, 1}, {false, 1, 0},
                                             {false, 1, 1}, {true, 0, 0},  {true, 0, 1}};
  CHECK(blocked == want_blocked);
  CHECK(parse_run_order("blocked") == RunOrder::kBlocked);
  CHECK(parse_run_order("interleaved") == RunOrder::kInterleaved);
  CHECK_FALSE(parse_run_order("random"));
  CHECK(std::string(run_order_name(RunOrder::kInterleaved)) == "interleaved");
}
