#include "nn/training/token_sampler.h"

#include <algorithm>
#include <cmath>

#include "kernels/common/philox.h"

namespace noeira {

int32_t sample_token(const std::vector<float>& logits, const SamplingOptions& o, uint32_t index) {
  const auto V = static_cast<int64_t>(logits.size());
  if (o.temperature <= 0.0)
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  // In double: the scaled logits, the k-th largest as the cut-off, then softmax weights.
  std::vector<double> z(logits.begin(), logits.end());
  for (double& v : z) v /= o.temperature;
  double cut = -INFINITY;
  if (o.top_k > 0 && o.top_k < V) {
    std::vector<double> sorted = z;
    std::nth_element(sorted.begin(), sorted.begin() + (o.top_k - 1), sorted.end(),
                     std::greater<double>());
    cut = sorted[static_cast<size_t>(o.top_k - 1)];
  }
  const double top = *std::max_element(z.begin(), z.end());
  double total = 0.0;
  for (double& v : z) {
    v = v >= cut ? std::exp(v - top) : 0.0;
    total += v;
  }
  // One unit draw in [0, 1) against the cumulative weights, in id order.
  const double u = static_cast<double>(
                       u32_to_unit_float(philox_word(o.seed, RngPurpose::kSample, index, 0))) *
                   total;
  double acc = 0.0;
  int32_t last = 0;
  for (int64_t i = 0; i < V; ++i) {
    if (z[static_cast<size_t>(i)] == 0.0) continue;
    acc += z[static_cast<size_t>(i)];
    last = static_cast<int32_t>(i);
    if (u < acc) return last;
  }
  return last;  // rounding left u at the total: the last token with weight
}

}  // namespace noeira
