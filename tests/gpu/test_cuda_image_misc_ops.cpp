// The CUDA pooling, BatchNorm, option-A shortcut, dropout, augmentation and SGD-schedule
// ops against the CPU reference (CpuOps) on random inputs: bit for bit where both backends
// compute every element in the same order, normwise close for BatchNorm's sums.
// Synchronised BatchNorm's split ops: the fused CUDA ops' bits over one rank.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include "tests/gpu/image_ops_rig.h"
using namespace noeira::test::image_gpu;
#endif

using namespace noeira;
using namespace noeira::test;

TEST_CASE("cuda: maxpool2d and avgpool2d equal the CPU bit for bit", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  uint32_t seed = 400;
  for (const PoolShape& s : pool_shapes()) {
    for (bool bf16 : {false, true}) {
      INFO("pool " << s.batch << "x" << s.channels << "x" << s.height << "x" << s.width << " k "
                   << s.kernel_h << " stride " << s.stride << " pad " << s.pad << " bf16 "
                   << bf16);
      const size_t nx = static_cast<size_t>(s.x_elems()), ny = static_cast<size_t>(s.y_elems());
      const std::vector<float> xf = pool_input(nx, seed++, !bf16);
      const std::vector<float> dyf = random_floats(ny, seed++);
      const auto run = [&](auto tag) {
        using T = typename decltype(tag)::type;
        std::vector<T> x = stored<T>(xf), dy = stored<T>(dyf);
        // CPU
        std::vector<T> y(ny), dx(nx), ay(ny), adx(nx);
        std::vector<int32_t> arg(ny);
        cpu.maxpool2d_forward(s, host_view(x), host_view(y), arg.data());
        cpu.maxpool2d_backward(s, host_view(dy), arg.data(), host_view(dx));
        cpu.avgpool2d_forward(s, host_view(x), host_view(ay));
        cpu.avgpool2d_backward(s, host_view(dy), host_view(adx));
        // GPU, twice
        for (int rep = 0; rep < 2; ++rep) {
          DeviceArray<T> gx(gpu, x), gdy(gpu, dy), gy(gpu, ny), gdx(gpu, nx), gay(gpu, ny),
              gadx(gpu, nx);
          DeviceArray<int32_t> garg(gpu, ny);
          gpu.ops->maxpool2d_forward(s, gx.view(), gy.view(), garg.get());
          gpu.ops->maxpool2d_backward(s, gdy.view(), garg.get(), gdx.view());
          gpu.ops->avgpool2d_forward(s, gx.view(), gay.view());
          gpu.ops->avgpool2d_backward(s, gdy.view(), gadx.view());
          CHECK(same_values(gy.download(), y));
          CHECK(garg.download() == arg);
          CHECK(same_values(gdx.download(), dx));
          CHECK(same_values(gay.download(), ay));
          CHECK(same_values(gadx.download(), adx));
        }
      };
      if (bf16)
        run(StorageTag<bf16_t>{});
      else
        run(StorageTag<float>{});
    }
  }
#endif
}

TEST_CASE("cuda: batchnorm training, eval and backward equal the CPU and repeat bit for bit",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  uint32_t seed = 500;
  BatchNormHyper h;
  h.momentum = 0.1f;
  h.eps = 1e-5f;
  for (const NormShape& s : norm_shapes()) {
    for (bool bf16 : {false, true}) {
      INFO("batchnorm " << s.batch << "x" << s.channels << "x" << s.spatial << " bf16 " << bf16);
      const size_t n = static_cast<size_t>(s.elems()), C = static_cast<size_t>(s.channels);
      const std::vector<float> xf = random_floats(n, seed++, -1.0f, 3.0f);  // mean != 0
      const std::vector<float> dyf = random_floats(n, seed++);
      const std::vector<float> gamma = random_floats(C, seed++, 0.5f, 1.5f);
      const std::vector<float> beta = random_floats(C, seed++);
      const std::vector<float> rm0 = random_floats(C, seed++), rv0 = random_floats(C, seed++, 0.5f, 2.0f);
      const std::vector<float> dg0 = random_floats(C, seed++), db0 = random_floats(C, seed++);
      const double out_tol = bf16 ? 1e-2 : 1e-5;  // bf16: y and dx rounded by each backend
      const auto run = [&](auto tag) {
        using T = typename decltype(tag)::type;
        std::vector<T> x = stored<T>(xf), dy = stored<T>(dyf);
        std::vector<T> y(n), ye(n), dx(n);
        std::vector<float> mean(C), invstd(C), rm = rm0, rv = rv0, dg = dg0, db = db0;
        cpu.batchnorm_forward_train(s, host_view(x), gamma.data(), beta.data(), h, host_view(y), {},
                                    mean.data(), invstd.data(), rm.data(), rv.data(), nullptr);
        cpu.batchnorm_forward_eval(s, host_view(x), gamma.data(), beta.data(), rm.data(),
                                   rv.data(), h, host_view(ye), {});
        cpu.batchnorm_backward(s, host_view(dy), host_view(x), gamma.data(), mean.data(),
                               invstd.data(), host_view(dx), dg.data(), db.data(), nullptr);
        std::vector<std::vector<float>> first;
        for (int rep = 0; rep < 2; ++rep) {
          DeviceArray<float> ws(gpu, floats_for(gpu.ops->batchnorm_workspace_bytes(s)));
          DeviceArray<T> gx(gpu, x), gdy(gpu, dy), gy(gpu, n), gye(gpu, n), gdx(gpu, n);
          DeviceArray<float> gg(gpu, gamma), gb(gpu, beta), gmean(gpu, C), ginv(gpu, C),
              grm(gpu, rm0), grv(gpu, rv0), gdg(gpu, dg0), gdb(gpu, db0);
          gpu.ops->batchnorm_forward_train(s, gx.view(), gg.get(), gb.get(), h, gy.view(), {},
                                           gmean.get(), ginv.get(), grm.get(), grv.get(),
                                           ws.get());
          gpu.ops->batchnorm_forward_eval(s, gx.view(), gg.get(), gb.get(), grm.get(), grv.get(),
                                          h, gye.view(), {});
          gpu.ops->batchnorm_backward(s, gdy.view(), gx.view(), gg.get(), gmean.get(), ginv.get(),
                                      gdx.view(), gdg.get(), gdb.get(), ws.get());
          std::vector<std::vector<float>> got = {
              to_f32(gy.download()), to_f32(gye.download()), to_f32(gdx.download()),
              gmean.download(),      ginv.download(),       grm.download(),
              grv.download(),        gdg.download(),        gdb.download()};
          CHECK(rel_error(got[0], to_f32(y)) < out_tol);
          CHECK(rel_error(got[1], to_f32(ye)) < out_tol);
          CHECK(rel_error(got[2], to_f32(dx)) < (bf16 ? 1e-2 : 1e-4));
          CHECK(rel_error(got[3], mean) < 1e-6);
          CHECK(rel_error(got[4], invstd) < 1e-6);
          CHECK(rel_error(got[5], rm) < 1e-6);
          CHECK(rel_error(got[6], rv) < 1e-6);
          CHECK(rel_error(got[7], dg) < 1e-5);
          CHECK(rel_error(got[8], db) < 1e-5);
          if (rep == 0)
            first = got;
          else
            for (size_t i = 0; i < got.size(); ++i) CHECK(same_bytes(got[i], first[i]));
        }
      };
      if (bf16)
        run(StorageTag<bf16_t>{});
      else
        run(StorageTag<float>{});
    }
  }
#endif
}

TEST_CASE("cuda: batchnorm's epilogue (residual, ReLU) has the separate add and act_forward's "
          "bits, and the CPU's epilogue within its BatchNorm tolerance", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  BatchNormHyper h;
  const NormShape s = norm_shape(4, 3, 37);
  const size_t n = static_cast<size_t>(s.elems()), C = static_cast<size_t>(s.channels);
  const std::vector<float> xf = random_floats(n, 610, -1.0f, 3.0f);
  std::vector<float> rf = random_floats(n, 611);
  // Residuals that make the sum a NaN, an infinity or a signed zero before the ReLU.
  const float specials[] = {std::nanf(""), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 0.0f, -0.0f};
  for (size_t k = 0; k < 5; ++k) rf[40 * k + 3] = specials[k];
  const std::vector<float> gamma = random_floats(C, 612, 0.5f, 1.5f), beta = random_floats(C, 613);
  const std::vector<float> rm0 = random_floats(C, 614), rv0 = random_floats(C, 615, 0.5f, 2.0f);
  for (bool bf16 : {false, true}) {
    const auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<T> x = stored<T>(xf), r = stored<T>(rf);
      for (bool residual : {false, true})
        for (Act act : {Act::kNone, Act::kReLU}) {
          INFO("bf16 " << bf16 << " residual " << residual << " relu " << (act == Act::kReLU));
          DeviceArray<float> ws(gpu, floats_for(gpu.ops->batchnorm_workspace_bytes(s)));
          DeviceArray<T> gx(gpu, x), gr(gpu, r), plain(gpu, n), sum(gpu, n), out(gpu, n),
              fused(gpu, n), eval_plain(gpu, n), eval_sum(gpu, n), eval_out(gpu, n),
              eval_fused(gpu, n);
          DeviceArray<float> gg(gpu, gamma), gb(gpu, beta), mean(gpu, C), inv(gpu, C),
              rm(gpu, rm0), rv(gpu, rv0), grm0(gpu, rm0), grv0(gpu, rv0);
          const BatchNormEpilogue epi{residual ? ConstView(gr.view()) : ConstView{}, act};
          // The separate ops (add and act_forward each stored), then the fused pass.
          const auto separately = [&](DeviceArray<T>& y, DeviceArray<T>& s1, DeviceArray<T>& s2) {
            DeviceArray<T>* at = &y;
            if (residual) {
              gpu.ops->add(at->view(), gr.view(), s1.view());
              at = &s1;
            }
            if (act != Act::kNone) {
              gpu.ops->act_forward(at->view(), s2.view(), act);
              at = &s2;
            }
            return to_f32(at->download());
          };
          gpu.ops->batchnorm_forward_train(s, gx.view(), gg.get(), gb.get(), h, plain.view(), {},
                                           mean.get(), inv.get(), rm.get(), rv.get(), ws.get());
          const std::vector<float> want = separately(plain, sum, out);
          gpu.ops->batchnorm_forward_train(s, gx.view(), gg.get(), gb.get(), h, fused.view(), epi,
                                           mean.get(), inv.get(), rm.get(), rv.get(), ws.get());
          const std::vector<float> got = to_f32(fused.download());
          CHECK(same_bytes(got, want));
          gpu.ops->batchnorm_forward_eval(s, gx.view(), gg.get(), gb.get(), grm0.get(),
                                          grv0.get(), h, eval_plain.view(), {});
          const std::vector<float> eval_want = separately(eval_plain, eval_sum, eval_out);
          gpu.ops->batchnorm_forward_eval(s, gx.view(), gg.get(), gb.get(), grm0.get(),
                                          grv0.get(), h, eval_fused.view(), epi);
          CHECK(same_bytes(to_f32(eval_fused.download()), eval_want));
          // Synchronised BatchNorm's split forward over one rank: the fused pass's bits.
          DeviceArray<double> sums(gpu, 2 * C);
          DeviceArray<T> split(gpu, n);
          gpu.ops->batchnorm_stats(s, gx.view(), sums.get(), ws.get());
          gpu.ops->batchnorm_forward_from_stats(s, gx.view(), sums.get(), s.per_channel(),
                                                gg.get(), gb.get(), h, split.view(), epi,
                                                mean.get(), inv.get(), rm.get(), rv.get(),
                                                ws.get());
          CHECK(same_bytes(to_f32(split.download()), got));
          // The CPU's fused pass: close (the channel sums' order differs).
          std::vector<T> y(n);
          std::vector<float> cm(C), ci(C), crm = rm0, crv = rv0;
          const BatchNormEpilogue cpu_epi{residual ? host_view(r) : ConstView{}, act};
          cpu.batchnorm_forward_train(s, host_view(x), gamma.data(), beta.data(), h, host_view(y),
                                      cpu_epi, cm.data(), ci.data(), crm.data(), crv.data(),
                                      nullptr);
          // The special residuals' elements alike; the finite ones within the tolerance.
          const std::vector<float> want_cpu = to_f32(y);
          std::vector<float> a, b;
          for (size_t i = 0; i < n; ++i) {
            if (std::isfinite(got[i]) && std::isfinite(want_cpu[i])) {
              a.push_back(got[i]);
              b.push_back(want_cpu[i]);
            } else {
              CHECK((std::isnan(got[i]) ? std::isnan(want_cpu[i]) : got[i] == want_cpu[i]));
            }
          }
          CHECK(rel_error(a, b) < (bf16 ? 1e-2 : 1e-5));
        }
    };
    if (bf16)
      run(StorageTag<bf16_t>{});
    else
      run(StorageTag<float>{});
  }
#endif
}

TEST_CASE("cuda: batchnorm_backward without dx accumulates only dgamma and dbeta", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  const NormShape s = norm_shape(4, 3, 25);
  const size_t n = static_cast<size_t>(s.elems()), C = 3;
  DeviceArray<float> ws(gpu, floats_for(gpu.ops->batchnorm_workspace_bytes(s)));
  DeviceArray<float> x(gpu, random_floats(n, 1)), dy(gpu, random_floats(n, 2)),
      g(gpu, std::vector<float>(C, 1.0f)), mean(gpu, std::vector<float>(C, 0.1f)),
      inv(gpu, std::vector<float>(C, 2.0f)), dg(gpu, C), db(gpu, C);
  gpu.ops->batchnorm_backward(s, dy.view(), x.view(), g.get(), mean.get(), inv.get(), View{},
                              dg.get(), db.get(), ws.get());
  const std::vector<float> dyh = dy.download();
  std::vector<double> sums(C, 0.0);
  for (size_t i = 0; i < n; ++i) sums[(i / 25) % C] += dyh[i];
  const std::vector<float> got = db.download();
  for (size_t c = 0; c < C; ++c) CHECK(std::abs(got[c] - sums[c]) < 1e-5);
#endif
}

TEST_CASE("cuda: batchnorm_relu_backward has the bits of act_backward then batchnorm_backward "
          "and is close to the CPU's, fp32 and bf16, with and without dx", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  uint32_t seed = 710;
  BatchNormHyper h;
  const BatchNormEpilogue relu{ConstView{}, Act::kReLU};
  for (const NormShape& s : norm_shapes()) {
    const size_t n = static_cast<size_t>(s.elems()), C = static_cast<size_t>(s.channels);
    const std::vector<float> xf = random_floats(n, seed++, -2.0f, 2.0f);
    std::vector<float> dyf = random_floats(n, seed++);
    // Infinities: inf * 0 is NaN where the mask is 0, in both paths.
    for (size_t k = 0; k < std::min<size_t>(n, 4); ++k) dyf[k * n / 4] = k % 2 ? -INFINITY : INFINITY;
    const std::vector<float> gamma = random_floats(C, seed++, -1.5f, 1.5f);
    const std::vector<float> beta = random_floats(C, seed++);
    const auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      const std::vector<T> x = stored<T>(xf), dy = stored<T>(dyf);
      for (bool with_dx : {true, false}) {
        INFO("norm " << s.batch << "x" << s.channels << "x" << s.spatial << " " << type_name<T>()
                     << " dx " << with_dx);
        DeviceArray<float> ws(gpu, floats_for(gpu.ops->batchnorm_workspace_bytes(s)));
        DeviceArray<T> gx(gpu, x), gdy(gpu, dy), gy(gpu, n), gdrelu(gpu, n), gdx_ref(gpu, n),
            gdx(gpu, n);
        DeviceArray<float> gg(gpu, gamma), gb(gpu, beta), gmean(gpu, C), ginv(gpu, C),
            grm(gpu, std::vector<float>(C, 0.0f)), grv(gpu, std::vector<float>(C, 1.0f)),
            gdg_ref(gpu, std::vector<float>(C, 0.0f)), gdb_ref(gpu, std::vector<float>(C, 0.0f)),
            gdg(gpu, std::vector<float>(C, 0.0f)), gdb(gpu, std::vector<float>(C, 0.0f));
        gpu.ops->batchnorm_forward_train(s, gx.view(), gg.get(), gb.get(), h, gy.view(), relu,
                                         gmean.get(), ginv.get(), grm.get(), grv.get(), ws.get());
        gpu.ops->act_backward(gdy.view(), ConstView{}, gy.view(), gdrelu.view(), Act::kReLU);
        gpu.ops->batchnorm_backward(s, gdrelu.view(), gx.view(), gg.get(), gmean.get(),
                                    ginv.get(), with_dx ? gdx_ref.view() : View{},
                                    gdg_ref.get(), gdb_ref.get(), ws.get());
        gpu.ops->batchnorm_relu_backward(s, gdy.view(), gy.view(), gx.view(), gg.get(), gb.get(),
                                         gmean.get(), ginv.get(), with_dx ? gdx.view() : View{},
                                         gdg.get(), gdb.get(), ws.get());
        if (with_dx) CHECK(same_values(gdx.download(), gdx_ref.download()));
        CHECK(same_values(gdg.download(), gdg_ref.download()));
        CHECK(same_values(gdb.download(), gdb_ref.download()));
      }
    };
    run(StorageTag<float>{});
    run(StorageTag<bf16_t>{});
    // Close to the CPU's (which takes the mask from x), fp32 and finite.
    const std::vector<float> dyc = random_floats(n, seed++);
    std::vector<float> y(n), dx(n), mean(C), inv(C), rm(C, 0.0f), rv(C, 1.0f), dg(C, 0.0f),
        db(C, 0.0f);
    cpu.batchnorm_forward_train(s, view_of(xf), gamma.data(), beta.data(), h, view_of(y), relu,
                                mean.data(), inv.data(), rm.data(), rv.data(), nullptr);
    cpu.batchnorm_relu_backward(s, view_of(dyc), view_of(y), view_of(xf), gamma.data(),
                                beta.data(), mean.data(), inv.data(), view_of(dx), dg.data(),
                                db.data(), nullptr);
    DeviceArray<float> ws(gpu, floats_for(gpu.ops->batchnorm_workspace_bytes(s)));
    DeviceArray<float> gx(gpu, xf), gdy(gpu, dyc), gy(gpu, n), gdx(gpu, n), gg(gpu, gamma),
        gb(gpu, beta), gmean(gpu, C), ginv(gpu, C), grm(gpu, std::vector<float>(C, 0.0f)),
        grv(gpu, std::vector<float>(C, 1.0f)), gdg(gpu, std::vector<float>(C, 0.0f)),
        gdb(gpu, std::vector<float>(C, 0.0f));
    gpu.ops->batchnorm_forward_train(s, gx.view(), gg.get(), gb.get(), h, gy.view(), relu,
                                     gmean.get(), ginv.get(), grm.get(), grv.get(), ws.get());
    gpu.ops->batchnorm_relu_backward(s, gdy.view(), gy.view(), gx.view(), gg.get(), gb.get(),
                                     gmean.get(), ginv.get(), gdx.view(), gdg.get(), gdb.get(),
                                     ws.get());
    CHECK(rel_error(gdx.download(), dx) < 1e-4);
    CHECK(rel_error(gdg.download(), dg) < 1e-5);
    CHECK(rel_error(gdb.download(), db) < 1e-5);
  }
#endif
}

TEST_CASE("cuda: batchnorm over more channels than a grid's y dimension takes equals the CPU",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  // 70001 channels > 65535 = gridDim.y's limit: each channel-sum block then loops over
  // channels y, y + 65535 (channel_sum.cuh).
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  const NormShape s = norm_shape(2, 70001, 3);
  const size_t n = static_cast<size_t>(s.elems()), C = static_cast<size_t>(s.channels);
  const std::vector<float> x = random_floats(n, 700, -1.0f, 3.0f), dy = random_floats(n, 701);
  const std::vector<float> gamma = random_floats(C, 702, 0.5f, 1.5f), beta = random_floats(C, 703);
  BatchNormHyper h;
  std::vector<float> y(n), dx(n), mean(C), inv(C), rm(C, 0.0f), rv(C, 1.0f), dg(C, 0.0f),
      db(C, 0.0f);
  cpu.batchnorm_forward_train(s, view_of(x), gamma.data(), beta.data(), h, view_of(y), {},
                              mean.data(), inv.data(), rm.data(), rv.data(), nullptr);
  cpu.batchnorm_backward(s, view_of(dy), view_of(x), gamma.data(), mean.data(), inv.data(),
                         view_of(dx), dg.data(), db.data(), nullptr);
  DeviceArray<float> ws(gpu, floats_for(gpu.ops->batchnorm_workspace_bytes(s)));
  DeviceArray<float> gx(gpu, x), gdy(gpu, dy), gy(gpu, n), gdx(gpu, n), gg(gpu, gamma),
      gb(gpu, beta), gmean(gpu, C), ginv(gpu, C), grm(gpu, std::vector<float>(C, 0.0f)),
      grv(gpu, std::vector<float>(C, 1.0f)), gdg(gpu, C), gdb(gpu, C);
  gpu.ops->batchnorm_forward_train(s, gx.view(), gg.get(), gb.get(), h, gy.view(), {}, gmean.get(),
                                   ginv.get(), grm.get(), grv.get(), ws.get());
  gpu.ops->batchnorm_backward(s, gdy.view(), gx.view(), gg.get(), gmean.get(), ginv.get(),
                              gdx.view(), gdg.get(), gdb.get(), ws.get());
  CHECK(rel_error(gy.download(), y) < 1e-5);
  CHECK(rel_error(gmean.download(), mean) < 1e-6);
  CHECK(rel_error(ginv.download(), inv) < 1e-6);
  CHECK(rel_error(grm.download(), rm) < 1e-6);
  CHECK(rel_error(grv.download(), rv) < 1e-6);
  CHECK(rel_error(gdx.download(), dx) < 1e-4);
  CHECK(rel_error(gdg.download(), dg) < 1e-5);
  CHECK(rel_error(gdb.download(), db) < 1e-5);
#endif
}

TEST_CASE("cuda: shortcut, dropout and augment_crop_flip equal the CPU bit for bit", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  uint32_t seed = 600;
  SECTION("shortcut") {
    for (const ShortcutShape& s :
         {shortcut_shape(10, 16, 32, 32, 32, 2), shortcut_shape(2, 16, 9, 9, 16, 1),
          shortcut_shape(3, 3, 7, 5, 8, 2), shortcut_shape(2, 4, 5, 6, 9, 3)}) {
      INFO("shortcut " << s.in_channels << " -> " << s.out_channels << " " << s.height << "x"
                       << s.width << " stride " << s.stride);
      const std::vector<float> x = random_floats(static_cast<size_t>(s.x_elems()), seed++);
      const std::vector<float> dy = random_floats(static_cast<size_t>(s.y_elems()), seed++);
      std::vector<float> y(dy.size()), dx(x.size());
      cpu.shortcut_forward(s, view_of(x), view_of(y));
      cpu.shortcut_backward(s, view_of(dy), view_of(dx));
      DeviceArray<float> gx(gpu, x), gdy(gpu, dy), gy(gpu, y.size()), gdx(gpu, dx.size());
      gpu.ops->shortcut_forward(s, gx.view(), gy.view());
      gpu.ops->shortcut_backward(s, gdy.view(), gdx.view());
      CHECK(same_bytes(gy.download(), y));
      CHECK(same_bytes(gdx.download(), dx));
      // bf16
      DeviceArray<bf16_t> bx(gpu, to_bf16(x)), bdy(gpu, to_bf16(dy)), by(gpu, y.size()),
          bdx(gpu, dx.size());
      gpu.ops->shortcut_forward(s, bx.view(), by.view());
      gpu.ops->shortcut_backward(s, bdy.view(), bdx.view());
      CHECK(by.download() == to_bf16(y));  // copies and zeros: exact
      CHECK(bdx.download() == to_bf16(dx));
    }
  }
  SECTION("dropout") {
    for (int64_t n : {int64_t{1}, int64_t{1003}, int64_t{40000}}) {
      for (float p : {0.0f, 0.1f, 0.5f}) {
        INFO("dropout n " << n << " p " << p);
        std::vector<float> x = random_floats(static_cast<size_t>(n), seed++);
        if (n > 10) x[3] = -0.0f, x[7] = std::numeric_limits<float>::infinity();
        StepCounters c_cpu{5, 2};
        DeviceArray<StepCounters> c_gpu(gpu, std::vector<StepCounters>{c_cpu});
        std::vector<float> y(x.size());
        cpu.dropout(view_of(x), view_of(y), p, 42, 3, &c_cpu);
        DeviceArray<float> gx(gpu, x), gy(gpu, x.size());
        gpu.ops->dropout(gx.view(), gy.view(), p, 42, 3, c_gpu.get());
        CHECK(same_values(gy.download(), y));  // a dropped inf is NaN on both
        DeviceArray<bf16_t> bx(gpu, to_bf16(x)), by(gpu, x.size());
        std::vector<bf16_t> bxh = to_bf16(x), byh(x.size());
        cpu.dropout(view_of(bxh), view_of(byh), p, 42, 3, &c_cpu);
        gpu.ops->dropout(bx.view(), by.view(), p, 42, 3, c_gpu.get());
        CHECK(same_values(by.download(), byh));
        // The next step draws another mask, read from the device counter.
        if (p > 0.0f && n > 100) {
          gpu.ops->advance(c_gpu.get());
          gpu.ops->dropout(gx.view(), gy.view(), p, 42, 3, c_gpu.get());
          CHECK_FALSE(same_bytes(gy.download(), y));
        }
      }
    }
  }
  SECTION("augment_crop_flip") {
    AugmentSpec spec;
    spec.count = 37, spec.channels = 3, spec.height = 32, spec.width = 32, spec.pad = 4;
    spec.flip = true;
    spec.fill[0] = -1.5f, spec.fill[1] = 0.25f, spec.fill[2] = 2.0f;
    const size_t n = static_cast<size_t>(spec.count * spec.channels * spec.height * spec.width);
    const std::vector<float> src = random_floats(n, seed++);
    for (uint32_t epoch : {0u, 1u, 7u}) {
      for (bool flip : {true, false}) {
        spec.flip = flip;
        std::vector<float> dst(n);
        cpu.augment_crop_flip(spec, src.data(), dst.data(), 99, epoch);
        DeviceArray<float> gs(gpu, src), gd(gpu, n);
        gpu.ops->augment_crop_flip(spec, gs.get(), gd.get(), 99, epoch);
        CHECK(same_bytes(gd.download(), dst));
        CHECK(same_bytes(gs.download(), src));  // never modified
      }
    }
  }
#endif
}

TEST_CASE("cuda: sgd follows its schedule and Nesterov from the device counter like the CPU",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  const int64_t n = 1027;
  SgdHyper h;
  h.lr = 0.1;
  h.momentum = 0.9;
  h.weight_decay = 5e-4;
  h.nesterov = true;
  h.schedule.kind = ScheduleKind::kMultiStep;
  h.schedule.warmup_steps = 2;
  h.schedule.milestones[0] = 1;
  h.schedule.milestones[1] = 3;
  h.schedule.n_milestones = 2;
  std::vector<float> p = random_floats(static_cast<size_t>(n), 7), buf(static_cast<size_t>(n));
  DeviceArray<float> gp(gpu, p), gbuf(gpu, buf), gg(gpu, static_cast<size_t>(n));
  StepCounters c{0, 0};
  DeviceArray<StepCounters> gc(gpu, std::vector<StepCounters>{c});
  for (int step = 0; step < 7; ++step) {
    const std::vector<float> g = random_floats(static_cast<size_t>(n), 100 + step);
    gg.upload(g);
    cpu.sgd(p.data(), g.data(), buf.data(), n, h, &c);
    gpu.ops->sgd(gp.get(), gg.get(), gbuf.get(), n, h, gc.get());
    cpu.advance(&c);
    gpu.ops->advance(gc.get());
  }
  CHECK(max_abs_diff(gp.download(), p) <= 1e-6);
  CHECK(max_abs_diff(gbuf.download(), buf) <= 1e-6);
#endif
}

TEST_CASE("cuda: sgd on buffers off 16-byte alignment (the scalar path) equals the CPU",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  // Element 1 onwards of each buffer: 4-byte aligned only, so sgd_kernel takes its scalar
  // loop (launch_sgd's vec4 needs all three pointers 16-byte aligned); element 0 is left
  // alone by both backends.
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  const int64_t n = 1027;
  const size_t m = static_cast<size_t>(n + 1);
  SgdHyper h;
  h.lr = 0.05;
  h.momentum = 0.9;
  h.weight_decay = 1e-4;
  h.schedule.kind = ScheduleKind::kCosine;
  h.schedule.cosine_steps = 5;
  std::vector<float> p = random_floats(m, 11), buf(m, 0.0f);
  DeviceArray<float> gp(gpu, p), gbuf(gpu, buf), gg(gpu, m);
  StepCounters c{0, 0};
  DeviceArray<StepCounters> gc(gpu, std::vector<StepCounters>{c});
  for (int step = 0; step < 6; ++step) {
    const std::vector<float> g = random_floats(m, 200 + step);
    gg.upload(g);
    cpu.sgd(p.data() + 1, g.data() + 1, buf.data() + 1, n, h, &c);
    gpu.ops->sgd(gp.get() + 1, gg.get() + 1, gbuf.get() + 1, n, h, gc.get());
    cpu.advance(&c);
    gpu.ops->advance(gc.get());
  }
  CHECK(max_abs_diff(gp.download(), p) <= 1e-6);
  CHECK(max_abs_diff(gbuf.download(), buf) <= 1e-6);
#endif
}

// Synchronised BatchNorm's split ops (kernels/op_list.inc): over one rank (the stats as
// written, count = the local values) the CUDA split pass gives the CUDA fused pass's bits,
// and it is close to the CPU's split pass; sum_over_ranks equals the CPU bit for bit.
TEST_CASE("cuda: batchnorm split ops (synchronised BatchNorm) over one rank are the fused "
          "ops bit for bit and match the CPU; sum_over_ranks equals the CPU",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  uint32_t seed = 700;
  BatchNormHyper h;
  for (const NormShape& s : norm_shapes()) {
    for (bool bf16 : {false, true}) {
      INFO("batchnorm " << s.batch << "x" << s.channels << "x" << s.spatial << " bf16 " << bf16);
      const size_t n = static_cast<size_t>(s.elems()), C = static_cast<size_t>(s.channels);
      const std::vector<float> xf = random_floats(n, seed++, -1.0f, 3.0f);
      const std::vector<float> dyf = random_floats(n, seed++);
      const std::vector<float> gamma = random_floats(C, seed++, 0.5f, 1.5f);
      const std::vector<float> beta = random_floats(C, seed++);
      const std::vector<float> rm0 = random_floats(C, seed++);
      const std::vector<float> rv0 = random_floats(C, seed++, 0.5f, 2.0f);
      const std::vector<float> dg0 = random_floats(C, seed++), db0 = random_floats(C, seed++);
      const auto run = [&](auto tag) {
        using T = typename decltype(tag)::type;
        std::vector<T> x = stored<T>(xf), dy = stored<T>(dyf);
        // CPU split pass (the CPU's own fused bits are checked in tests/unit).
        std::vector<T> y(n), dx(n);
        std::vector<double> sums(2 * C), grad_sums(2 * C);
        std::vector<float> mean(C), invstd(C), rm = rm0, rv = rv0, dg = dg0, db = db0;
        cpu.batchnorm_stats(s, host_view(x), sums.data(), nullptr);
        cpu.batchnorm_forward_from_stats(s, host_view(x), sums.data(), s.per_channel(),
                                         gamma.data(), beta.data(), h, host_view(y), {},
                                         mean.data(), invstd.data(), rm.data(), rv.data(),
                                         nullptr);
        cpu.batchnorm_backward_stats(s, host_view(dy), host_view(x), mean.data(), invstd.data(),
                                     grad_sums.data(), nullptr);
        cpu.batchnorm_backward_from_stats(s, host_view(dy), host_view(x), gamma.data(),
                                          mean.data(), invstd.data(), grad_sums.data(),
                                          grad_sums.data(), s.per_channel(), host_view(dx),
                                          dg.data(), db.data(), nullptr);
        // GPU: fused, then split, from the same start.
        std::vector<std::vector<float>> pass[2];
        for (int split = 0; split < 2; ++split) {
          DeviceArray<float> ws(gpu, floats_for(gpu.ops->batchnorm_workspace_bytes(s)));
          DeviceArray<T> gx(gpu, x), gdy(gpu, dy), gy(gpu, n), gdx(gpu, n);
          DeviceArray<float> gg(gpu, gamma), gb(gpu, beta), gmean(gpu, C), ginv(gpu, C),
              grm(gpu, rm0), grv(gpu, rv0), gdg(gpu, dg0), gdb(gpu, db0);
          DeviceArray<double> dsums(gpu, 2 * C), dgrad_sums(gpu, 2 * C);
          if (split) {
            gpu.ops->batchnorm_stats(s, gx.view(), dsums.get(), ws.get());
            gpu.ops->batchnorm_forward_from_stats(s, gx.view(), dsums.get(), s.per_channel(),
                                                  gg.get(), gb.get(), h, gy.view(), {}, gmean.get(),
                                                  ginv.get(), grm.get(), grv.get(), ws.get());
            gpu.ops->batchnorm_backward_stats(s, gdy.view(), gx.view(), gmean.get(), ginv.get(),
                                              dgrad_sums.get(), ws.get());
            gpu.ops->batchnorm_backward_from_stats(s, gdy.view(), gx.view(), gg.get(),
                                                   gmean.get(), ginv.get(), dgrad_sums.get(),
                                                   dgrad_sums.get(), s.per_channel(), gdx.view(),
                                                   gdg.get(), gdb.get(), ws.get());
          } else {
            gpu.ops->batchnorm_forward_train(s, gx.view(), gg.get(), gb.get(), h, gy.view(), {},
                                             gmean.get(), ginv.get(), grm.get(), grv.get(),
                                             ws.get());
            gpu.ops->batchnorm_backward(s, gdy.view(), gx.view(), gg.get(), gmean.get(),
                                        ginv.get(), gdx.view(), gdg.get(), gdb.get(), ws.get());
          }
          pass[split] = {to_f32(gy.download()), to_f32(gdx.download()), gmean.download(),
                         ginv.download(),       grm.download(),         grv.download(),
                         gdg.download(),        gdb.download()};
          if (split) {
            const std::vector<double> gs = dsums.download();
            for (size_t i = 0; i < gs.size(); ++i)
              CHECK(gs[i] == Approx(sums[i]).epsilon(1e-9).margin(1e-9));
          }
        }
        for (size_t i = 0; i < pass[0].size(); ++i) CHECK(same_bytes(pass[1][i], pass[0][i]));
        const std::vector<std::vector<float>>& got = pass[1];
        CHECK(rel_error(got[0], to_f32(y)) < (bf16 ? 1e-2 : 1e-5));
        CHECK(rel_error(got[1], to_f32(dx)) < (bf16 ? 1e-2 : 1e-4));
        CHECK(rel_error(got[2], mean) < 1e-6);
        CHECK(rel_error(got[3], invstd) < 1e-6);
        CHECK(rel_error(got[4], rm) < 1e-6);
        CHECK(rel_error(got[5], rv) < 1e-6);
        CHECK(rel_error(got[6], dg) < 1e-5);
        CHECK(rel_error(got[7], db) < 1e-5);
      };
      if (bf16)
        run(StorageTag<bf16_t>{});
      else
        run(StorageTag<float>{});
    }
  }
  // Rank order matters in double: 1e17 + 1 - 1e17 is 0 from rank 0 on, 1 otherwise.
  const std::vector<double> all = {1e17, 3.0, 0.5, 1.0, -1e17, 0.25, -1e17, 2.0, 0.125};
  std::vector<double> want(3);
  cpu.sum_over_ranks(all.data(), 3, 3, want.data());
  DeviceArray<double> gall(gpu, all), gout(gpu, 3);
  gpu.ops->sum_over_ranks(gall.get(), 3, 3, gout.get());
  CHECK(gout.download() == want);
#endif
}
