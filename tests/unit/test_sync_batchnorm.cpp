// Synchronised BatchNorm on the CPU (kernels/op_list.inc: batchnorm_stats ... _from_stats,
// sum_over_ranks; nn/batchnorm.h with a CrossRankSum). Ranks are simulated in one process:
// the batch cut into R equal parts, each part's sums gathered rank-major and added with
// sum_over_ranks, as parallel/data_parallel_sync.cpp does over MPI. Over one rank the split
// ops are the fused ops bit for bit; over R ranks they are the fused ops on the whole batch
// to round-off; the module's split path passes the gradcheck.
#include <cstring>
#include <memory>

#include "nn/activation.h"
#include "nn/batchnorm.h"
#include "nn/sequential.h"
#include "tests/support/gradcheck.h"
#include "tests/support/image_reference.h"

using namespace noeira;
using namespace noeira::test::image_ref;
using noeira::test::check_module;
using noeira::test::ModuleRig;
using noeira::test::RigOptions;

namespace {

// R simulated ranks, each with B / R rows of x and dy; what run_bn returns, from rank 0
// (every rank's y and dx parts put back in batch order; dgamma and dbeta added over the
// ranks in rank order, rank 0's starting from run_bn's start values, as the gradient sync
// adds them). The running statistics must agree on every rank, bit for bit.
template <class T>
BnOut run_bn_ranks(CpuOps& ops, const NormShape& whole, int R, const Vec& x, const Vec& dy,
                   const Vec& gamma, const Vec& beta, const BatchNormHyper& h) {
  const NormShape s = norm_shape(whole.batch / R, whole.channels, whole.spatial);  // one rank's
  const size_t C = static_cast<size_t>(s.channels), part = static_cast<size_t>(s.elems());
  const int64_t count = s.per_channel() * R;
  BnOut o;
  o.y.resize(x.size()), o.dx.resize(x.size());
  std::vector<T> xs(x.size()), dys(x.size()), ys(x.size()), dxs(x.size());
  for (size_t i = 0; i < x.size(); ++i) store_f32(xs[i], x[i]), store_f32(dys[i], dy[i]);
  const auto v = [&](std::vector<T>& a, int r) {
    return View(a.data() + static_cast<size_t>(r) * part, static_cast<int64_t>(part));
  };
  // Per rank: saved statistics, running statistics (run_bn's start), gradients.
  std::vector<Vec> mean(R, Vec(C)), invstd(R, Vec(C)), rmean(R), rvar(R), dgamma(R), dbeta(R);
  for (int r = 0; r < R; ++r) {
    rmean[r] = random_vec(s.channels, 91), rvar[r] = random_vec(s.channels, 92, 0.5f, 2.0f);
    dgamma[r] = r == 0 ? random_vec(s.channels, 93) : Vec(C, 0.0f);
    dbeta[r] = r == 0 ? random_vec(s.channels, 94) : Vec(C, 0.0f);
  }
  std::vector<double> all(static_cast<size_t>(R) * 2 * C), total(2 * C);  // (R, C, 2), (C, 2)
  const auto local = [&](int r) { return all.data() + static_cast<size_t>(r) * 2 * C; };
  for (int r = 0; r < R; ++r) ops.batchnorm_stats(s, v(xs, r), local(r), nullptr);
  ops.sum_over_ranks(all.data(), R, static_cast<int64_t>(2 * C), total.data());
  for (int r = 0; r < R; ++r)
    ops.batchnorm_forward_from_stats(s, v(xs, r), total.data(), count, gamma.data(), beta.data(), h,
                                     v(ys, r), {}, mean[r].data(), invstd[r].data(),
                                     rmean[r].data(), rvar[r].data(), nullptr);
  for (int r = 0; r < R; ++r)
    ops.batchnorm_backward_stats(s, v(dys, r), v(xs, r), mean[r].data(), invstd[r].data(),
                                 local(r), nullptr);
  ops.sum_over_ranks(all.data(), R, static_cast<int64_t>(2 * C), total.data());
  for (int r = 0; r < R; ++r)
    ops.batchnorm_backward_from_stats(s, v(dys, r), v(xs, r), gamma.data(), mean[r].data(),
                                      invstd[r].data(), local(r), total.data(), count, v(dxs, r),
                                      dgamma[r].data(), dbeta[r].data(), nullptr);
  for (int r = 1; r < R; ++r) {
    CHECK(same_bits(mean[r], mean[0]));
    CHECK(same_bits(invstd[r], invstd[0]));
    CHECK(same_bits(rmean[r], rmean[0]));
    CHECK(same_bits(rvar[r], rvar[0]));
    for (size_t c = 0; c < C; ++c) dgamma[0][c] += dgamma[r][c], dbeta[0][c] += dbeta[r][c];
  }
  o.mean = mean[0], o.invstd = invstd[0], o.rmean = rmean[0], o.rvar = rvar[0];
  o.dgamma = dgamma[0], o.dbeta = dbeta[0];
  for (size_t i = 0; i < x.size(); ++i) o.y[i] = load_f32(ys[i]), o.dx[i] = load_f32(dxs[i]);
  return o;
}

// max |a - b| / max |b|.
double rel_dev(const Vec& a, const Vec& b) {
  double d = 0.0, m = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, std::abs(static_cast<double>(a[i]) - b[i]));
    m = std::max(m, std::abs(static_cast<double>(b[i])));
  }
  return m > 0.0 ? d / m : d;
}

// One rank, or an identity: the split path with nothing to add.
struct OneRank final : CrossRankSum {
  int ranks() const override { return 1; }
  void sum(const double* in, double* out, int64_t n) override {
    if (in != out) std::memmove(out, in, static_cast<size_t>(n) * sizeof(double));
  }
};

}  // namespace

TEST_CASE("batchnorm split ops over one rank are the fused ops bit for bit (fp32, bf16; 1 "
          "and 2 threads)", "[image-ops][syncbn]") {
  BatchNormHyper h;
  h.eps = 1e-3f, h.momentum = 0.2f;
  for (const int threads : {1, 2}) {
    CpuOps ops(threads);
    for (const NormShape& s : {norm_shape(3, 5, 42), norm_shape(7, 4, 1), norm_shape(1, 2, 1)}) {
      INFO(threads << " threads, B=" << s.batch << " C=" << s.channels << " S=" << s.spatial);
      const Vec x = random_vec(s.elems(), 61, -1.0f, 3.0f), dy = random_vec(s.elems(), 62);
      const Vec gamma = random_vec(s.channels, 63, 0.5f, 1.5f), beta = random_vec(s.channels, 64);
      for (int bf16 = 0; bf16 < 2; ++bf16) {
        const BnOut a = bf16 ? run_bn<bf16_t>(ops, s, x, dy, gamma, beta, h)
                             : run_bn<float>(ops, s, x, dy, gamma, beta, h);
        const BnOut b = bf16 ? run_bn_ranks<bf16_t>(ops, s, 1, x, dy, gamma, beta, h)
                             : run_bn_ranks<float>(ops, s, 1, x, dy, gamma, beta, h);
        for (auto m : {&BnOut::y, &BnOut::mean, &BnOut::invstd, &BnOut::rmean, &BnOut::rvar,
                       &BnOut::dx, &BnOut::dgamma, &BnOut::dbeta})
          CHECK(same_bits(b.*m, a.*m));
      }
    }
  }
}

TEST_CASE("batchnorm split ops over 2 and 4 simulated ranks are the fused ops on the whole "
          "batch to round-off", "[image-ops][syncbn]") {
  CpuOps ops(2);
  BatchNormHyper h;
  h.eps = 1e-3f, h.momentum = 0.2f;
  for (const NormShape& s : {norm_shape(8, 5, 42), norm_shape(4, 3, 64)}) {
    const Vec x = random_vec(s.elems(), 71, -1.0f, 3.0f), dy = random_vec(s.elems(), 72);
    const Vec gamma = random_vec(s.channels, 73, 0.5f, 1.5f), beta = random_vec(s.channels, 74);
    const BnOut one = run_bn<float>(ops, s, x, dy, gamma, beta, h);
    for (const int R : {2, 4}) {
      INFO(R << " ranks of B=" << s.batch / R << " C=" << s.channels << " S=" << s.spatial);
      const BnOut o = run_bn_ranks<float>(ops, s, R, x, dy, gamma, beta, h);
      CHECK(rel_dev(o.y, one.y) < 1e-6);
      CHECK(rel_dev(o.mean, one.mean) < 1e-6);
      CHECK(rel_dev(o.invstd, one.invstd) < 1e-6);
      CHECK(rel_dev(o.rmean, one.rmean) < 1e-6);
      CHECK(rel_dev(o.rvar, one.rvar) < 1e-6);  // the unbiased variance with the total count
      CHECK(rel_dev(o.dx, one.dx) < 1e-5);
      CHECK(rel_dev(o.dgamma, one.dgamma) < 1e-5);
      CHECK(rel_dev(o.dbeta, one.dbeta) < 1e-5);
    }
    // Unsynchronised halves (each normalising by its own half) are visibly not the whole.
    const BnOut half = run_bn<float>(ops, norm_shape(s.batch / 2, s.channels, s.spatial),
                                     Vec(x.begin(), x.begin() + x.size() / 2),
                                     Vec(dy.begin(), dy.begin() + dy.size() / 2), gamma, beta, h);
    CHECK(rel_dev(half.mean, one.mean) > 1e-3);
  }
}

TEST_CASE("sum_over_ranks adds the ranks in rank order", "[image-ops][syncbn]") {
  CpuOps ops(2);
  // (3 ranks, 2): rank order decides 1e17 + 1 - 1e17 (0) against 1e17 - 1e17 + 1 (1).
  const std::vector<double> all = {1e17, 1.0, 1.0, -1e17, -1e17, 1e17};
  std::vector<double> out(2, -7.0);
  ops.sum_over_ranks(all.data(), 3, 2, out.data());
  CHECK(out[0] == (1e17 + 1.0) + -1e17);
  CHECK(out[1] == (1.0 + -1e17) + 1e17);
  std::vector<double> copy(6);  // one rank: a copy
  ops.sum_over_ranks(all.data(), 1, 6, copy.data());
  CHECK(copy == all);
}

TEST_CASE("BatchNorm2d's synchronised path over one rank: the fused path's bits, and its "
          "backward matches finite differences", "[gradcheck][syncbn]") {
  OneRank one;
  RigOptions synced;
  synced.cross_rank_sum = &one;
  ModuleRig a(std::make_unique<BatchNorm2d>(), Shape{3, 4, 4}, 3, 70);
  ModuleRig b(std::make_unique<BatchNorm2d>(), Shape{3, 4, 4}, 3, 70, synced);
  REQUIRE(b.context().cross_rank_sum() == &one);
  REQUIRE(a.context().cross_rank_sum() == nullptr);
  const std::vector<float> dxa = ModuleRig::to_f32(a.backward());
  const std::vector<float> dxb = ModuleRig::to_f32(b.backward());
  CHECK(same_bits(dxb, dxa));
  for (const std::string name : {"weight", "bias"}) {
    const int64_t C = 3;
    CHECK(same_bits(Vec(b.grad(b.param(name)), b.grad(b.param(name)) + C),
                    Vec(a.grad(a.param(name)), a.grad(a.param(name)) + C)));
  }
  for (const std::string name : {"running_mean", "running_var"})
    CHECK(same_bits(Vec(b.buffer(name), b.buffer(name) + 3),
                    Vec(a.buffer(name), a.buffer(name) + 3)));
  check_module(b, 24);
}

// A recipe's "batchnorm2d" then "relu" build one module (models/mlp.cpp): the two layers'
// bits, on one process (batchnorm_relu_backward) and synchronised (act_backward, then the
// split ops), and a backward that passes the gradcheck.
TEST_CASE("BatchNorm2d with a fused ReLU gives BatchNorm2d then ReLU bit for bit, one "
          "process and synchronised", "[gradcheck][syncbn]") {
  OneRank one;
  for (const bool sync : {false, true}) {
    INFO("synchronised " << sync);
    RigOptions opt;
    if (sync) opt.cross_rank_sum = &one;
    auto two_layers = std::make_unique<Sequential>();
    two_layers->add("bn", std::make_unique<BatchNorm2d>());
    two_layers->add("relu", std::make_unique<Activation>(Act::kReLU));
    auto fused = std::make_unique<BatchNorm2d>();
    fused->with_relu();
    CHECK(fused->kind() == "BatchNorm2d+ReLU");
    ModuleRig a(std::move(two_layers), Shape{3, 4, 5}, 3, 71, opt);
    ModuleRig b(std::move(fused), Shape{3, 4, 5}, 3, 71, opt);
    const std::vector<float> ya = ModuleRig::to_f32(a.forward());
    const std::vector<float> yb = ModuleRig::to_f32(b.forward());
    CHECK(same_bits(yb, ya));
    size_t zeros = 0;
    for (float v : yb) zeros += v == 0.0f;
    CHECK(zeros > yb.size() / 4);  // the mask matters
    CHECK(same_bits(ModuleRig::to_f32(b.backward()), ModuleRig::to_f32(a.backward())));
    for (size_t i = 0; i < 2; ++i) {  // weight, bias
      const ParamInfo& pa = a.params().all()[i];
      const ParamInfo& pb = b.params().all()[i];
      CHECK(same_bits(Vec(b.grad(pb), b.grad(pb) + 3), Vec(a.grad(pa), a.grad(pa) + 3)));
    }
    check_module(b, 24);
  }
}
