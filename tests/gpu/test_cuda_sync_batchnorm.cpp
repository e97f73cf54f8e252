// Synchronised BatchNorm over two "ranks" on one device: each half of a batch sums its own
// channel statistics, sum_over_ranks adds them in rank order, and each half's split pass
// with count = both halves' values gives what the fused op gives on the whole batch (on
// the CPU, to round-off); a rank with no rows writes zero sums and still updates its
// running statistics.
#include <catch2/catch.hpp>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include <deque>

#include "kernels/cpu/cpu_ops.h"
#include "tests/gpu/image_ops_rig.h"
using namespace noeira::test::image_gpu;
#endif

using namespace noeira;
using namespace noeira::test;

TEST_CASE("cuda: synchronised BatchNorm over two halves is the whole batch's BatchNorm",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  BatchNormHyper h;
  uint32_t seed = 900;
  for (const NormShape& whole : {NormShape{64, 16, 1024}, NormShape{32, 32, 256}, NormShape{128, 64, 64}}) {
    INFO("batchnorm " << whole.batch << "x" << whole.channels << "x" << whole.spatial);
    const NormShape half{whole.batch / 2, whole.channels, whole.spatial};
    const size_t n = static_cast<size_t>(whole.elems()), hn = n / 2, C = static_cast<size_t>(whole.channels);
    std::vector<float> x = random_floats(n, seed++, -1.0f, 3.0f), dy = random_floats(n, seed++);
    const std::vector<float> gamma = random_floats(C, seed++, 0.5f, 1.5f), beta = random_floats(C, seed++);
    // CPU reference: the fused ops on the whole batch.
    std::vector<float> y(n), dx(n), mean(C), invstd(C), rm(C, 0.0f), rv(C, 1.0f), dg(C, 0.0f), db(C, 0.0f);
    std::vector<float> cws(floats_for(cpu.batchnorm_workspace_bytes(whole)));
    cpu.batchnorm_forward_train(whole, host_view(x), gamma.data(), beta.data(), h, host_view(y), {}, mean.data(),
                                invstd.data(), rm.data(), rv.data(), cws.data());
    cpu.batchnorm_backward(whole, host_view(dy), host_view(x), gamma.data(), mean.data(), invstd.data(),
                           host_view(dx), dg.data(), db.data(), cws.data());
    // GPU: rank r holds rows r * B/2 ..; sums gathered rank-major, then added in rank order.
    DeviceArray<float> gx(gpu, x), gdy(gpu, dy), gy(gpu, n), gdx(gpu, n), gg(gpu, gamma), gb(gpu, beta);
    DeviceArray<double> gathered(gpu, 4 * C), total(gpu, 2 * C), grad_gathered(gpu, 4 * C), grad_total(gpu, 2 * C);
    std::deque<DeviceArray<float>> means, invstds, rms, rvs, dgs, dbs;  // not movable
    DeviceArray<float> ws(gpu, floats_for(gpu.ops->batchnorm_workspace_bytes(half)));
    const auto at = [&](auto& a, size_t r) { return View(a.get() + r * hn, static_cast<int64_t>(hn)); };
    for (size_t r = 0; r < 2; ++r) {
      means.emplace_back(gpu, C);
      invstds.emplace_back(gpu, C);
      rms.emplace_back(gpu, std::vector<float>(C, 0.0f));
      rvs.emplace_back(gpu, std::vector<float>(C, 1.0f));
      dgs.emplace_back(gpu, std::vector<float>(C, 0.0f));
      dbs.emplace_back(gpu, std::vector<float>(C, 0.0f));
      gpu.ops->batchnorm_stats(half, at(gx, r), gathered.get() + r * 2 * C, ws.get());
    }
    gpu.ops->sum_over_ranks(gathered.get(), 2, static_cast<int64_t>(2 * C), total.get());
    for (size_t r = 0; r < 2; ++r) {
      gpu.ops->batchnorm_forward_from_stats(half, at(gx, r), total.get(), whole.per_channel(), gg.get(), gb.get(),
                                            h, at(gy, r), {}, means[r].get(), invstds[r].get(), rms[r].get(),
                                            rvs[r].get(), ws.get());
      gpu.ops->batchnorm_backward_stats(half, at(gdy, r), at(gx, r), means[r].get(), invstds[r].get(),
                                        grad_gathered.get() + r * 2 * C, ws.get());
    }
    gpu.ops->sum_over_ranks(grad_gathered.get(), 2, static_cast<int64_t>(2 * C), grad_total.get());
    for (size_t r = 0; r < 2; ++r)
      gpu.ops->batchnorm_backward_from_stats(half, at(gdy, r), at(gx, r), gg.get(), means[r].get(),
                                             invstds[r].get(), grad_gathered.get() + r * 2 * C,
                                             grad_total.get(), whole.per_channel(), at(gdx, r), dgs[r].get(),
                                             dbs[r].get(), ws.get());
    CHECK(rel_error(gy.download(), y) < 1e-5);
    CHECK(rel_error(gdx.download(), dx) < 1e-4);
    for (size_t r = 0; r < 2; ++r) {
      CHECK(rel_error(means[r].download(), mean) < 1e-6);
      CHECK(rel_error(rms[r].download(), rm) < 1e-6);
      CHECK(rel_error(rvs[r].download(), rv) < 1e-6);
    }
    // The gradient sync adds the ranks' parameter gradients: their sum is the whole batch's.
    std::vector<float> dg_sum = dgs[0].download(), db_sum = dbs[0].download();
    const std::vector<float> dg1 = dgs[1].download(), db1 = dbs[1].download();
    for (size_t c = 0; c < C; ++c) {
      dg_sum[c] += dg1[c];
      db_sum[c] += db1[c];
    }
    CHECK(rel_error(dg_sum, dg) < 1e-5);
    CHECK(rel_error(db_sum, db) < 1e-5);
  }
  // A rank with no rows: zero sums, and the running statistics still move with the others'.
  const NormShape empty{0, 4, 16};
  DeviceArray<double> sums(gpu, std::vector<double>(8, 7.0));
  DeviceArray<float> ws(gpu, floats_for(gpu.ops->batchnorm_workspace_bytes(NormShape{1, 4, 16})));
  gpu.ops->batchnorm_stats(empty, ConstView(static_cast<const float*>(nullptr), 0), sums.get(), ws.get());
  CHECK(sums.download() == std::vector<double>(8, 0.0));
#endif
}
