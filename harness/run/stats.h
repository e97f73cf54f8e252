// Statistics for timing samples and seed scores: summaries, two-sample tests and the
// stopping rule. Pure functions, no I/O. Empty inputs give NaN (or nullopt) rather than
// an error: the callers decide what "no data" means for them.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

namespace noeira {

// ---- Summaries ----

double mean(const std::vector<double>& x);
// Sample standard deviation (n - 1 in the denominator); 0 for n == 1, NaN for n == 0.
double sample_std(const std::vector<double>& x);
// std / mean: the relative noise of a set of samples; NaN when n == 0 or mean == 0.
double coefficient_of_variation(const std::vector<double>& x);
// Quantile q in [0, 1] with linear interpolation between order statistics: numpy's
// default (method="linear"), position (n - 1) * q.
double quantile(std::vector<double> x, double q);
double median(std::vector<double> x);
// MLPerf-style olympic mean: drop one minimum and one maximum, average the rest. Only
// defined for n >= 5 (fewer seeds leave too little to average).
std::optional<double> olympic_mean(const std::vector<double>& x);

struct SampleSummary {
  double median = 0, q1 = 0, q3 = 0, cv = 0;
  int64_t n = 0;
};
SampleSummary summarize(const std::vector<double>& samples);

// ---- Distributions ----

double normal_cdf(double z);
// Regularized incomplete beta I_x(a, b), by Lentz's continued fraction (Numerical
// Recipes' betacf); accurate to ~1e-12 for the a, b a t-test needs.
double regularized_incomplete_beta(double a, double b, double x);
// P(T <= t) for Student's t with `dof` (real, > 0) degrees of freedom.
double student_t_cdf(double t, double dof);

// ---- Two-sample tests ----

struct MannWhitneyResult {
  double u = 0;  // U statistic of the first sample (scipy's `statistic`)
  double z = 0;  // normal deviate, continuity-corrected
  double p = 1;  // two-sided p-value
};
// Mann-Whitney U, two-sided, with tie correction and the normal approximation with
// continuity correction (scipy.stats.mannwhitneyu(method="asymptotic")). Against the
// exact p (no ties, checked with scipy) the approximation is off by at most ~0.011 at
// n = 8 per side, ~0.006 at n = 15, ~0.017 at n = 5: good enough for a gate from n >= 8,
// indicative below. Timing samples number in the tens to thousands. All values equal
// (no rank information) gives z = 0, p = 1.
MannWhitneyResult mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

struct WelchResult {
  double t = 0;
  double dof = 0;  // Welch-Satterthwaite degrees of freedom
  double p = 1;    // two-sided
};
// Welch's unequal-variance t-test (scipy.stats.ttest_ind(equal_var=False)). Needs
// n >= 2 per side (else t = dof = NaN, p = 1). Zero variance on both sides: p = 1 when
// the means are equal, 0 when they differ (t = +-inf, dof = NaN).
WelchResult welch_t_test(const std::vector<double>& a, const std::vector<double>& b);

// ---- When to stop sampling (nvbench's "stdrel" criterion) ----

// Stop once there are enough samples and their relative noise (std / mean) is low
// enough, or the time budget is spent, or the hard cap on samples is reached. The
// relative noise of the samples does not shrink with more samples, so a step whose
// noise is inherently above max_rel_noise runs until max_seconds or max_samples.
struct StoppingRule {
  int64_t min_samples = 10;
  double max_rel_noise = 0.02;
  double max_seconds = 30.0;
  int64_t max_samples = 100000;  // 0 = no cap

  bool done(const std::vector<double>& samples, double elapsed_s) const;
};

}  // namespace noeira
