// Statistics against values numpy 1.24 / scipy 1.10 give for the same inputs.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "harness/run/stats.h"

using namespace noeira;

TEST_CASE("Quantiles interpolate linearly, as numpy's default method does", "[stats]") {
  const std::vector<double> x = {3, 1, 4, 1, 5, 9, 2, 6};
  // np.quantile(x, [0, .25, .5, .75, .9, 1])
  CHECK(quantile(x, 0.0) == Approx(1.0));
  CHECK(quantile(x, 0.25) == Approx(1.75));
  CHECK(quantile(x, 0.5) == Approx(3.5));
  CHECK(quantile(x, 0.75) == Approx(5.25));
  CHECK(quantile(x, 0.9) == Approx(6.9));
  CHECK(quantile(x, 1.0) == Approx(9.0));
  CHECK(median({1, 2, 3, 4}) == Approx(2.5));
  CHECK(quantile({1, 2, 3, 4}, 0.25) == Approx(1.75));
  CHECK(quantile({1, 2, 3, 4}, 0.75) == Approx(3.25));
  CHECK(median({7.0}) == 7.0);
  CHECK(std::isnan(median({})));
}

TEST_CASE("Mean, sample std, CV and the summary", "[stats]") {
  const std::vector<double> x = {3, 1, 4, 1, 5, 9, 2, 6};
  CHECK(mean(x) == Approx(3.875));
  CHECK(sample_std(x) == Approx(2.748376143938713));  // np.std(x, ddof=1)
  CHECK(coefficient_of_variation(x) == Approx(2.748376143938713 / 3.875));
  CHECK(sample_std({5.0}) == 0.0);
  CHECK(std::isnan(sample_std({})));
  CHECK(std::isnan(coefficient_of_variation({0.0, 0.0})));

  const SampleSummary s = summarize(x);
  CHECK(s.n == 8);
  CHECK(s.median == Approx(3.5));
  CHECK(s.q1 == Approx(1.75));
  CHECK(s.q3 == Approx(5.25));
  CHECK(s.cv == Approx(2.748376143938713 / 3.875));
}

TEST_CASE("The olympic mean drops one minimum and one maximum, from 5 values up", "[stats]") {
  CHECK_FALSE(olympic_mean({1, 2, 3, 4}).has_value());
  CHECK(*olympic_mean({10, 1, 2, 3, 100}) == Approx(5.0));
  CHECK(*olympic_mean({1, 1, 2, 9, 9, 3}) == Approx((1 + 2 + 9 + 3) / 4.0));  // one of each
}

TEST_CASE("Distribution functions match scipy", "[stats]") {
  CHECK(normal_cdf(1.96) == Approx(0.9750021048517795).epsilon(1e-12));
  CHECK(normal_cdf(0.0) == Approx(0.5));
  // scipy.special.betainc
  CHECK(regularized_incomplete_beta(2, 3, 0.4) == Approx(0.5248).epsilon(1e-12));
  CHECK(regularized_incomplete_beta(0.5, 0.5, 0.9) == Approx(0.7951672353008662).epsilon(1e-12));
  CHECK(regularized_incomplete_beta(15, 0.5, 0.98) == Approx(0.4400766792013857).epsilon(1e-10));
  CHECK(regularized_incomplete_beta(2, 3, 0.0) == 0.0);
  CHECK(regularized_incomplete_beta(2, 3, 1.0) == 1.0);
  // scipy.stats.t.cdf, integer and fractional degrees of freedom
  CHECK(student_t_cdf(2.0, 5) == Approx(0.9490302605850709).epsilon(1e-12));
  CHECK(student_t_cdf(-1.3, 2.5) == Approx(0.15024339463535397).epsilon(1e-12));
  CHECK(student_t_cdf(0.7, 100) == Approx(0.7572236967728132).epsilon(1e-12));
  CHECK(student_t_cdf(3.5, 1) == Approx(0.9114144672170953).epsilon(1e-12));  // Cauchy
  CHECK(student_t_cdf(0.0, 7) == Approx(0.5));
}

TEST_CASE("Mann-Whitney U matches scipy's asymptotic two-sided test", "[stats]") {
  // scipy docs example: mannwhitneyu(males, females, method="asymptotic")
  const MannWhitneyResult r = mann_whitney_u({19, 22, 16, 29, 24}, {20, 11, 17, 12});
  CHECK(r.u == 17.0);
  CHECK(r.p == Approx(0.11134688653314041).epsilon(1e-10));

  // With ties (tie-corrected variance); the exact p is 0.0433.
  const std::vector<double> x = {1.1, 2.2, 2.2, 3.3, 4.4, 5.5, 5.5, 6.6, 7.7, 8.8};
  const std::vector<double> y = {2.2, 3.3, 5.5, 5.5, 9.9, 10.1, 11.2, 12.3, 12.3, 13.4};
  const MannWhitneyResult t = mann_whitney_u(x, y);
  CHECK(t.u == 22.5);
  CHECK(t.p == Approx(0.040034110876713006).epsilon(1e-10));
  // Symmetric in its arguments (two-sided).
  CHECK(mann_whitney_u(y, x).p == Approx(t.p));

  // No information: everything tied.
  const MannWhitneyResult same = mann_whitney_u({2, 2, 2}, {2, 2});
  CHECK(same.p == 1.0);
  CHECK(same.z == 0.0);
  CHECK(std::isnan(mann_whitney_u({}, {1.0}).u));
}

TEST_CASE("Welch's t-test matches scipy.stats.ttest_ind(equal_var=False)", "[stats]") {
  const std::vector<double> a = {27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1,
                                 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4};
  const std::vector<double> b = {27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0,
                                 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4};
  const WelchResult r = welch_t_test(a, b);
  CHECK(r.t == Approx(-2.455356398286006).epsilon(1e-12));
  CHECK(r.dof == Approx(24.988529290231416).epsilon(1e-12));
  CHECK(r.p == Approx(0.021378001462866985).epsilon(1e-10));

  const WelchResult u = welch_t_test({1, 2, 3, 4}, {10, 12, 15, 11, 13, 19});  // unequal n
  CHECK(u.t == Approx(-7.313071356019156).epsilon(1e-12));
  CHECK(u.p == Approx(0.00016326276106012587).epsilon(1e-9));

  CHECK(welch_t_test({1.0}, {1.0, 2.0}).p == 1.0);  // too few samples
  CHECK(welch_t_test({3, 3}, {3, 3}).p == 1.0);     // no spread, same means
  CHECK(welch_t_test({3, 3}, {4, 4}).p == 0.0);     // no spread, different means
}

TEST_CASE("The stopping rule: enough quiet samples, or the time budget, or the cap", "[stats]") {
  StoppingRule rule;
  rule.min_samples = 5;
  rule.max_rel_noise = 0.02;
  rule.max_seconds = 10.0;
  rule.max_samples = 8;
  const std::vector<double> quiet = {10.0, 10.1, 9.9, 10.05, 9.95};
  const std::vector<double> noisy = {10.0, 14.0, 7.0, 12.0, 9.0};
  CHECK(rule.done(quiet, 0.5));                           // n >= 5, 0.8 %
  CHECK_FALSE(rule.done({10.0, 10.0, 10.0, 10.0}, 0.5));  // too few
  CHECK_FALSE(rule.done(noisy, 0.5));                     // too noisy
  CHECK(rule.done(noisy, 10.0));                          // out of time
  CHECK(rule.done({}, 11.0));                             // even with nothing
  CHECK(rule.done({1, 9, 1, 9, 1, 9, 1, 9}, 0.5));        // the cap
  rule.max_samples = 0;
  CHECK_FALSE(rule.done({1, 9, 1, 9, 1, 9, 1, 9}, 0.5));  // no cap
}
