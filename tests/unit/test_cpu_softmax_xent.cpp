// CpuOps::softmax_xent's rows (kernels/cpu/losses.cpp): the loss, the gradient and the
// top-1 count against double, for rows narrower and wider than the kept exps (1024) and
// than the max's lanes, with label smoothing and bf16 logits; the top-1 tie and NaN rules
// (kernels/op_list.inc).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/common/bf16.h"
#include "kernels/cpu/cpu_ops.h"
#include "tests/support/image_reference.h"

using namespace noeira;
using noeira::test::image_ref::random_vec;
using noeira::test::image_ref::Vec;

namespace {

struct LossRun {
  LossStats stats{};
  Vec d;
};

LossRun run(const Vec& z, const std::vector<int32_t>& labels, int64_t C) {
  CpuOps ops(1);
  const auto B = static_cast<int64_t>(labels.size());
  LossRun r;
  r.d.assign(z.size(), 0.0f);
  StepCounters c{};
  ops.softmax_xent(ConstView{z.data(), B * C}, labels.data(), B, C, 0.0f,
                   View{r.d.data(), B * C}, &r.stats, nullptr, &c);
  return r;
}

}  // namespace

TEST_CASE("softmax_xent rows of 3 to 2100 classes: loss, gradient and hits as in double",
          "[loss][cpu]") {
  for (const int64_t C : {3, 10, 31, 32, 65, 1024, 1025, 2100}) {
    CAPTURE(C);
    const int64_t B = 5;
    const Vec z = random_vec(B * C, 40 + static_cast<uint32_t>(C), -6.0f, 6.0f);
    std::vector<int32_t> labels;
    for (int64_t i = 0; i < B; ++i) labels.push_back(static_cast<int32_t>((i * 7) % C));
    const LossRun r = run(z, labels, C);
    double want_loss = 0.0;
    int64_t want_hits = 0;
    for (int64_t i = 0; i < B; ++i) {
      const float* row = z.data() + i * C;
      int64_t top = 0;
      for (int64_t j = 1; j < C; ++j)
        if (row[j] > row[top]) top = j;
      want_hits += top == labels[static_cast<size_t>(i)];
      double sum = 0.0;
      for (int64_t j = 0; j < C; ++j) sum += std::exp(static_cast<double>(row[j]) - row[top]);
      want_loss += std::log(sum) + row[top] - row[labels[static_cast<size_t>(i)]];
      for (int64_t j = 0; j < C; ++j) {
        const double p = std::exp(static_cast<double>(row[j]) - row[top]) / sum;
        const double g = (p - (j == labels[static_cast<size_t>(i)] ? 1.0 : 0.0)) / B;
        CHECK(r.d[static_cast<size_t>(i * C + j)] == Approx(g).margin(1e-7));
      }
    }
    CHECK(r.stats.loss_sum == Approx(want_loss).epsilon(1e-6));
    CHECK(r.stats.correct == want_hits);
    CHECK(r.stats.count == B);
  }
}

TEST_CASE("softmax_xent over 65 classes (the lanes' path): label smoothing, and bf16 logits "
          "as their fp32 values", "[loss][cpu]") {
  const int64_t B = 3, C = 65;
  const Vec z = random_vec(B * C, 77, -4.0f, 4.0f);
  const std::vector<int32_t> labels{0, 33, 64};
  CpuOps ops(1);
  SECTION("eps 0.1: torch's (1 - eps) nll + eps mean_k(-log p_k)") {
    const float eps = 0.1f;
    LossRun r;
    r.d.assign(z.size(), 0.0f);
    StepCounters c{};
    ops.softmax_xent(ConstView{z.data(), B * C}, labels.data(), B, C, eps,
                     View{r.d.data(), B * C}, &r.stats, nullptr, &c);
    double want = 0.0;
    for (int64_t i = 0; i < B; ++i) {
      const float* row = z.data() + i * C;
      double lse = 0.0;
      for (int64_t j = 0; j < C; ++j) lse += std::exp(static_cast<double>(row[j]));
      lse = std::log(lse);
      double smooth = 0.0;
      for (int64_t j = 0; j < C; ++j) smooth += (lse - row[j]) / C;
      const int32_t y = labels[static_cast<size_t>(i)];
      want += (1.0 - eps) * (lse - row[y]) + eps * smooth;
      for (int64_t j = 0; j < C; ++j) {
        const double target = (j == y ? 1.0 - eps : 0.0) + eps / C;
        const double g = (std::exp(row[j] - lse) - target) / B;
        CHECK(r.d[static_cast<size_t>(i * C + j)] == Approx(g).margin(1e-7));
      }
    }
    CHECK(r.stats.loss_sum == Approx(want).epsilon(1e-6));
  }
  SECTION("bf16 logits: the fp32 rows of their values, the gradient rounded once") {
    std::vector<bf16_t> zb(z.size()), db(z.size());
    Vec zr(z.size());
    for (size_t i = 0; i < z.size(); ++i) store_f32(zb[i], z[i]), zr[i] = load_f32(zb[i]);
    const LossRun want = run(zr, labels, C);
    LossStats s{};
    StepCounters c{};
    ops.softmax_xent(ConstView{zb.data(), B * C}, labels.data(), B, C, 0.0f,
                     View{db.data(), B * C}, &s, nullptr, &c);
    CHECK(s.loss_sum == want.stats.loss_sum);
    CHECK(s.correct == want.stats.correct);
    for (size_t i = 0; i < db.size(); ++i) {
      bf16_t rounded;
      store_f32(rounded, want.d[i]);
      CHECK(db[i] == rounded);
    }
  }
}

TEST_CASE("softmax_xent top-1: ties go to the lowest index; NaNs after the first logit are "
          "passed over, a NaN first logit makes index 0 the top and the loss NaN",
          "[loss][cpu]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const int64_t C : {8, 40}) {  // the scalar scan, and the lanes
    CAPTURE(C);
    Vec tie(static_cast<size_t>(C), -1.0f);
    tie[5] = 2.0f, tie[static_cast<size_t>(C - 1)] = 2.0f;
    CHECK(run(tie, {5}, C).stats.correct == 1);
    CHECK(run(tie, {static_cast<int32_t>(C - 1)}, C).stats.correct == 0);

    Vec later_nan = tie;
    later_nan[2] = nan;
    CHECK(run(later_nan, {5}, C).stats.correct == 1);

    Vec first_nan = tie;
    first_nan[0] = nan;
    const LossRun r = run(first_nan, {0}, C);
    CHECK(r.stats.correct == 1);
    CHECK(std::isnan(r.stats.loss_sum));
  }
}
