// CpuOps' optimizer-side ops of the sequence recipes: global-norm gradient clipping (its
// per-parameter sums in lanes, bit for bit against a naive loop in the same order) and
// Adam's weight-decay mask; 1 vs 2 threads bit for bit.
#include <algorithm>

#include "tests/support/image_reference.h"

using namespace noeira;
using namespace noeira::test::image_ref;

// ---- Gradient clipping ----

TEST_CASE("clip_grad_norm: below and above max_norm; norm of per-segment norms; threads",
          "[seq-ops]") {
  const std::vector<int64_t> seg = {0, 5, 12, 12, 40};  // an empty parameter too
  const Vec g0 = random_vec(40, 51);
  double total_sq = 0.0;
  for (float v : g0) total_sq += static_cast<double>(v) * v;
  const double total = std::sqrt(total_sq);
  // Bit for bit: float per-segment norms (each segment's squares in double, element i into
  // lane i % 8, the lanes added in order), their squares summed in double.
  double sq_of_norms = 0.0;
  for (size_t p = 0; p + 1 < seg.size(); ++p) {
    double lane[8] = {};
    for (int64_t i = seg[p]; i < seg[p + 1]; ++i)
      lane[(i - seg[p]) % 8] += static_cast<double>(g0[i]) * g0[i];
    double sq = 0.0;
    for (double l : lane) sq += l;
    const float n = static_cast<float>(std::sqrt(sq));
    sq_of_norms += static_cast<double>(n) * n;
  }
  const float total_f = static_cast<float>(std::sqrt(sq_of_norms));
  for (float max_norm : {100.0f, 0.5f}) {
    INFO("max_norm " << max_norm);
    Vec out[2];
    float norm[2];
    for (int threads : {1, 2}) {
      CpuOps ops(threads);
      Vec g = g0;
      std::vector<char> ws(ops.clip_workspace_bytes(4));
      ops.clip_grad_norm(g.data(), seg.data(), 4, max_norm, &norm[threads - 1], ws.data());
      out[threads - 1] = g;
    }
    CHECK(same_bits(out[0], out[1]));
    CHECK(norm[0] == norm[1]);
    CHECK(norm[0] == total_f);
    CHECK(norm[0] == Approx(total).epsilon(1e-6));
    const float coef = std::min(1.0f, max_norm / (total_f + 1e-6f));
    Vec ref = g0;
    for (float& v : ref) v *= coef;
    CHECK(same_bits(out[0], ref));
    if (max_norm > total) {
      CHECK(same_bits(out[0], g0));
    } else {
      double after = 0.0;
      for (float v : out[0]) after += static_cast<double>(v) * v;
      CHECK(std::sqrt(after) == Approx(max_norm).epsilon(1e-5));
    }
  }
}

// ---- Adam's weight-decay mask ----

TEST_CASE("adam: decay_mask decays masked elements only (AdamW and L2); threads",
          "[seq-ops]") {
  const int64_t n = 67;
  const Vec p0 = random_vec(n, 61), g = random_vec(n, 62);
  Vec mask(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) mask[i] = (i % 3 == 0) ? 0.0f : 1.0f;
  for (bool decoupled : {true, false}) {
    INFO("decoupled " << decoupled);
    auto run = [&](int threads, double wd, const float* m_) {
      CpuOps ops(threads);
      AdamHyper h;
      h.lr = 0.01;
      h.weight_decay = wd;
      h.decoupled = decoupled;
      h.decay_mask = m_;
      Vec p = p0, m(static_cast<size_t>(n), 0.0f), v(static_cast<size_t>(n), 0.0f);
      for (int64_t step = 0; step < 3; ++step) {
        const StepCounters c{step, step};
        ops.adam(p.data(), g.data(), m.data(), v.data(), n, h, &c);
      }
      return p;
    };
    const Vec masked = run(2, 0.1, mask.data()), all = run(2, 0.1, nullptr);
    const Vec none = run(2, 0.0, nullptr);
    const Vec ones(static_cast<size_t>(n), 1.0f);
    CHECK(same_bits(run(2, 0.1, ones.data()), all));  // mask of ones = no mask
    CHECK(same_bits(run(1, 0.1, mask.data()), masked));
    for (int64_t i = 0; i < n; ++i) {
      INFO("i " << i);
      if (mask[i] != 0.0f)
        CHECK(masked[i] == all[i]);
      else
        CHECK(masked[i] == none[i]);
    }
    CHECK_FALSE(same_bits(all, none));
  }
}
