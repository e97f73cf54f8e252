// CpuOps' pooling and BatchNorm against naive double-precision loops, and 1 vs 2 threads.
#include "tests/support/image_reference.h"

using namespace noeira;
using namespace noeira::test::image_ref;

TEST_CASE("maxpool2d: first maximum of each window with padding and ties; backward",
          "[image-ops]") {
  CpuOps ops(2);
  // The 2x2 / 2 shapes take their own loops (odd H and W leave a row and a column out):
  // rows of up to 16 outputs as one masked vector (3, 16), longer ones as a loop (17, 20).
  for (const PoolShape& s : {pool_shape(2, 3, 7, 7, 3, 2, 1), pool_shape(3, 2, 7, 6, 2, 2, 0),
                             pool_shape(2, 3, 5, 7, 2, 2, 0), pool_shape(1, 2, 5, 5, 3, 1, 1),
                             pool_shape(1, 2, 6, 33, 2, 2, 0), pool_shape(1, 2, 5, 34, 2, 2, 0),
                             pool_shape(2, 3, 8, 40, 2, 2, 0)}) {
    INFO("H=" << s.height << " W=" << s.width << " k=" << s.kernel_h << " stride=" << s.stride
              << " pad=" << s.pad);
    Vec x = random_ints(s.x_elems(), 7);
    x[3] = NAN;  // NaN counts as the maximum
    Vec y(static_cast<size_t>(s.y_elems()));
    std::vector<int32_t> argmax(y.size(), -7);
    ops.maxpool2d_forward(s, cview(x), view(y), argmax.data());
    // The reference: strict '>' keeps the first maximum; a NaN always takes over (torch).
    Vec y_ref(y.size(), -INFINITY);
    std::vector<int32_t> arg_ref(y.size(), -1);
    each_window(s, [&](int64_t pl, int64_t i, int64_t j, int64_t h, int64_t w) {
      const size_t k = y_index(s, pl, i, j);
      const float v = x[x_index(s, pl, h, w)];
      if (arg_ref[k] < 0 || v > y_ref[k] || std::isnan(v))
        y_ref[k] = v, arg_ref[k] = static_cast<int32_t>(h * s.width + w);
    });
    CHECK(same_bits(y, y_ref));
    CHECK(argmax == arg_ref);

    // Backward: dy scattered to each window's argmax in row-major window order (fp32).
    const Vec dy = random_vec(s.y_elems(), 8);
    Vec dx(x.size(), 1.0f), dx_ref(x.size(), 0.0f);
    ops.maxpool2d_backward(s, cview(dy), argmax.data(), view(dx));
    for (int64_t pl = 0; pl < s.batch * s.channels; ++pl)
      for (int64_t i = 0; i < s.out_height(); ++i)
        for (int64_t j = 0; j < s.out_width(); ++j) {
          const size_t k = y_index(s, pl, i, j);
          dx_ref[static_cast<size_t>(pl * s.height * s.width + arg_ref[k])] += dy[k];
        }
    CHECK(same_bits(dx, dx_ref));

    // bf16: the same maxima (the inputs are small integers) and dx rounded once.
    Bf xb = to_bf16(x), yb(y.size()), dyb = to_bf16(dy), dxb(x.size());
    std::vector<int32_t> argb(y.size());
    ops.maxpool2d_forward(s, cview(xb), view(yb), argb.data());
    CHECK(same_bits(to_f32(yb), y_ref));
    CHECK(argb == arg_ref);
    ops.maxpool2d_backward(s, cview(dyb), argb.data(), view(dxb));
    CHECK(rel_error(to_f32(dxb), dx_ref) < 1e-2);
    if (s.stride == s.kernel_h) {  // windows apart: each dx is one dy or zero, exactly
      Vec dxb_ref(x.size(), 0.0f);
      const Vec dy_rounded = to_f32(dyb);
      for (size_t k = 0; k < y.size(); ++k)
        dxb_ref[static_cast<size_t>(static_cast<int64_t>(k) / (s.out_height() * s.out_width()) *
                                        s.height * s.width +
                                    arg_ref[k])] = dy_rounded[k];
      CHECK(same_bits(to_f32(dxb), dxb_ref));
    }
  }
}

TEST_CASE("avgpool2d: padding counted as zeros, global pooling; backward", "[image-ops]") {
  CpuOps ops(2);
  // Overlapping padded windows; stride = kernel with a column, then also a row, past the
  // last window; global pooling of 15 and of 8 planes (the forward sums 8 planes at once);
  // one window smaller than the image.
  for (const PoolShape& s : {pool_shape(2, 3, 7, 7, 3, 2, 1), pool_shape(3, 4, 6, 5, 2, 2, 0),
                             pool_shape(2, 3, 7, 5, 2, 2, 0), pool_shape(5, 3, 4, 4, 4, 1, 0),
                             pool_shape(2, 4, 3, 3, 3, 1, 0), pool_shape(1, 2, 5, 5, 4, 2, 0)}) {
    INFO("H=" << s.height << " W=" << s.width << " k=" << s.kernel_h << " stride=" << s.stride
              << " pad=" << s.pad);
    const double count = static_cast<double>(s.kernel_h * s.kernel_w);
    const Vec x = random_vec(s.x_elems(), 11);
    Vec y(static_cast<size_t>(s.y_elems()));
    ops.avgpool2d_forward(s, cview(x), view(y));
    std::vector<double> y_ref(y.size(), 0.0);
    each_window(s, [&](int64_t pl, int64_t i, int64_t j, int64_t h, int64_t w) {
      y_ref[y_index(s, pl, i, j)] += x[x_index(s, pl, h, w)] / count;
    });
    CHECK(rel_error(y, y_ref) < 1e-6);

    // Backward: dy / (kh kw) added to every covered input in row-major window order.
    const Vec dy = random_vec(s.y_elems(), 12);
    Vec dx(x.size(), 1.0f), dx_ref(x.size(), 0.0f);
    ops.avgpool2d_backward(s, cview(dy), view(dx));
    each_window(s, [&](int64_t pl, int64_t i, int64_t j, int64_t h, int64_t w) {
      dx_ref[x_index(s, pl, h, w)] += dy[y_index(s, pl, i, j)] / static_cast<float>(count);
    });
    CHECK(same_bits(dx, dx_ref));

    Bf yb(y.size()), dxb(x.size());
    ops.avgpool2d_forward(s, cview(to_bf16(x)), view(yb));
    CHECK(rel_error(to_f32(yb), y_ref) < 1e-2);
    ops.avgpool2d_backward(s, cview(to_bf16(dy)), view(dxb));
    CHECK(rel_error(to_f32(dxb), dx_ref) < 1e-2);
  }
}

TEST_CASE("pooling: 1 and 2 threads give the same bits", "[image-ops]") {
  CpuOps one(1), two(2);
  for (const PoolShape& s : {pool_shape(3, 5, 9, 9, 3, 2, 1), pool_shape(3, 5, 8, 9, 2, 2, 0),
                             pool_shape(3, 7, 4, 4, 4, 1, 0)}) {
    const Vec x = random_vec(s.x_elems(), 21), dy = random_vec(s.y_elems(), 22);
    const auto run = [&](CpuOps& ops) {
      Vec y(dy.size()), dx(x.size()), ya(dy.size()), dxa(x.size());
      std::vector<int32_t> arg(dy.size());
      ops.maxpool2d_forward(s, cview(x), view(y), arg.data());
      ops.maxpool2d_backward(s, cview(dy), arg.data(), view(dx));
      ops.avgpool2d_forward(s, cview(x), view(ya));
      ops.avgpool2d_backward(s, cview(dy), view(dxa));
      return std::vector<Vec>{y, dx, ya, dxa};
    };
    const std::vector<Vec> a = run(one), b = run(two);
    for (size_t i = 0; i < a.size(); ++i) CHECK(same_bits(a[i], b[i]));
  }
}

// ---- BatchNorm ----

TEST_CASE("batchnorm: training forward, running statistics, backward, eval", "[image-ops]") {
  CpuOps ops(2);
  BatchNormHyper h;
  h.eps = 1e-3f, h.momentum = 0.2f;
  // 9 x 5 x 12001 fp32 is over kStreamBytes: y and dx streamed (streaming_store.h), its runs
  // of 12001 values (48004 bytes) starting off 64-byte boundaries and ending in part blocks.
  for (const NormShape& s : {norm_shape(3, 5, 42), norm_shape(7, 4, 1), norm_shape(9, 5, 12001)}) {
    INFO("B=" << s.batch << " C=" << s.channels << " S=" << s.spatial);
    const Vec x = random_vec(s.elems(), 31, -1.0f, 3.0f), dy = random_vec(s.elems(), 32);
    const Vec gamma = random_vec(s.channels, 33, 0.5f, 1.5f), beta = random_vec(s.channels, 34);
    const BnOut o = run_bn<float>(ops, s, x, dy, gamma, beta, h);
    // run_bn's start values of the running statistics and the accumulated gradients.
    const Vec rmean0 = random_vec(s.channels, 91), rvar0 = random_vec(s.channels, 92, 0.5f, 2.0f);
    const Vec dgamma0 = random_vec(s.channels, 93), dbeta0 = random_vec(s.channels, 94);

    std::vector<double> y_ref(x.size()), dx_ref(x.size());
    const std::vector<ChannelRef> ch = channels(s, x);
    for (size_t c = 0; c < ch.size(); ++c) {
      const ChannelRef& r = ch[c];
      const double n = static_cast<double>(r.at.size());
      const double invstd = 1.0 / std::sqrt(r.var + h.eps);
      CHECK(o.mean[c] == Approx(r.mean).margin(1e-6));
      CHECK(o.invstd[c] == Approx(invstd).epsilon(1e-5));
      // Running statistics: the unbiased variance (n / (n - 1)).
      CHECK(o.rmean[c] == Approx((1 - h.momentum) * rmean0[c] + h.momentum * r.mean).margin(1e-6));
      CHECK(o.rvar[c] ==
            Approx((1 - h.momentum) * rvar0[c] + h.momentum * r.var * n / (n - 1)).epsilon(1e-5));
      double sum_dy = 0.0, sum_dy_xhat = 0.0;
      for (size_t k : r.at) {
        const double xhat = (x[k] - r.mean) * invstd;
        y_ref[k] = xhat * gamma[c] + beta[c];
        sum_dy += dy[k];
        sum_dy_xhat += dy[k] * xhat;
      }
      for (size_t k : r.at)
        dx_ref[k] = gamma[c] * invstd *
                    (dy[k] - sum_dy / n - (x[k] - r.mean) * invstd * sum_dy_xhat / n);
      CHECK(o.dgamma[c] == Approx(dgamma0[c] + sum_dy_xhat).margin(1e-5));
      CHECK(o.dbeta[c] == Approx(dbeta0[c] + sum_dy).margin(1e-5));
    }
    CHECK(rel_error(o.y, y_ref) < 1e-6);
    CHECK(rel_error(o.dx, dx_ref) < 1e-5);

    // bf16 storage: close to fp32, statistics from the bf16 values.
    const BnOut b = run_bn<bf16_t>(ops, s, x, dy, gamma, beta, h);
    CHECK(rel_error(b.y, o.y) < 1e-2);
    CHECK(rel_error(b.dx, o.dx) < 2e-2);
    CHECK(rel_error(b.mean, o.mean) < 1e-2);

    // Eval from the running statistics.
    Vec ye(x.size());
    ops.batchnorm_forward_eval(s, cview(x), gamma.data(), beta.data(), o.rmean.data(),
                               o.rvar.data(), h, view(ye), {});
    std::vector<double> ye_ref(x.size());
    for (size_t c = 0; c < ch.size(); ++c)
      for (size_t k : ch[c].at)
        ye_ref[k] = (x[k] - o.rmean[c]) / std::sqrt(o.rvar[c] + static_cast<double>(h.eps)) *
                        gamma[c] + beta[c];
    CHECK(rel_error(ye, ye_ref) < 1e-6);
  }
}

TEST_CASE("batchnorm bf16: statistics and gradient sums as double sums of the bf16 values, "
          "within the fp32 spans' bound",
          "[image-ops]") {
  // bf16 terms are summed in fp32 over spans of 8 values per lane before double
  // (kernels/cpu/batchnorm.cpp): at most 7 * 2^-24 of the sum of the terms' magnitudes off
  // (dy * xhat rounded to fp32 once more). Shapes: runs of whole 256-value blocks, part
  // blocks and part lanes, single values. x: a mean of 40 against a spread of 4, where the
  // sum of squares cancels 99% of itself in the variance (and bf16's multiples of 1/4 sum
  // exactly), and magnitudes from 0 to 45 mixed in a span, where the fp32 sums round.
  CpuOps ops(2);
  const BatchNormHyper h;
  const double bound = 7.0 * 0x1p-24, u = 0x1p-24;
  for (const auto& [lo, hi] : {std::pair{36.0f, 44.0f}, std::pair{-45.0f, 45.0f}})
    for (const NormShape& s : {norm_shape(4, 3, 512), norm_shape(3, 5, 299), norm_shape(7, 4, 1)}) {
      INFO("x in [" << lo << ", " << hi << "] B=" << s.batch << " C=" << s.channels
                    << " S=" << s.spatial);
      const Vec x = random_vec(s.elems(), 61, lo, hi), dy = random_vec(s.elems(), 62);
      const Vec gamma = random_vec(s.channels, 63, 0.5f, 1.5f);
      const Vec beta = random_vec(s.channels, 64);
      Vec xb(x.size()), dyb(x.size());  // the values as bf16 stores them
      for (size_t i = 0; i < x.size(); ++i)
        xb[i] = round_to_bf16(x[i]), dyb[i] = round_to_bf16(dy[i]);
      const BnOut b = run_bn<bf16_t>(ops, s, x, dy, gamma, beta, h);
      const Vec dgamma0 = random_vec(s.channels, 93), dbeta0 = random_vec(s.channels, 94);
      const std::vector<ChannelRef> ch = channels(s, xb);
      for (size_t c = 0; c < ch.size(); ++c) {
        const ChannelRef& r = ch[c];
        const double n = static_cast<double>(r.at.size());
        double sum_sq = 0.0, sum_abs = 0.0;
        for (size_t k : r.at) {
          sum_sq += static_cast<double>(xb[k]) * xb[k];
          sum_abs += std::abs(static_cast<double>(xb[k]));
        }
        // The mean: its sum's bound, then fp32 roundings of the quotient and the result.
        CHECK(std::abs(b.mean[c] - r.mean) <= bound * sum_abs / n + 2 * u * std::abs(r.mean));
        // The variance, E[x^2] - mean^2, off by the bound on sum_sq / n and twice the mean's
        // relative error on mean^2; invstd = (var + eps)^-1/2 moves by half its relative
        // error, plus its own fp32 roundings.
        const double var_err = bound * sum_sq / n + 2 * (bound * sum_abs / n) * std::abs(r.mean);
        const double invstd = 1.0 / std::sqrt(r.var + h.eps);
        CHECK(std::abs(b.invstd[c] - invstd) <=
              0.5 * invstd * var_err / (r.var + h.eps) + 4 * u * invstd);
        // The gradient sums with the kernel's own mean and invstd (fp32 xhat).
        double sum_dy = 0.0, sum_dy_xhat = 0.0, mag = 0.0;
        for (size_t k : r.at) {
          const float xhat = (xb[k] - b.mean[c]) * b.invstd[c];
          sum_dy += dyb[k];
          sum_dy_xhat += static_cast<double>(dyb[k]) * xhat;
          mag += std::abs(static_cast<double>(dyb[k]) * xhat);
        }
        // + one fp32 rounding of each product and the result's own rounding to fp32.
        CHECK(std::abs(b.dgamma[c] - (dgamma0[c] + sum_dy_xhat)) <=
              (bound + u) * mag + u * std::abs(dgamma0[c] + sum_dy_xhat) + 1e-12);
        CHECK(std::abs(b.dbeta[c] - (dbeta0[c] + sum_dy)) <=
              bound * n + u * std::abs(dbeta0[c] + sum_dy) + 1e-12);
      }
    }
}

TEST_CASE("batchnorm: backward without dx still accumulates dgamma and dbeta", "[image-ops]") {
  CpuOps ops(2);
  const NormShape s = norm_shape(2, 3, 10);
  const Vec x = random_vec(s.elems(), 41), dy = random_vec(s.elems(), 42);
  const Vec gamma(3, 1.0f), beta(3, 0.0f);
  const BnOut full = run_bn<float>(ops, s, x, dy, gamma, beta, {});
  Vec mean = full.mean, invstd = full.invstd;
  Vec dgamma = random_vec(3, 93), dbeta = random_vec(3, 94);
  ops.batchnorm_backward(s, cview(dy), cview(x), gamma.data(), mean.data(), invstd.data(), View{},
                         dgamma.data(), dbeta.data(), nullptr);
  CHECK(same_bits(dgamma, full.dgamma));
  CHECK(same_bits(dbeta, full.dbeta));
}

// ResNet's basic block fuses relu(bn1) and relu(bn2 + shortcut) into the BatchNorms' passes
// (nn/resnet_block.cpp): the fused pass must store what the separate add and ReLU would.
TEST_CASE("batchnorm epilogue: act(bn(x) + residual) in the forward's pass has the bits of "
          "the separate add and act_forward, fp32 and bf16, training (fused and split) and eval",
          "[image-ops]") {
  CpuOps ops(2);
  BatchNormHyper h;
  // 37: a tail after every vector width; 64 with 20 channels: bf16's AVX-512 loops
  // (batchnorm_bf16.h, runs of 32k values) over two chunks of channels.
  for (const NormShape& s : {norm_shape(4, 3, 37), norm_shape(3, 20, 64)}) {
    INFO("C=" << s.channels << " S=" << s.spatial);
    const size_t n = static_cast<size_t>(s.elems()), C = static_cast<size_t>(s.channels);
    const Vec xf = random_vec(s.elems(), 61, -1.0f, 3.0f);
    Vec rf = random_vec(s.elems(), 62);
    // Residuals that make the sum a NaN, an infinity or a signed zero before the ReLU (which
    // the epilogue applies without rounding first: kernels/common/norm.h).
    const float specials[] = {std::nanf(""), INFINITY, -INFINITY, 0.0f, -0.0f};
    for (size_t k = 0; k < 5; ++k) rf[40 * k + 3] = specials[k];
    const Vec gamma = random_vec(s.channels, 63, 0.5f, 1.5f), beta = random_vec(s.channels, 64);
    const Vec rm0 = random_vec(s.channels, 65), rv0 = random_vec(s.channels, 66, 0.5f, 2.0f);
    const auto run = [&](auto zero) {
      using T = decltype(zero);
      std::vector<T> x(n), r(n);
      for (size_t i = 0; i < n; ++i) store_f32(x[i], xf[i]), store_f32(r[i], rf[i]);
      for (bool residual : {false, true})
        for (Act act : {Act::kNone, Act::kReLU}) {
          INFO("residual " << residual << " relu " << (act == Act::kReLU) << " bf16 "
                           << (sizeof(T) == 2));
          const BatchNormEpilogue epi{residual ? cview(r) : ConstView{}, act};
          // Separate ops: BatchNorm, then add, then the activation, each stored.
          const auto separately = [&](std::vector<T> y) {
            std::vector<T> sum(n), out(n);
            if (residual) ops.add(cview(y), cview(r), view(sum));
            else sum = y;
            if (act != Act::kNone) ops.act_forward(cview(sum), view(out), act);
            else out = sum;
            return out;
          };
          // Training, fused statistics.
          Vec mean(C), inv(C), rm = rm0, rv = rv0, mean2(C), inv2(C), rm2 = rm0, rv2 = rv0;
          std::vector<T> plain(n), fused(n), split(n);
          ops.batchnorm_forward_train(s, cview(x), gamma.data(), beta.data(), h, view(plain), {},
                                      mean.data(), inv.data(), rm.data(), rv.data(), nullptr);
          ops.batchnorm_forward_train(s, cview(x), gamma.data(), beta.data(), h, view(fused), epi,
                                      mean2.data(), inv2.data(), rm2.data(), rv2.data(), nullptr);
          CHECK(same_bits(fused, separately(plain)));
          CHECK(same_bits(mean2, mean));
          CHECK(same_bits(inv2, inv));
          CHECK(same_bits(rm2, rm));
          CHECK(same_bits(rv2, rv));
          // Training from the sums (synchronised BatchNorm over one rank).
          std::vector<double> sums(2 * C);
          Vec mean3(C), inv3(C), rm3 = rm0, rv3 = rv0;
          ops.batchnorm_stats(s, cview(x), sums.data(), nullptr);
          ops.batchnorm_forward_from_stats(s, cview(x), sums.data(), s.per_channel(), gamma.data(),
                                           beta.data(), h, view(split), epi, mean3.data(),
                                           inv3.data(), rm3.data(), rv3.data(), nullptr);
          CHECK(same_bits(split, fused));
          // Eval.
          std::vector<T> eval_plain(n), eval_fused(n);
          ops.batchnorm_forward_eval(s, cview(x), gamma.data(), beta.data(), rm0.data(), rv0.data(),
                                     h, view(eval_plain), {});
          ops.batchnorm_forward_eval(s, cview(x), gamma.data(), beta.data(), rm0.data(), rv0.data(),
                                     h, view(eval_fused), epi);
          CHECK(same_bits(eval_fused, separately(eval_plain)));
        }
    };
    run(0.0f);
    run(bf16_t{0});
  }
}

TEST_CASE("batchnorm: 1 and 2 threads give the same bits", "[image-ops]") {
  CpuOps one(1), two(2);
  // The 2nd streamed (fp32); the 3rd on bf16's AVX-512 loops over two chunks of channels.
  for (const NormShape& s :
       {norm_shape(5, 7, 33), norm_shape(9, 5, 12001), norm_shape(3, 20, 1024)}) {
    INFO("S=" << s.spatial);
    const Vec x = random_vec(s.elems(), 51), dy = random_vec(s.elems(), 52);
    const Vec gamma = random_vec(s.channels, 53), beta = random_vec(s.channels, 54);
    const auto same = [&](const BnOut& a, const BnOut& b) {
      for (auto m : {&BnOut::y, &BnOut::mean, &BnOut::invstd, &BnOut::rmean, &BnOut::rvar,
                     &BnOut::dx, &BnOut::dgamma, &BnOut::dbeta})
        CHECK(same_bits(a.*m, b.*m));
    };
    same(run_bn<float>(one, s, x, dy, gamma, beta, {}), run_bn<float>(two, s, x, dy, gamma, beta, {}));
    // bf16: its sums in fp32 spans first.
    same(run_bn<bf16_t>(one, s, x, dy, gamma, beta, {}), run_bn<bf16_t>(two, s, x, dy, gamma, beta, {}));
  }
}

// ResNet's basic block takes relu(bn1)'s gradient inside bn1's backward
// (batchnorm_relu_backward, nn/resnet_block.cpp): the CPU recomputes the ReLU's mask from x
// and must give the bits of act_backward on the stored output, then batchnorm_backward.
TEST_CASE("batchnorm_relu_backward has the bits of act_backward then batchnorm_backward, "
          "fp32 and bf16, with and without dx, at 1 and 2 threads",
          "[image-ops]") {
  BatchNormHyper h;
  // 37: a tail after every vector width; 64 with 20 channels: bf16's AVX-512 loops
  // (batchnorm_bf16.h) over two chunks of channels.
  for (const NormShape& s : {norm_shape(4, 5, 37), norm_shape(3, 20, 64)}) {
    INFO("C=" << s.channels << " S=" << s.spatial);
    const size_t n = static_cast<size_t>(s.elems()), C = static_cast<size_t>(s.channels);
    const Vec xf = random_vec(s.elems(), 71, -2.0f, 2.0f);
    Vec dyf = random_vec(s.elems(), 72);
    dyf[5] = 0.0f, dyf[6] = -0.0f, dyf[7] = -3.0e38f;  // signed zeros, a large value
    Vec gamma = random_vec(s.channels, 73, -1.5f, 1.5f), beta = random_vec(s.channels, 74);
    gamma[1] = 0.0f, beta[1] = 0.0f;  // every output exactly zero: no gradient passes
    gamma[2] = 1e-44f, beta[2] = 0.0f;  // fp32 subnormal outputs: bf16 rounds them to zero
    const auto run = [&](auto zero, int threads) {
      using T = decltype(zero);
      CpuOps ops(threads);
      std::vector<T> x(n), dy(n), y(n), drelu(n), dx_ref(n), dx(n);
      for (size_t i = 0; i < n; ++i) store_f32(x[i], xf[i]), store_f32(dy[i], dyf[i]);
      Vec mean(C), inv(C), rm(C, 0.0f), rv(C, 1.0f);
      ops.batchnorm_forward_train(s, cview(x), gamma.data(), beta.data(), h, view(y),
                                  {ConstView{}, Act::kReLU}, mean.data(), inv.data(), rm.data(),
                                  rv.data(), nullptr);
      size_t zeros = 0;
      for (const T& v : y) zeros += load_f32(v) == 0.0f;
      CHECK(zeros > n / 4);  // the mask matters
      for (bool with_dx : {true, false}) {
        INFO("bf16 " << (sizeof(T) == 2) << " threads " << threads << " dx " << with_dx);
        Vec dg_ref = random_vec(s.channels, 75), db_ref = random_vec(s.channels, 76);
        Vec dg = dg_ref, db = db_ref;
        ops.act_backward(cview(dy), ConstView{}, cview(y), view(drelu), Act::kReLU);
        ops.batchnorm_backward(s, cview(drelu), cview(x), gamma.data(), mean.data(), inv.data(),
                               with_dx ? view(dx_ref) : View{}, dg_ref.data(), db_ref.data(),
                               nullptr);
        ops.batchnorm_relu_backward(s, cview(dy), cview(y), cview(x), gamma.data(), beta.data(),
                                    mean.data(), inv.data(), with_dx ? view(dx) : View{},
                                    dg.data(), db.data(), nullptr);
        if (with_dx) CHECK(same_bits(dx, dx_ref));
        CHECK(same_bits(dg, dg_ref));
        CHECK(same_bits(db, db_ref));
      }
    };
    for (int threads : {1, 2}) {
      run(0.0f, threads);
      run(bf16_t{0}, threads);
    }
  }
}
