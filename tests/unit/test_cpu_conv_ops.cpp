// CpuOps' convolutions (oneDNN) and GEMMs against naive double-precision loops, bf16
// storage against fp32, and the thread-count rule (DESIGN.md rule 3): 1 and 2 threads give
// the same bits. Also SGD's scheduled rate.
#include <string>
#include <string_view>

#include "harness/env/host_info.h"
#include "kernels/conv_dx_epilogue_check.h"
#include "kernels/cpu/bf16_conv3x3_wgrad.h"
#include "kernels/cpu/bf16_conv3x3_wgrad_amx.h"
#include "kernels/cpu/onednn_engine.h"
#include "tests/support/image_reference.h"
#include "tests/support/scoped_env.h"

using namespace noeira;
using namespace noeira::test::image_ref;

namespace {
#if defined(__AVX512BW__)
constexpr bool kBuildHasAvx512 = true;  // our bf16 weight-gradient kernel is compiled in
#else
constexpr bool kBuildHasAvx512 = false;
#endif
// oneDNN's effective ISA here includes AMX (its name, as `env` prints it).
bool onednn_runs_amx() {
  return build_info().at("onednn").at("isa").get<std::string>().find("amx") != std::string::npos;
}
}  // namespace

TEST_CASE("conv2d: forward, backward-data, backward-weights match naive loops", "[image-ops]") {
  CpuOps ops(2);
  uint32_t seed = 1;
  for (const ConvShape& s : conv_shapes()) {
    CONV_INFO(s);
    const ConvCase c(s, seed += 10);
    const ConvCase::Out o = c.run<float>(ops);
    const ConvRef ref = c.reference(c.x, c.w, c.dy);
    CHECK(rel_error(o.y, ref.y) < 1e-5);
    CHECK(rel_error(o.dx, ref.dx) < 1e-5);
    CHECK(rel_error(o.dw, ref.dw) < 1e-5);
    if (s.has_bias) CHECK(rel_error(o.db, ref.db) < 1e-5);
    if (!s.has_bias) CHECK(same_bits(o.db, c.db0));  // db untouched
  }
}

TEST_CASE("conv2d bf16: fp32 sums of the bf16 values, outputs rounded once, close to fp32",
          "[image-ops]") {
  CpuOps ops(2);
  uint32_t seed = 100;
  std::vector<ConvShape> shapes = conv_shapes();
  shapes.push_back(conv_shape(2, 64, 4, 4, 32, 3, 1, 1, true));  // 576-term sums
  for (const ConvShape& s : shapes) {
    CONV_INFO(s);
    const ConvCase c(s, seed += 10);
    const ConvCase::Out b = c.run<bf16_t>(ops);
    // The reference sees what bf16 storage holds; each output within about one bf16
    // rounding of it (fp32 sums in another order may round the other way).
    const ConvRef ref = c.reference(rounded(c.x), rounded(c.w), rounded(c.dy));
    const auto within_one_rounding = [](const Vec& got, const std::vector<double>& want) {
      double worst = 0.0;
      for (size_t i = 0; i < got.size(); ++i)
        worst = std::max(worst, std::abs(got[i] - want[i]) / (std::abs(want[i]) + 1e-3));
      return worst;
    };
    CHECK(within_one_rounding(b.y, ref.y) <= 1.0 / 128);
    CHECK(within_one_rounding(b.dx, ref.dx) <= 1.0 / 128);
    CHECK(rel_error(b.dw, ref.dw) < 1e-5);  // fp32 gradients
    if (s.has_bias) CHECK(rel_error(b.db, ref.db) < 1e-5);
    // And close to the fp32 run.
    const ConvCase::Out f = c.run<float>(ops);
    CHECK(rel_error(b.y, f.y) < 1e-2);
    CHECK(rel_error(b.dx, f.dx) < 1e-2);
    CHECK(rel_error(b.dw, f.dw) < 1e-2);
  }
}

TEST_CASE("conv2d bf16 3x3 stride-1 weight gradient (ours on AVX512-BF16): exact products "
          "summed in fp32, the same bits for 1 and 2 threads, oneDNN's within fp32 rounding",
          "[image-ops]") {
  // "1": ours on every shape it takes, also where oneDNN's AMX kernel would keep some.
  const test::ScopedEnv on("NOEIRA_BF16_WGRAD", "1");
  // Ours runs wherever the build has AVX-512 and the CPU AVX512-BF16; elsewhere the checks
  // below compare oneDNN with itself, and say so.
  const bool expected = kBuildHasAvx512 && host_info().at("cpu_features").at("avx512_bf16") == true;
  CHECK(bf16_wgrad_available() == expected);
  CHECK(bf16_wgrad_scope() == (expected ? Bf16WgradScope::kAll : Bf16WgradScope::kNone));
  if (!expected) WARN("SKIP: our bf16 weight-gradient kernel cannot run here (no AVX-512 build or "
                      "no AVX512-BF16 CPU); its checks ran oneDNN's kernel");
  const ConvShape shapes[] = {
      conv_shape(10, 3, 6, 8, 16, 3, 1, 1, false),    // Cin 3: a one-channel block; slabs 8 + 2
      conv_shape(9, 16, 8, 8, 16, 3, 1, 1, false),    // ResNet-20's 16-channel kernel
      conv_shape(5, 17, 4, 6, 32, 3, 1, 1, false),    // odd Cin, two output blocks
      conv_shape(4, 16, 32, 32, 16, 3, 1, 1, false),  // two chunks of 2 images in the slab
      conv_shape(9, 16, 32, 32, 16, 3, 1, 1, false),  // slabs 8 + 1: 4 chunks, then 1 of 1
      conv_shape(3, 32, 5, 2, 48, 3, 1, 1, false)};   // one column pair per row, H odd
  uint32_t seed = 300;
  CpuOps one(1), two(2);
  for (const ConvShape& s : shapes) {
    CONV_INFO(s);
    const ConvCase c(s, seed += 10);
    const ConvCase::Out a = c.run<bf16_t>(one), b = c.run<bf16_t>(two);
    CHECK(same_bits(a.dw, b.dw));
    const ConvRef ref = c.reference(rounded(c.x), rounded(c.w), rounded(c.dy));
    CHECK(rel_error(b.dw, ref.dw) < 1e-5);
    test::ScopedEnv off("NOEIRA_BF16_WGRAD", "0");  // read when a shape is planned
    CHECK_FALSE(bf16_wgrad_applies(s, DType::kBF16));
    CpuOps onednn(2);
    CHECK(rel_error(c.run<bf16_t>(onednn).dw, b.dw) < 1e-5);
  }
}

TEST_CASE("conv2d bf16 weight gradient: ours takes 3x3, stride 1, pad 1, no bias, Cout 16k, "
          "W even, bf16 only", "[image-ops]") {
  const test::ScopedEnv on("NOEIRA_BF16_WGRAD", "1");
  CHECK_FALSE(bf16_wgrad_applies(conv_shape(8, 16, 32, 32, 16, 3, 1, 1, false), DType::kF32));
  CHECK_FALSE(bf16_wgrad_applies(conv_shape(8, 16, 32, 32, 32, 3, 2, 1, false), DType::kBF16));
  CHECK_FALSE(bf16_wgrad_applies(conv_shape(8, 16, 32, 32, 16, 3, 1, 1, true), DType::kBF16));
  CHECK_FALSE(bf16_wgrad_applies(conv_shape(8, 16, 32, 32, 24, 3, 1, 1, false), DType::kBF16));
  CHECK_FALSE(bf16_wgrad_applies(conv_shape(8, 16, 31, 31, 16, 3, 1, 1, false), DType::kBF16));
  CHECK_FALSE(bf16_wgrad_applies(conv_shape(8, 16, 32, 32, 16, 3, 1, 0, false), DType::kBF16));
  CHECK_FALSE(bf16_wgrad_applies(conv_shape(8, 16, 32, 32, 16, 1, 1, 0, false), DType::kBF16));
}

TEST_CASE("onednn::runs_amx agrees with the oneDNN ISA that env records", "[image-ops]") {
  CHECK(onednn::runs_amx() == onednn_runs_amx());
}

TEST_CASE("conv2d bf16 weight gradient: where oneDNN runs AMX, ours takes every shape with "
          "AMX tiles for channels in blocks of 16 (else Cin < 16 only); NOEIRA_BF16_WGRAD=1 "
          "forces AVX512-BF16, noamx the old split, 0 turns ours off", "[image-ops]") {
  const ConvShape stem = conv_shape(8, 3, 32, 32, 16, 3, 1, 1, false);
  const ConvShape wide = conv_shape(8, 16, 32, 32, 16, 3, 1, 1, false);
  const bool amx = onednn_runs_amx();
  {
    const test::ScopedEnv unset("NOEIRA_BF16_WGRAD", nullptr);
    if (!bf16_wgrad_available()) {
      CHECK(bf16_wgrad_scope() == Bf16WgradScope::kNone);
      CHECK_FALSE(bf16_wgrad_applies(stem, DType::kBF16));
    } else {
      const Bf16WgradScope want = !amx                  ? Bf16WgradScope::kAll
                                  : amx_wgrad_available() ? Bf16WgradScope::kAmxTiles
                                                          : Bf16WgradScope::kFewInputChannels;
      CHECK(bf16_wgrad_scope() == want);
      CHECK(bf16_wgrad_applies(stem, DType::kBF16));
      CHECK_FALSE(bf16_wgrad_on_tiles(stem));
      CHECK(bf16_wgrad_applies(wide, DType::kBF16) == (want != Bf16WgradScope::kFewInputChannels));
      CHECK(bf16_wgrad_on_tiles(wide) == (want == Bf16WgradScope::kAmxTiles));
      // 24 input channels: not the AMX kernel's; from 16 up oneDNN's AMX kernel keeps them.
      CHECK(bf16_wgrad_applies(conv_shape(8, 24, 8, 8, 16, 3, 1, 1, false), DType::kBF16) ==
            !amx);
    }
  }
  {
    const test::ScopedEnv forced("NOEIRA_BF16_WGRAD", "1");
    CHECK(bf16_wgrad_applies(wide, DType::kBF16) == bf16_wgrad_available());
    CHECK_FALSE(bf16_wgrad_on_tiles(wide));
  }
  if (amx && bf16_wgrad_available()) {
    const test::ScopedEnv split("NOEIRA_BF16_WGRAD", "noamx");
    CHECK(bf16_wgrad_scope() == Bf16WgradScope::kFewInputChannels);
    CHECK_FALSE(bf16_wgrad_applies(wide, DType::kBF16));
  }
  const test::ScopedEnv off("NOEIRA_BF16_WGRAD", "0");
  CHECK(bf16_wgrad_scope() == Bf16WgradScope::kNone);
  CHECK_FALSE(bf16_wgrad_applies(stem, DType::kBF16));
  CHECK_FALSE(bf16_wgrad_on_tiles(wide));
  CHECK(std::string_view(bf16_wgrad_scope_name(bf16_wgrad_scope())) == "none");
}

TEST_CASE("conv2d: 1 and 2 threads give the same bits in every pass, fp32 and bf16",
          "[image-ops]") {
  CpuOps one(1), two(2);
  uint32_t seed = 200;
  for (const ConvShape& s : conv_shapes()) {
    CONV_INFO(s);
    const ConvCase c(s, seed += 10);
    const ConvCase::Out a = c.run<float>(one), b = c.run<float>(two);
    CHECK(same_bits(a.y, b.y));
    CHECK(same_bits(a.dx, b.dx));
    CHECK(same_bits(a.dw, b.dw));
    CHECK(same_bits(a.db, b.db));
    const ConvCase::Out p = c.run<bf16_t>(one), q = c.run<bf16_t>(two);
    CHECK(same_bits(p.y, q.y));
    CHECK(same_bits(p.dx, q.dx));
    CHECK(same_bits(p.dw, q.dw));
    CHECK(same_bits(p.db, q.db));
  }
}

TEST_CASE("conv2d_backward has the bits of conv2d_backward_weights then conv2d_backward_data "
          "(then add_relu_backward with a dx epilogue), fp32 and bf16, with and without dx, at "
          "1 and 2 threads",
          "[image-ops]") {
  std::vector<ConvShape> shapes = conv_shapes();
  shapes.push_back(conv_shape(10, 16, 8, 8, 16, 3, 1, 1, false));  // fp32 Winograd, a short slab
  shapes.push_back(conv_shape(5, 32, 6, 6, 16, 3, 2, 1, true));    // channel blocks, stride 2
  shapes.push_back(conv_shape(9, 16, 9, 9, 16, 3, 1, 0, false));   // fp32 on nhwc (AVX-512)
  // The epilogue's copy out: 300-pixel planes (a 256-pixel piece, then 32-pixel tiles and
  // single pixels); a dx of kStreamBytes and more in fp32 and bf16 (streamed where the
  // build has streaming stores).
  shapes.push_back(conv_shape(3, 16, 15, 20, 32, 3, 1, 1, false));
  shapes.push_back(conv_shape(16, 16, 64, 64, 16, 3, 1, 1, false));
  uint32_t seed = 400;
  for (const ConvShape& s : shapes) {
    CONV_INFO(s);
    const ConvCase c(s, seed += 10);
    const auto check = [&](auto zero, int threads) {
      using T = decltype(zero);
      constexpr DType dt = DTypeOf<T>::value;
      CpuOps ops(threads);
      auto bytes = ops.conv2d_plan(s, dt);
      REQUIRE(bytes.ok());
      std::vector<std::byte> ws(*bytes);
      std::vector<T> x(c.x.size()), w(c.w.size()), dy(c.dy.size()), dx_ref(c.x.size()),
          dx(c.x.size());
      for (size_t i = 0; i < x.size(); ++i) store_f32(x[i], c.x[i]);
      for (size_t i = 0; i < w.size(); ++i) store_f32(w[i], c.w[i]);
      for (size_t i = 0; i < dy.size(); ++i) store_f32(dy[i], c.dy[i]);
      for (bool with_dx : {true, false}) {
        INFO("bf16 " << (sizeof(T) == 2) << " threads " << threads << " dx " << with_dx);
        Vec dw_ref = c.dw0, db_ref = c.db0, dw = c.dw0, db = c.db0;
        float* db_ref_p = s.has_bias ? db_ref.data() : nullptr;
        ops.conv2d_backward_weights(s, cview(x), cview(dy), dw_ref.data(), db_ref_p, ws.data(),
                                    ws.size());
        if (with_dx)
          ops.conv2d_backward_data(s, cview(dy), cview(w), view(dx_ref), ws.data(), ws.size());
        ops.conv2d_backward(s, cview(x), cview(dy), cview(w), with_dx ? view(dx) : View{}, {},
                            dw.data(), s.has_bias ? db.data() : nullptr, ws.data(), ws.size());
        if (with_dx) CHECK(same_bits(dx, dx_ref));
        CHECK(same_bits(dw, dw_ref));
        CHECK(same_bits(db, db_ref));
      }
      // The dx epilogue: conv2d_backward then add_relu_backward, in one pass.
      std::vector<T> res(c.x.size()), post(c.x.size()), want(c.x.size()), got(c.x.size());
      const Vec r = random_vec(static_cast<int64_t>(c.x.size()), seed + 1);
      const Vec p = random_vec(static_cast<int64_t>(c.x.size()), seed + 2);
      for (size_t i = 0; i < res.size(); ++i) store_f32(res[i], r[i]), store_f32(post[i], p[i]);
      ops.add_relu_backward(cview(dx_ref), cview(res), cview(post), view(want));
      Vec dw = c.dw0, db = c.db0, dw_ref = c.dw0, db_ref = c.db0;
      ops.conv2d_backward_weights(s, cview(x), cview(dy), dw_ref.data(),
                                  s.has_bias ? db_ref.data() : nullptr, ws.data(), ws.size());
      ops.conv2d_backward(s, cview(x), cview(dy), cview(w), view(got),
                          ConvDxEpilogue{cview(res), cview(post)}, dw.data(),
                          s.has_bias ? db.data() : nullptr, ws.data(), ws.size());
      INFO("bf16 " << (sizeof(T) == 2) << " threads " << threads << " dx epilogue");
      CHECK(same_bits(got, want));
      CHECK(same_bits(dw, dw_ref));
      CHECK(same_bits(db, db_ref));
    };
    for (int threads : {1, 2}) {
      check(0.0f, threads);
      check(bf16_t{0}, threads);
    }
  }
  // The copy of dy is shared where oneDNN's kernels take both passes in a blocked layout.
  OnednnConv conv(1);
  const ConvShape blocked = conv_shape(10, 16, 8, 8, 16, 3, 1, 1, false);
  REQUIRE(conv.workspace_bytes(blocked, DType::kF32).ok());
  CHECK(conv.fuses_backward(blocked, DType::kF32));
  CHECK_FALSE(conv.fuses_backward(blocked, DType::kBF16));  // not planned
  // And where both take it in nhwc (fp32 direct 16 -> 16 where oneDNN runs AVX-512).
  const ConvShape nhwc = conv_shape(9, 16, 9, 9, 16, 3, 1, 0, false);
  REQUIRE(conv.workspace_bytes(nhwc, DType::kF32).ok());
  CHECK(conv.fuses_backward(nhwc, DType::kF32));
}

TEST_CASE("conv2d: a shape is planned per dtype; a bad shape is an Error", "[image-ops]") {
  CpuOps ops(2);
  CHECK_FALSE(ops.conv2d_plan(conv_shape(1, 1, 2, 2, 2, 5, 1, 1, true), DType::kF32).ok());
  CHECK_FALSE(ops.conv2d_plan(conv_shape(1, 1, 8, 8, 2, 3, 1, 0, true), DType::kI32).ok());
  // The backend's OnednnConv keys plans by dtype: fp32 planned, bf16 not.
  OnednnConv conv(1);
  const ConvShape s = conv_shape(2, 2, 6, 6, 3, 3, 1, 1, false);
  auto bytes = conv.workspace_bytes(s, DType::kF32);
  REQUIRE(bytes.ok());
  std::vector<std::byte> ws(*bytes);
  Bf x(static_cast<size_t>(s.x_elems())), w(static_cast<size_t>(s.w_elems())),
      y(static_cast<size_t>(s.y_elems()));
  const Status st = conv.forward(s, x.data(), w.data(), nullptr, y.data(), ws.data(), ws.size());
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.error().message, Catch::Contains("bf16") && Catch::Contains("not planned"));
}

TEST_CASE("conv2d_backward_weights: a null db skips the bias gradient only", "[image-ops]") {
  CpuOps ops(2);
  const ConvShape s = conv_shape(9, 3, 6, 6, 4, 3, 1, 1, true);
  const ConvCase c(s, 300);
  const ConvCase::Out full = c.run<float>(ops);
  auto bytes = ops.conv2d_plan(s, DType::kF32);
  REQUIRE(bytes.ok());
  std::vector<std::byte> ws(*bytes);
  Vec dw = c.dw0;
  ops.conv2d_backward_weights(s, cview(c.x), cview(c.dy), dw.data(), nullptr, ws.data(),
                              ws.size());
  CHECK(same_bits(dw, full.dw));
}

TEST_CASE("gemm (oneDNN fp32 and bf16): matches a double reference; 1 and 2 threads agree",
          "[image-ops]") {
  CpuOps one(1), two(2);
  const int64_t M = 150, N = 33, K = 70;
  const Vec A = random_vec(M * K, 1), B = random_vec(N * K, 2), C0 = random_vec(M * N, 3);
  const auto run = [&](CpuOps& ops, bool bf) {
    Vec C = C0;
    if (bf) {
      Bf a = to_bf16(A), b = to_bf16(B);
      ops.gemm(false, true, M, N, K, 0.5f, cview(a), K, cview(b), K, 1.0f, C.data(), N);
    } else {
      ops.gemm(false, true, M, N, K, 0.5f, cview(A), K, cview(B), K, 1.0f, C.data(), N);
    }
    return C;
  };
  for (bool bf : {false, true}) {
    INFO("bf16 " << bf);
    const Vec a = bf ? rounded(A) : A, b = bf ? rounded(B) : B;
    std::vector<double> ref(C0.begin(), C0.end());
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0.0;
        for (int64_t k = 0; k < K; ++k)
          s += static_cast<double>(a[static_cast<size_t>(i * K + k)]) *
               b[static_cast<size_t>(j * K + k)];
        ref[static_cast<size_t>(i * N + j)] += 0.5 * s;
      }
    const Vec c1 = run(one, bf), c2 = run(two, bf);
    CHECK(rel_error(c1, ref) < 1e-6);
    CHECK(same_bits(c1, c2));
  }
}

TEST_CASE("sgd: the scheduled rate of step counters->step + 1, Nesterov", "[image-ops]") {
  CpuOps ops(2);
  SgdHyper h;
  h.lr = 0.1, h.momentum = 0.9, h.weight_decay = 5e-4, h.nesterov = true;
  h.schedule.kind = ScheduleKind::kMultiStep;
  h.schedule.milestones[0] = 2, h.schedule.n_milestones = 1;
  Vec p = random_vec(100, 1), g = random_vec(100, 2), buf = random_vec(100, 3);
  Vec p_ref = p, buf_ref = buf;
  const StepCounters counters{5, 0};  // step 6: past the milestone, lr 0.01
  ops.sgd(p.data(), g.data(), buf.data(), 100, h, &counters);
  const SgdStepScalars s = sgd_step_scalars(h, 6);
  CHECK(s.lr == static_cast<float>(0.1 * 0.1));
  for (size_t i = 0; i < p.size(); ++i) sgd_update(p_ref[i], g[i], buf_ref[i], s);
  CHECK(same_bits(p, p_ref));
  CHECK(same_bits(buf, buf_ref));
}

TEST_CASE("conv2d_backward's dx epilogue: both operands or neither, x's size and dx's dtype, "
          "a dx to write",
          "[image-ops]") {
  const ConvShape s = conv_shape(2, 3, 4, 4, 5, 3, 1, 1, false);
  Vec dx(static_cast<size_t>(s.x_elems())), r(dx.size()), p(dx.size()), short_one(dx.size() - 1);
  Bf pb(dx.size());
  CHECK(conv_dx_epilogue_problem(s, view(dx), {}).empty());
  CHECK(conv_dx_epilogue_problem(s, view(dx), {cview(r), cview(p)}).empty());
  CHECK(conv_dx_epilogue_problem(s, view(dx), {cview(r), ConstView{}}).find("both") !=
        std::string::npos);
  CHECK(conv_dx_epilogue_problem(s, View{}, {cview(r), cview(p)}).find("without a dx") !=
        std::string::npos);
  CHECK(conv_dx_epilogue_problem(s, view(dx), {cview(r), cview(short_one)}).find("95") !=
        std::string::npos);
  CHECK(conv_dx_epilogue_problem(s, view(dx), {cview(r), cview(pb)}).find("bf16") !=
        std::string::npos);
}
