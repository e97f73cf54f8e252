// The CUDA backend's Vision-Transformer ops (kernels/op_list.inc) against the CPU reference
// (CpuOps) and small double references: patchify / unpatchify, class_token_forward and
// copy_token_rows (permutations, copies and one fp32 sum per element: bit for bit, fp32 and
// bf16), softmax_xent with label smoothing, and attention without the causal mask (fp32
// with TF32 off, where only summation orders differ; bf16 on bf16 tensor cores within
// tests/support/attention_bf16_bound.h, and through the flash kernels within bf16
// rounding). All of them repeat their bits run after run, and a captured step of all of
// them replays the eager bytes.
#include <catch2/catch.hpp>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>

#include "tests/gpu/image_ops_rig.h"
#include "tests/support/attention_bf16_bound.h"
using namespace noeira::test::image_gpu;
#endif

using namespace noeira;
using namespace noeira::test;

#if defined(NOEIRA_WITH_CUDA)
namespace {

PatchShape patch_shape(int64_t B, int64_t C, int64_t H, int64_t W, int64_t p) {
  PatchShape s;
  s.batch = B, s.channels = C, s.height = H, s.width = W, s.patch = p;
  return s;
}

// Every element within abs + rel * |want|.
bool all_close(const std::vector<float>& got, const std::vector<float>& want, double rel,
               double abs) {
  REQUIRE(got.size() == want.size());
  for (size_t e = 0; e < got.size(); ++e) {
    const double d = std::abs(static_cast<double>(got[e]) - want[e]);
    if (!(d <= abs + rel * std::abs(static_cast<double>(want[e])))) {
      UNSCOPED_INFO("element " << e << ": got " << got[e] << ", want " << want[e]);
      return false;
    }
  }
  return true;
}

std::vector<float> as_floats(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

// Attention in double from the (widened) stored values: out (B, T, C), each row's
// log-sum-exp (B, nh, T), the probabilities (B, nh, T, T; 0 where masked) and dqkv.
struct AttnRef {
  std::vector<double> out, lse, att, dqkv;
};

AttnRef reference_attention(const std::vector<float>& qkv, const std::vector<float>& dout,
                            int64_t B, int64_t T, int64_t C, int64_t nh, bool causal) {
  const int64_t hd = C / nh;
  const double scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  AttnRef r;
  r.out.assign(B * T * C, 0.0);
  r.lse.assign(B * nh * T, 0.0);
  r.att.assign(B * nh * T * T, 0.0);
  r.dqkv.assign(3 * B * T * C, 0.0);
  auto at = [&](int64_t b, int64_t t, int64_t part, int64_t h, int64_t d) {
    return (b * T + t) * 3 * C + part * C + h * hd + d;
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < nh; ++h) {
      double* P = r.att.data() + (b * nh + h) * T * T;
      for (int64_t i = 0; i < T; ++i) {
        const int64_t end = causal ? i + 1 : T;
        std::vector<double> s(end);
        double mx = -INFINITY;
        for (int64_t j = 0; j < end; ++j) {
          double dot = 0.0;
          for (int64_t d = 0; d < hd; ++d) dot += double{qkv[at(b, i, 0, h, d)]} * qkv[at(b, j, 1, h, d)];
          s[j] = dot * scale;
          mx = std::max(mx, s[j]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j < end; ++j) sum += std::exp(s[j] - mx);
        r.lse[(b * nh + h) * T + i] = mx + std::log(sum);
        for (int64_t j = 0; j < end; ++j) P[i * T + j] = std::exp(s[j] - mx) / sum;
        for (int64_t d = 0; d < hd; ++d) {
          double o = 0.0;
          for (int64_t j = 0; j < end; ++j) o += P[i * T + j] * qkv[at(b, j, 2, h, d)];
          r.out[(b * T + i) * C + h * hd + d] = o;
        }
      }
      for (int64_t i = 0; i < T; ++i) {
        const int64_t end = causal ? i + 1 : T;
        std::vector<double> dP(end);
        double D = 0.0;
        for (int64_t j = 0; j < end; ++j) {
          double dot = 0.0;
          for (int64_t d = 0; d < hd; ++d)
            dot += double{dout[(b * T + i) * C + h * hd + d]} * qkv[at(b, j, 2, h, d)];
          dP[j] = dot;
          D += dot * P[i * T + j];
        }
        for (int64_t j = 0; j < end; ++j) {
          const double ds = P[i * T + j] * (dP[j] - D) * scale;
          for (int64_t d = 0; d < hd; ++d) {
            r.dqkv[at(b, i, 0, h, d)] += ds * qkv[at(b, j, 1, h, d)];
            r.dqkv[at(b, j, 1, h, d)] += ds * qkv[at(b, i, 0, h, d)];
            r.dqkv[at(b, j, 2, h, d)] += P[i * T + j] * dout[(b * T + i) * C + h * hd + d];
          }
        }
      }
    }
  return r;
}

// Softmax cross-entropy with label smoothing eps in double (torch's formula): the summed
// row losses and dlogits (softmax - target) / B.
std::pair<double, std::vector<double>> reference_xent(const std::vector<float>& z,
                                                      const std::vector<int32_t>& y, int64_t B,
                                                      int64_t C, double eps) {
  double loss = 0.0;
  std::vector<double> d(B * C);
  for (int64_t i = 0; i < B; ++i) {
    const float* row = z.data() + i * C;
    double mx = -INFINITY, zsum = 0.0;
    for (int64_t j = 0; j < C; ++j) mx = std::max(mx, double{row[j]}), zsum += row[j];
    double sum = 0.0;
    for (int64_t j = 0; j < C; ++j) sum += std::exp(row[j] - mx);
    const double lse = mx + std::log(sum);
    loss += (1.0 - eps) * (lse - row[y[i]]) + eps * (lse - zsum / C);
    for (int64_t j = 0; j < C; ++j)
      d[i * C + j] =
          (std::exp(row[j] - lse) - ((j == y[i] ? 1.0 - eps : 0.0) + eps / C)) / B;
  }
  return {loss, d};
}

// The bytes of a device array, for run-to-run and replay comparisons of any element type.
template <class T>
std::vector<unsigned char> bytes_of(const DeviceArray<T>& a) {
  const std::vector<T> v = a.download();
  std::vector<unsigned char> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace
#endif

TEST_CASE("cuda: patchify and unpatchify equal the CPU bit for bit, fp32 and bf16", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  // CIFAR-sized 4x4 patches, non-square images, one patch per image, 1x1 patches.
  const PatchShape shapes[] = {patch_shape(3, 3, 32, 32, 4), patch_shape(2, 3, 8, 12, 4),
                               patch_shape(2, 2, 5, 5, 5), patch_shape(2, 3, 3, 6, 1),
                               patch_shape(1, 5, 6, 4, 2)};
  uint32_t seed = 2000;
  for (const PatchShape& s : shapes) {
    for (const bool bf16 : {false, true}) {
      INFO("patches of " << s.batch << "x" << s.channels << "x" << s.height << "x" << s.width
                         << ", patch " << s.patch << ", bf16 " << bf16);
      const size_t n = static_cast<size_t>(s.elems());
      REQUIRE(static_cast<int64_t>(n) == s.batch * s.patches() * s.patch_elems());
      const std::vector<float> xf = random_floats(n, seed++, -3.0f, 3.0f);
      const std::vector<float> dyf = random_floats(n, seed++);
      const auto run = [&](auto tag) {
        using T = typename decltype(tag)::type;
        std::vector<T> x = stored<T>(xf), dy = stored<T>(dyf);
        // The contract, on the host: y[i] = x[src(i)], dx[src(i)] = dy[i].
        std::vector<T> y_want(n), dx_want(n);
        for (size_t i = 0; i < n; ++i) {
          const int64_t src = s.patch_source(static_cast<int64_t>(i));
          y_want[i] = x[src];
          dx_want[src] = dy[i];
        }
        std::vector<T> y_cpu(n), dx_cpu(n);
        cpu.patchify(s, host_view(x), host_view(y_cpu));
        cpu.unpatchify(s, host_view(dy), host_view(dx_cpu));
        CHECK(same_values(y_cpu, y_want));
        CHECK(same_values(dx_cpu, dx_want));

        // Garbage in the outputs first: every element must be overwritten.
        const std::vector<T> garbage = stored<T>(random_floats(n, seed + 99, -9.0f, 9.0f));
        DeviceArray<T> gx(gpu, x), gdy(gpu, dy), gy(gpu, garbage), gdx(gpu, garbage),
            gback(gpu, garbage);
        gpu.ops->patchify(s, gx.view(), gy.view());
        gpu.ops->unpatchify(s, gdy.view(), gdx.view());
        gpu.ops->unpatchify(s, gy.view(), gback.view());  // the round trip gives x back
        CHECK(same_values(gy.download(), y_want));
        CHECK(same_values(gdx.download(), dx_want));
        CHECK(same_values(gback.download(), x));
      };
      if (bf16)
        run(StorageTag<bf16_t>{});
      else
        run(StorageTag<float>{});
    }
  }
#endif
}

TEST_CASE("cuda: class_token_forward and copy_token_rows equal the CPU bit for bit, fp32 and "
          "bf16",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  struct Shape {
    int64_t B, N, C;
  };
  uint32_t seed = 2100;
  for (const Shape sh : {Shape{2, 16, 64}, Shape{3, 5, 7}, Shape{1, 1, 1}, Shape{4, 64, 192}}) {
    const int64_t B = sh.B, N = sh.N, C = sh.C, T = N + 1;
    for (const bool bf16 : {false, true}) {
      INFO("B " << B << " N " << N << " C " << C << " bf16 " << bf16);
      const std::vector<float> xf = random_floats(B * N * C, seed++, -2.0f, 2.0f);
      const std::vector<float> cls = random_floats(C, seed++);
      const std::vector<float> pos = random_floats(T * C, seed++);
      const std::vector<float> dyf = random_floats(B * T * C, seed++);
      const std::vector<float> fill = random_floats(B * (N + 3) * C, seed++, -9.0f, 9.0f);
      const auto run = [&](auto tag) {
        using S = typename decltype(tag)::type;
        std::vector<S> x = stored<S>(xf), dy = stored<S>(dyf);
        // y (B, T, C): the fp32 sum of its two operands, rounded once.
        std::vector<S> y_want(B * T * C);
        for (int64_t b = 0; b < B; ++b)
          for (int64_t t = 0; t < T; ++t)
            for (int64_t c = 0; c < C; ++c) {
              const float v = t == 0 ? cls[c] + pos[c]
                                     : load_f32(x[(b * N + t - 1) * C + c]) + pos[t * C + c];
              store_f32(y_want[(b * T + t) * C + c], v);
            }
        std::vector<S> y_cpu(B * T * C);
        cpu.class_token_forward(host_view(x), cls.data(), pos.data(), host_view(y_cpu), B, N, C);
        CHECK(same_values(y_cpu, y_want));

        // The copies: the class token out of y (B, 1, C); the patch tokens' gradient out of
        // dy (B, N, C); dy's N rows into the middle of a (B, N + 3, C) tensor whose other
        // rows stay as they were.
        std::vector<S> cls_want(B * C), dx_want(B * N * C), mid_want = stored<S>(fill);
        for (int64_t b = 0; b < B; ++b)
          for (int64_t c = 0; c < C; ++c) {
            cls_want[b * C + c] = y_want[(b * T) * C + c];
            for (int64_t t = 0; t < N; ++t) {
              dx_want[(b * N + t) * C + c] = dy[(b * T + 1 + t) * C + c];
              mid_want[(b * (N + 3) + 2 + t) * C + c] = dy[(b * T + 1 + t) * C + c];
            }
          }
        std::vector<S> cls_cpu(B * C), dx_cpu(B * N * C), mid_cpu = stored<S>(fill);
        cpu.copy_token_rows(host_view(y_cpu), T, 0, host_view(cls_cpu), 1, 0, 1, B, C);
        cpu.copy_token_rows(host_view(dy), T, 1, host_view(dx_cpu), N, 0, N, B, C);
        cpu.copy_token_rows(host_view(dy), T, 1, host_view(mid_cpu), N + 3, 2, N, B, C);
        CHECK(same_values(cls_cpu, cls_want));
        CHECK(same_values(dx_cpu, dx_want));
        CHECK(same_values(mid_cpu, mid_want));

        const std::vector<S> garbage = stored<S>(random_floats(B * T * C, seed + 99, -9.0f, 9.0f));
        DeviceArray<S> gx(gpu, x), gy(gpu, garbage), gdy(gpu, dy), gcls(gpu, B * C),
            gdx(gpu, B * N * C), gmid(gpu, stored<S>(fill));
        DeviceArray<float> gclsp(gpu, cls), gpos(gpu, pos);
        gpu.ops->class_token_forward(gx.view(), gclsp.get(), gpos.get(), gy.view(), B, N, C);
        gpu.ops->copy_token_rows(gy.view(), T, 0, gcls.view(), 1, 0, 1, B, C);
        gpu.ops->copy_token_rows(gdy.view(), T, 1, gdx.view(), N, 0, N, B, C);
        gpu.ops->copy_token_rows(gdy.view(), T, 1, gmid.view(), N + 3, 2, N, B, C);
        CHECK(same_values(gy.download(), y_want));
        CHECK(same_values(gcls.download(), cls_want));
        CHECK(same_values(gdx.download(), dx_want));
        CHECK(same_values(gmid.download(), mid_want));
      };
      if (bf16)
        run(StorageTag<bf16_t>{});
      else
        run(StorageTag<float>{});
    }
  }
#endif
}

TEST_CASE("cuda: softmax_xent with label smoothing 0.1 matches the CPU and torch's formula",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  const float eps = 0.1f;
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1},    {1, 10},    {7, 10},
                                                {128, 10}, {1000, 65}, {33, 1001}};
  uint32_t seed = 2200;
  for (const auto& [B, C] : shapes) {
    INFO("B " << B << " C " << C);
    const std::vector<float> logits0 = random_floats(B * C, seed++, -5.0f, 5.0f);
    const std::vector<int32_t> labels0 = random_labels(B, static_cast<int32_t>(C), seed++);
    const StepCounters counters0{5, 2};
    const auto [loss_ref, dlogits_ref] = reference_xent(logits0, labels0, B, C, eps);

    // fp32: the CPU, a training call and an evaluation call into one accumulator.
    LossStats stats_cpu{};
    std::vector<float> dlogits_cpu(B * C), history_cpu(4, -1.0f);
    cpu.softmax_xent(view_of(logits0), labels0.data(), B, C, eps, view_of(dlogits_cpu),
                     &stats_cpu, history_cpu.data(), &counters0);
    cpu.softmax_xent(view_of(logits0), labels0.data(), B, C, eps, View{}, &stats_cpu, nullptr,
                     &counters0);
    CHECK(std::abs(stats_cpu.loss_sum - 2 * loss_ref) <= 1e-5 * std::abs(2 * loss_ref) + 1e-9);

    DeviceArray<float> logits(gpu, logits0), dlogits(gpu, B * C);
    DeviceArray<float> history(gpu, std::vector<float>(4, -1.0f));
    DeviceArray<int32_t> labels(gpu, labels0);
    DeviceArray<StepCounters> counters(gpu, std::vector<StepCounters>{counters0});
    DeviceArray<LossStats> stats(gpu, std::vector<LossStats>{LossStats{}});
    gpu.ops->softmax_xent(logits.view(), labels.get(), B, C, eps, dlogits.view(), stats.get(),
                          history.get(), counters.get());
    gpu.ops->softmax_xent(logits.view(), labels.get(), B, C, eps, View{}, stats.get(), nullptr,
                          counters.get());
    const LossStats got = stats.download()[0];
    const std::vector<float> d = dlogits.download(), h = history.download();
    CHECK(std::abs(got.loss_sum - stats_cpu.loss_sum) <=
          1e-5 * std::abs(stats_cpu.loss_sum) + 1e-9);
    CHECK(std::abs(got.loss_sum - 2 * loss_ref) <= 1e-5 * std::abs(2 * loss_ref) + 1e-9);
    CHECK(got.correct == stats_cpu.correct);
    CHECK(got.count == stats_cpu.count);
    CHECK(rel_error(d, dlogits_cpu) < 1e-5);
    CHECK(rel_error(d, as_floats(dlogits_ref)) < 1e-5);
    CHECK(h[0] == -1.0f);
    CHECK(h[3] == -1.0f);
    CHECK(std::abs(h[2] - history_cpu[2]) <= 1e-5 * std::abs(history_cpu[2]) + 1e-9);

    // Smoothing changes the loss and the gradient (the flag is honoured).
    DeviceArray<float> dlogits0(gpu, B * C);
    DeviceArray<LossStats> stats0(gpu, std::vector<LossStats>{LossStats{}});
    gpu.ops->softmax_xent(logits.view(), labels.get(), B, C, 0.0f, dlogits0.view(), stats0.get(),
                          nullptr, counters.get());
    if (C > 1) CHECK_FALSE(same_bytes(dlogits0.download(), d));

    // bf16 logits: the GPU's bf16 kernel gives the fp32 kernel's loss bits on the widened
    // logits and its dlogits rounded; against the CPU's bf16 op within bf16 rounding.
    const std::vector<bf16_t> logits_b0 = to_bf16(logits0);
    LossStats stats_bcpu{};
    std::vector<bf16_t> dlogits_bcpu(B * C);
    cpu.softmax_xent(view_of(logits_b0), labels0.data(), B, C, eps, view_of(dlogits_bcpu),
                     &stats_bcpu, nullptr, &counters0);
    DeviceArray<bf16_t> logits_b(gpu, logits_b0), dlogits_b(gpu, B * C);
    DeviceArray<float> logits_w(gpu, to_f32(logits_b0)), dlogits_w(gpu, B * C);
    DeviceArray<LossStats> stats_b(gpu, std::vector<LossStats>{LossStats{}}),
        stats_w(gpu, std::vector<LossStats>{LossStats{}});
    gpu.ops->softmax_xent(logits_b.view(), labels.get(), B, C, eps, dlogits_b.view(),
                          stats_b.get(), nullptr, counters.get());
    gpu.ops->softmax_xent(logits_w.view(), labels.get(), B, C, eps, dlogits_w.view(),
                          stats_w.get(), nullptr, counters.get());
    const LossStats gb = stats_b.download()[0], gw = stats_w.download()[0];
    CHECK(std::memcmp(&gb.loss_sum, &gw.loss_sum, sizeof gb.loss_sum) == 0);
    CHECK(gb.correct == gw.correct);
    const std::vector<bf16_t> db = dlogits_b.download();
    CHECK(db == to_bf16(dlogits_w.download()));
    CHECK(std::abs(gb.loss_sum - stats_bcpu.loss_sum) <=
          1e-5 * std::abs(stats_bcpu.loss_sum) + 1e-9);
    CHECK(gb.correct == stats_bcpu.correct);
    CHECK_FALSE(has_nan(to_f32(db)));
    CHECK(rel_error(to_f32(db), to_f32(dlogits_bcpu)) < 1e-2);
  }
#endif
}

TEST_CASE("cuda: attention without the causal mask matches the CPU and a double reference, "
          "fp32 and bf16",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  // bf16 twice: the GEMM path (the default up to T = 2048) and the flash kernels.
  for (const bool flash : {false, true}) {
    INFO("flash " << flash);
    Backend gpu = gpu_backend(/*tf32=*/false, flash);
    CpuOps cpu(1);
    struct Shape {
      int64_t B, T, C, nh;
    };
    // A query-tile tail (65 = 64 + 1) and key-tile tails (65 = 2 * 32 + 1, 17, 33), hd 32;
    // hd 128 (the flash kernels' 32-row tiles); a tiny head (hd 4, padded to 16).
    const Shape shapes[] = {{3, 65, 128, 4}, {3, 17, 128, 4}, {2, 33, 128, 1}, {2, 5, 12, 3}};
    uint32_t seed = 2300;
    for (const Shape s : shapes) {
      const int64_t btc = s.B * s.T * s.C, att_n = s.B * s.nh * s.T * s.T;
      const std::vector<float> qkv0 = random_floats(3 * btc, seed++, -2.0f, 2.0f);
      const std::vector<float> dout0 = random_floats(btc, seed++);
      for (const bool causal : {false, true}) {
        for (const bool bf : {false, true}) {
          INFO("B " << s.B << " T " << s.T << " C " << s.C << " nh " << s.nh << " causal "
                    << causal << " bf16 " << bf);
          const DType dtype = bf ? DType::kBF16 : DType::kF32;
          const size_t ws_bytes = gpu.ops->attention_workspace_bytes(s.B, s.T, s.C, s.nh, dtype);
          REQUIRE(ws_bytes > 0);
          DeviceWorkspace ws(gpu, ws_bytes);
          std::vector<double> hws =
              host_workspace(cpu.attention_workspace_bytes(s.B, s.T, s.C, s.nh, dtype));
          const int64_t saved = gpu.ops->attention_saved_floats(s.B, s.T, s.nh, dtype);
          CHECK(saved == (bf && flash ? s.B * s.nh * s.T : att_n));
          std::vector<float> att_cpu(att_n), att_gpu;
          std::vector<float> qkv_in, dout_in, out_cpu, dqkv_cpu, out_gpu, dqkv_gpu;
          const auto run = [&](auto tag) {
            using S = typename decltype(tag)::type;
            std::vector<S> qkvs = stored<S>(qkv0), douts = stored<S>(dout0), outs(btc),
                           dqkvs(3 * btc);
            qkv_in = to_f32(qkvs);
            dout_in = to_f32(douts);
            cpu.attention_forward(host_view(qkvs), host_view(outs), att_cpu.data(), s.B, s.T, s.C,
                                  s.nh, causal, hws.data());
            cpu.attention_backward(host_view(douts), host_view(qkvs), att_cpu.data(),
                                   host_view(dqkvs), s.B, s.T, s.C, s.nh, causal, hws.data());
            out_cpu = to_f32(outs);
            dqkv_cpu = to_f32(dqkvs);
            // Garbage in the outputs first: every element must be overwritten.
            DeviceArray<S> qkv(gpu, qkvs), dout(gpu, douts);
            DeviceArray<S> out(gpu, stored<S>(random_floats(btc, seed + 50, -9.0f, 9.0f)));
            DeviceArray<S> dqkv(gpu, stored<S>(random_floats(3 * btc, seed + 51, -9.0f, 9.0f)));
            DeviceArray<float> att(gpu, random_floats(saved, seed + 52, -9.0f, 9.0f));
            gpu.ops->attention_forward(qkv.view(), out.view(), att.get(), s.B, s.T, s.C, s.nh,
                                       causal, ws.get());
            gpu.ops->attention_backward(dout.view(), qkv.view(), att.get(), dqkv.view(), s.B, s.T,
                                        s.C, s.nh, causal, ws.get());
            out_gpu = to_f32(out.download());
            dqkv_gpu = to_f32(dqkv.download());
            att_gpu = att.download();
          };
          if (bf)
            run(StorageTag<bf16_t>{});
          else
            run(StorageTag<float>{});
          const AttnRef ref = reference_attention(qkv_in, dout_in, s.B, s.T, s.C, s.nh, causal);
          CHECK_FALSE(has_nan(out_gpu));
          CHECK_FALSE(has_nan(dqkv_gpu));
          if (!bf) {
            // The probabilities: the CPU's and the reference's; without the mask every entry
            // is positive, with it exactly the masked ones are 0.
            CHECK(rel_error(att_gpu, att_cpu) < 1e-5);
            CHECK(rel_error(att_gpu, as_floats(ref.att)) < 1e-5);
            bool zeros_right = true;
            for (int64_t r = 0; r < s.B * s.nh * s.T; ++r)
              for (int64_t j = 0; j < s.T; ++j) {
                const bool masked = causal && j > r % s.T;
                zeros_right &= masked ? att_gpu[r * s.T + j] == 0.0f : att_gpu[r * s.T + j] > 0.0f;
              }
            CHECK(zeros_right);
            CHECK(rel_error(out_gpu, out_cpu) < 1e-5);
            CHECK(rel_error(dqkv_gpu, dqkv_cpu) < 1e-5);
            CHECK(rel_error(out_gpu, as_floats(ref.out)) < 1e-5);
            CHECK(rel_error(dqkv_gpu, as_floats(ref.dqkv)) < 1e-5);
          } else {
            if (flash) {  // att holds each row's log-sum-exp
              CHECK(all_close(att_gpu, as_floats(ref.lse), 1e-5, 1e-4));
              CHECK(all_close(out_gpu, out_cpu, 2e-2, 1e-2));
              CHECK(all_close(dqkv_gpu, dqkv_cpu, 2e-2, 1e-2));
            } else {
              // The probabilities, from the same bf16-valued inputs in fp32 math; the bf16
              // tensor-core products within tests/support/attention_bf16_bound.h.
              CHECK(rel_error(att_gpu, att_cpu) < 1e-5);
              const attention_bf16::Bounds bd = attention_bf16::bounds(
                  qkv_in, dout_in, att_cpu, att_gpu, out_cpu, dqkv_cpu, s.B, s.T, s.C, s.nh,
                  causal);
              CHECK(attention_bf16::worst(out_gpu, out_cpu, bd.out).ratio <= 1.0);
              CHECK(attention_bf16::worst(dqkv_gpu, dqkv_cpu, bd.dqkv).ratio <= 1.0);
            }
            CHECK(rel_error(out_gpu, out_cpu) < 1e-2);
            CHECK(rel_error(dqkv_gpu, dqkv_cpu) < 1e-2);
            CHECK(all_close(out_gpu, as_floats(ref.out), 2e-2, 1e-2));
            CHECK(all_close(dqkv_gpu, as_floats(ref.dqkv), 2e-2, 1e-2));
            CHECK(rel_error(out_gpu, as_floats(ref.out)) < 1e-2);
            CHECK(rel_error(dqkv_gpu, as_floats(ref.dqkv)) < 1e-2);
          }
        }
      }
    }
  }
#endif
}

TEST_CASE("cuda: the ViT ops repeat their bits, and a captured step replays them", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  const PatchShape ps = patch_shape(2, 3, 16, 16, 4);  // N = 16 patches of D = 48
  const int64_t B = ps.batch, N = ps.patches(), D = ps.patch_elems(), T = N + 1;
  const int64_t C = 64, nh = 4, btc = B * T * C, classes = 10;
  const int64_t img = ps.elems();
  // Inputs.
  DeviceArray<float> x(gpu, random_floats(img, 80, -2.0f, 2.0f));
  DeviceArray<bf16_t> xb(gpu, random_bf16(img, 81, -2.0f, 2.0f));
  DeviceArray<float> cls(gpu, random_floats(D, 82)), pos(gpu, random_floats(T * D, 83));
  DeviceArray<float> qkv(gpu, random_floats(3 * btc, 84, -2.0f, 2.0f));
  DeviceArray<bf16_t> qkvb(gpu, random_bf16(3 * btc, 85, -2.0f, 2.0f));
  DeviceArray<float> dout(gpu, random_floats(btc, 86));
  DeviceArray<bf16_t> doutb(gpu, random_bf16(btc, 87));
  DeviceArray<float> logits(gpu, random_floats(B * classes, 88, -5.0f, 5.0f));
  DeviceArray<bf16_t> logitsb(gpu, random_bf16(B * classes, 89, -5.0f, 5.0f));
  DeviceArray<int32_t> labels(gpu, random_labels(B, classes, 90));
  DeviceArray<StepCounters> counters(gpu, std::vector<StepCounters>{StepCounters{0, 1}});
  // Outputs.
  DeviceArray<float> patches(gpu, img), back(gpu, img), tokens(gpu, B * T * D),
      cls_rows(gpu, B * D), dpatches(gpu, B * N * D);
  DeviceArray<bf16_t> patchesb(gpu, img), tokensb(gpu, B * T * D), cls_rowsb(gpu, B * D);
  DeviceArray<float> dlogits(gpu, B * classes), history(gpu, 4);
  DeviceArray<bf16_t> dlogitsb(gpu, B * classes);
  DeviceArray<LossStats> stats(gpu, 1), statsb(gpu, 1);
  DeviceArray<float> out(gpu, btc), att(gpu, B * nh * T * T), dqkv(gpu, 3 * btc);
  DeviceArray<bf16_t> outb(gpu, btc), dqkvb(gpu, 3 * btc);
  // What bf16 attention keeps (the probabilities on the GEMM path; named for the flash
  // kernels' log-sum-exp, which NOEIRA_ATTENTION=flash keeps).
  DeviceArray<float> lse(gpu, gpu.ops->attention_saved_floats(B, T, nh, DType::kBF16));
  DeviceWorkspace ws(gpu, gpu.ops->attention_workspace_bytes(B, T, C, nh, DType::kF32));
  DeviceWorkspace wsb(gpu, gpu.ops->attention_workspace_bytes(B, T, C, nh, DType::kBF16));

  auto step = [&] {
    gpu.ops->patchify(ps, x.view(), patches.view());
    gpu.ops->unpatchify(ps, patches.view(), back.view());
    gpu.ops->patchify(ps, xb.view(), patchesb.view());
    gpu.ops->class_token_forward(patches.view(), cls.get(), pos.get(), tokens.view(), B, N, D);
    gpu.ops->class_token_forward(patchesb.view(), cls.get(), pos.get(), tokensb.view(), B, N, D);
    gpu.ops->copy_token_rows(tokens.view(), T, 0, cls_rows.view(), 1, 0, 1, B, D);
    gpu.ops->copy_token_rows(tokensb.view(), T, 0, cls_rowsb.view(), 1, 0, 1, B, D);
    gpu.ops->copy_token_rows(tokens.view(), T, 1, dpatches.view(), N, 0, N, B, D);
    gpu.ops->softmax_xent(logits.view(), labels.get(), B, classes, 0.1f, dlogits.view(),
                          stats.get(), history.get(), counters.get());
    gpu.ops->softmax_xent(logitsb.view(), labels.get(), B, classes, 0.1f, dlogitsb.view(),
                          statsb.get(), nullptr, counters.get());
    gpu.ops->attention_forward(qkv.view(), out.view(), att.get(), B, T, C, nh, /*causal=*/false,
                               ws.get());
    gpu.ops->attention_backward(dout.view(), qkv.view(), att.get(), dqkv.view(), B, T, C, nh,
                                /*causal=*/false, ws.get());
    gpu.ops->attention_forward(qkvb.view(), outb.view(), lse.get(), B, T, C, nh,
                               /*causal=*/false, wsb.get());
    gpu.ops->attention_backward(doutb.view(), qkvb.view(), lse.get(), dqkvb.view(), B, T, C, nh,
                                /*causal=*/false, wsb.get());
  };
  // Garbage in every output (each must be overwritten), zeroed accumulators. The loss
  // history is the exception: softmax_xent writes only history[batch_in_epoch], so the
  // other entries get the same fill every time (fresh garbage there would differ from run
  // to run).
  uint32_t scribble_seed = 900;
  auto reset = [&] {
    for (DeviceArray<float>* a : {&patches, &back, &tokens, &cls_rows, &dpatches, &dlogits,
                                  &out, &att, &dqkv, &lse})
      a->upload(random_floats(a->size(), scribble_seed++, -9.0f, 9.0f));
    for (DeviceArray<bf16_t>* a : {&patchesb, &tokensb, &cls_rowsb, &dlogitsb, &outb, &dqkvb})
      a->upload(random_bf16(a->size(), scribble_seed++, -9.0f, 9.0f));
    history.upload(std::vector<float>(history.size(), -1.0f));
    stats.upload(std::vector<LossStats>{LossStats{}});
    statsb.upload(std::vector<LossStats>{LossStats{}});
  };
  auto results = [&] {
    std::vector<std::vector<unsigned char>> r;
    for (const DeviceArray<float>* a : {&patches, &back, &tokens, &cls_rows, &dpatches,
                                        &dlogits, &history, &out, &att, &dqkv, &lse})
      r.push_back(bytes_of(*a));
    for (const DeviceArray<bf16_t>* a :
         {&patchesb, &tokensb, &cls_rowsb, &dlogitsb, &outb, &dqkvb})
      r.push_back(bytes_of(*a));
    r.push_back(bytes_of(stats));
    r.push_back(bytes_of(statsb));
    return r;
  };
  auto same = [](const std::vector<std::vector<unsigned char>>& a,
                 const std::vector<std::vector<unsigned char>>& b) {
    bool ok = a.size() == b.size();
    for (size_t i = 0; ok && i < a.size(); ++i) {
      INFO("result " << i);
      CHECK(a[i] == b[i]);
      ok = ok && a[i] == b[i];
    }
    return ok;
  };

  reset();
  step();  // eager, which also plans every GEMM before the capture
  const auto first = results();
  CHECK(same_bytes(to_f32(back.download()), to_f32(x.download())));  // unpatchify o patchify
  CHECK(history.download()[1] != -1.0f);  // the batch's entry (batch_in_epoch 1) is written
  reset();
  step();
  CHECK(same(results(), first));  // run to run

  reset();
  REQUIRE(gpu.stream->begin_capture().ok());
  step();
  Result<std::unique_ptr<StepGraph>> graph = gpu.stream->end_capture();
  REQUIRE(graph.ok());
  for (int replay = 0; replay < 2; ++replay) {
    INFO("replay " << replay);
    reset();
    (*graph)->replay();
    CHECK(same(results(), first));
  }
#endif
}
