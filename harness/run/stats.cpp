#include "harness/run/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

namespace noeira {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Modified Lentz evaluation of the continued fraction for I_x(a, b) (Numerical Recipes
// 6.4 betacf); converges quickly for x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double a, double b, double x) {
  constexpr int kMaxIterations = 500;
  constexpr double kEpsilon = 1e-15;
  constexpr double kTiny = 1e-300;
  const double qab = a + b, qap = a + 1.0, qam = a - 1.0;
  double c = 1.0;
  double d = 1.0 - qab * x / qap;
  if (std::abs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= kMaxIterations; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));  // even step
    d = 1.0 + aa * d;
    if (std::abs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));  // odd step
    d = 1.0 + aa * d;
    if (std::abs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1.0) < kEpsilon) break;
  }
  return h;
}

// Average ranks (1-based) of `values`, ties sharing the mean of their positions; also
// returns sum(t^3 - t) over tie groups for the variance correction.
std::pair<std::vector<double>, double> average_ranks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t i, size_t j) { return values[i] < values[j]; });
  std::vector<double> ranks(values.size());
  double tie_term = 0.0;
  for (size_t start = 0; start < order.size();) {
    size_t end = start + 1;
    while (end < order.size() && values[order[end]] == values[order[start]]) ++end;
    const double rank = 0.5 * static_cast<double>(start + 1 + end);  // mean of start+1..end
    for (size_t k = start; k < end; ++k) ranks[order[k]] = rank;
    const double t = static_cast<double>(end - start);
    tie_term += t * t * t - t;
    start = end;
  }
  return {std::move(ranks), tie_term};
}

}  // namespace

double mean(const std::vector<double>& x) {
  if (x.empty()) return kNaN;
  return std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
}

double sample_std(const std::vector<double>& x) {
  if (x.empty()) return kNaN;
  if (x.size() == 1) return 0.0;
  const double m = mean(x);
  double ss = 0.0;
  for (double v : x) ss += (v - m) * (v - m);
  return std::sqrt(ss / static_cast<double>(x.size() - 1));
}

double coefficient_of_variation(const std::vector<double>& x) {
  const double m = mean(x);
  if (x.empty() || m == 0.0) return kNaN;
  return sample_std(x) / m;
}

double quantile(std::vector<double> x, double q) {
  if (x.empty()) return kNaN;
  std::sort(x.begin(), x.end());
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(x.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, x.size() - 1);
  return x[lo] + (pos - static_cast<double>(lo)) * (x[hi] - x[lo]);
}

double median(std::vector<double> x) { return quantile(std::move(x), 0.5); }

std::optional<double> olympic_mean(const std::vector<double>& x) {
  if (x.size() < 5) return std::nullopt;
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  const double sum = std::accumulate(x.begin(), x.end(), 0.0) - *lo - *hi;
  return sum / static_cast<double>(x.size() - 2);
}

SampleSummary summarize(const std::vector<double>& samples) {
  SampleSummary s;
  s.n = static_cast<int64_t>(samples.size());
  s.median = quantile(samples, 0.5);
  s.q1 = quantile(samples, 0.25);
  s.q3 = quantile(samples, 0.75);
  s.cv = coefficient_of_variation(samples);
  return s;
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double regularized_incomplete_beta(double a, double b, double x) {
  if (!(a > 0.0) || !(b > 0.0) || std::isnan(x)) return kNaN;
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(log_front);
  // Use the continued fraction where it converges fast; the symmetry
  // I_x(a, b) = 1 - I_{1-x}(b, a) covers the other side.
  if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_continued_fraction(a, b, x) / a;
  return 1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b;
}

double student_t_cdf(double t, double dof) {
  if (std::isnan(t) || !(dof > 0.0)) return kNaN;
  if (std::isinf(dof)) return normal_cdf(t);
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  // P(|T| > |t|) = I_{dof / (dof + t^2)}(dof / 2, 1 / 2)
  const double tail = 0.5 * regularized_incomplete_beta(0.5 * dof, 0.5, dof / (dof + t * t));
  return t > 0.0 ? 1.0 - tail : tail;
}

MannWhitneyResult mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  MannWhitneyResult r;
  if (a.empty() || b.empty()) {
    r.u = r.z = kNaN;
    return r;
  }
  const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size());
  std::vector<double> both(a);
  both.insert(both.end(), b.begin(), b.end());
  const auto [ranks, tie_term] = average_ranks(both);
  const double r1 =
      std::accumulate(ranks.begin(), ranks.begin() + static_cast<long>(a.size()), 0.0);
  const double u1 = r1 - n1 * (n1 + 1.0) / 2.0;
  const double u2 = n1 * n2 - u1;
  r.u = u1;
  const double n = n1 + n2;
  const double sigma = std::sqrt(n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0))));
  if (!(sigma > 0.0)) return r;  // every value tied: no evidence either way (z 0, p 1)
  // Two-sided: the larger U, moved half a unit toward the mean (continuity).
  r.z = (std::max(u1, u2) - n1 * n2 / 2.0 - 0.5) / sigma;
  r.p = std::clamp(2.0 * (1.0 - normal_cdf(r.z)), 0.0, 1.0);
  return r;
}

WelchResult welch_t_test(const std::vector<double>& a, const std::vector<double>& b) {
  WelchResult r;
  if (a.size() < 2 || b.size() < 2) {
    r.t = r.dof = kNaN;
    return r;
  }
  const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size());
  const double s1 = sample_std(a), s2 = sample_std(b);
  const double v1 = s1 * s1 / n1, v2 = s2 * s2 / n2;
  const double diff = mean(a) - mean(b);
  if (v1 + v2 == 0.0) {  // no spread at all: the means either agree or plainly differ
    r.t = diff == 0.0 ? 0.0 : std::copysign(std::numeric_limits<double>::infinity(), diff);
    r.dof = kNaN;
    r.p = diff == 0.0 ? 1.0 : 0.0;
    return r;
  }
  r.t = diff / std::sqrt(v1 + v2);
  r.dof = (v1 + v2) * (v1 + v2) / (v1 * v1 / (n1 - 1.0) + v2 * v2 / (n2 - 1.0));
  r.p = regularized_incomplete_beta(0.5 * r.dof, 0.5, r.dof / (r.dof + r.t * r.t));
  return r;
}

bool StoppingRule::done(const std::vector<double>& samples, double elapsed_s) const {
  const auto n = static_cast<int64_t>(samples.size());
  if (elapsed_s >= max_seconds) return true;
  if (max_samples > 0 && n >= max_samples) return true;
  if (n < min_samples || n == 0) return false;
  const double noise = coefficient_of_variation(samples);
  return !std::isnan(noise) && std::abs(noise) <= max_rel_noise;
}

}  // namespace noeira
