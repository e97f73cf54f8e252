// Every bf16 CUDA op (BF16Policy) against the CPU bf16 op (the reference) on random inputs,
// odd sizes and unaligned buffers included (offset 1 element: the scalar paths instead of
// the 16-byte vector ones). Both sides do the same fp32 math and round with
// kernels/common/bf16.h, so results are bit-identical, except where a transcendental
// function (GELU's tanh, exp) differs between the host and device libraries: there the
// normwise relative error is < 1e-2, nothing is NaN and at least 99% of the elements keep
// the same bits. Reductions sum in the GPU's fixed order (as the fp32 kernels, whose bits
// the bf16 variants reproduce on widened inputs) and match the CPU within 1e-5. bf16 gemm:
// < 1e-5 against the CPU's bf16 gemm, and 1e-3..1e-2 against the fp32 GEMM (bf16 keeps 8
// mantissa bits).
#include <catch2/catch.hpp>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include <cmath>
#include <numeric>

#include "tests/gpu/bf16_match.h"
#include "tests/gpu/gpu_rig.h"
#endif

using namespace noeira;
using namespace noeira::test;

#if defined(NOEIRA_WITH_CUDA)
namespace {

// The bf16 bits of each fp32 value, what a bf16 kernel stores for the same fp32 result.
std::vector<bf16_t> rounded(const std::vector<float>& v) { return to_bf16(v); }

}  // namespace
#endif

TEST_CASE("cuda: bf16 casts, bf16 add and add_relu_backward and the bf16 gather_rows equal the "
          "CPU bit for bit",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  uint32_t seed = 1000;
  // Ties (even stays, odd rounds up), NaN, infinities, signed zero, subnormals, the
  // largest float (rounds to infinity).
  const float specials[] = {f32_from_bits(0x3f808000u), f32_from_bits(0x3f818000u),
                            f32_from_bits(0x3f808001u), NAN,
                            -NAN,                        INFINITY,
                            -INFINITY,                   -0.0f,
                            f32_from_bits(0x00000001u),  f32_from_bits(0x807fffffu),
                            f32_from_bits(0x7f7fffffu),  -2.5f};
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{17}, int64_t{1001},
                    int64_t{65539}}) {
    for (int64_t offset : {int64_t{0}, int64_t{1}}) {
      INFO("n " << n << " offset " << offset);
      const size_t total = static_cast<size_t>(n + offset);
      std::vector<float> x0 = random_floats(total, seed++, -4.0f, 4.0f);
      for (size_t k = 0; k < std::size(specials) && offset + k < total; ++k)
        x0[offset + k] = specials[k];

      std::vector<bf16_t> y_cpu(total, 0);
      cpu.cast(view_of(x0, offset), view_of(y_cpu, offset));
      DeviceArray<float> x(gpu, x0);
      DeviceArray<bf16_t> y(gpu, total);
      gpu.ops->cast(x.view(offset), y.view(offset));
      CHECK(y.download() == y_cpu);

      std::vector<float> back_cpu(total, 0.0f);
      cpu.cast(view_of(y_cpu, offset), view_of(back_cpu, offset));
      DeviceArray<float> back(gpu, total);
      gpu.ops->cast(y.view(offset), back.view(offset));
      CHECK(same_bytes(back.download(), back_cpu));

      const std::vector<bf16_t> a0 = random_bf16(total, seed++, -2.0f, 2.0f);
      const std::vector<bf16_t> b0 = random_bf16(total, seed++, -2.0f, 2.0f);
      std::vector<bf16_t> sum_cpu(total, 0);
      cpu.add(view_of(a0, offset), view_of(b0, offset), view_of(sum_cpu, offset));
      DeviceArray<bf16_t> a(gpu, a0), b(gpu, b0), sum(gpu, total);
      gpu.ops->add(a.view(offset), b.view(offset), sum.view(offset));
      CHECK(sum.download() == sum_cpu);

      // add_relu_backward: the bf16 sum rounded as add rounds it, ReLU's mask from post.
      const std::vector<bf16_t> p0 = random_bf16(total, seed++, -2.0f, 2.0f);
      std::vector<bf16_t> masked_cpu(total, 0);
      cpu.add_relu_backward(view_of(a0, offset), view_of(b0, offset), view_of(p0, offset),
                            view_of(masked_cpu, offset));
      DeviceArray<bf16_t> p(gpu, p0), masked(gpu, total);
      gpu.ops->add_relu_backward(a.view(offset), b.view(offset), p.view(offset),
                                 masked.view(offset));
      CHECK(masked.download() == masked_cpu);
    }
  }

  const int64_t count = 50, rows = 8;
  std::vector<int32_t> perm0(count);
  std::iota(perm0.begin(), perm0.end(), 0);
  std::shuffle(perm0.begin(), perm0.end(), std::mt19937(7));
  const StepCounters counters0{11, 3};  // rows 24..31 of the permutation
  DeviceArray<int32_t> perm(gpu, perm0);
  DeviceArray<StepCounters> counters(gpu, std::vector<StepCounters>{counters0});
  // 784 and 16: 8-element vector path; 12, 5, 1: element by element.
  for (int64_t row_elems : {int64_t{784}, int64_t{16}, int64_t{12}, int64_t{5}, int64_t{1}}) {
    INFO("gather row_elems " << row_elems);
    const std::vector<float> src0 = random_floats(count * row_elems, 1100 + row_elems);
    std::vector<bf16_t> dst_cpu(rows * row_elems);
    cpu.gather_rows(view_of(src0), perm0.data(), rows, row_elems, &counters0, view_of(dst_cpu));
    DeviceArray<float> src(gpu, src0);
    DeviceArray<bf16_t> dst(gpu, rows * row_elems);
    gpu.ops->gather_rows(src.view(), perm.get(), rows, row_elems, counters.get(), dst.view());
    CHECK(dst.download() == dst_cpu);
  }
#endif
}

TEST_CASE("cuda: bf16 bias_act, act_forward and act_backward match the CPU", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  // N = 4, 13: groups of 8 span rows (the bias column wraps inside a group).
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {7, 13}, {64, 4}, {33, 1001}, {128, 512}};
  uint32_t seed = 1200;
  for (const auto& [M, N] : shapes) {
    const int64_t n = M * N;
    for (int64_t offset : {int64_t{0}, int64_t{1}}) {
      const size_t total = static_cast<size_t>(n + offset);
      for (Act act : {Act::kNone, Act::kReLU, Act::kGELU}) {
        const bool gelu = act == Act::kGELU;
        for (bool with_bias : {false, true}) {
          INFO("bias_act M " << M << " N " << N << " offset " << offset << " act " << int(act)
                             << " bias " << with_bias);
          const std::vector<float> acc0 = random_floats(total, seed++, -3.0f, 3.0f);
          const std::vector<float> bias0 = random_floats(static_cast<size_t>(N), seed++);
          const float* bias_cpu = with_bias ? bias0.data() : nullptr;
          std::vector<bf16_t> y_cpu(total, 0);
          std::vector<float> dact_cpu(total, 0.0f);
          cpu.bias_act(acc0.data() + offset, bias_cpu, view_of(y_cpu, offset),
                       view_of(dact_cpu, offset), M, N, act);
          DeviceArray<float> acc(gpu, acc0), b(gpu, bias0), dact(gpu, total);
          DeviceArray<bf16_t> y(gpu, total);
          gpu.ops->bias_act(acc.get() + offset, with_bias ? b.get() : nullptr, y.view(offset),
                            dact.view(offset), M, N, act);
          check_bf16_match(y.download(), y_cpu, gelu);
          // act' at acc + bias rounded to bf16 (one rounding, the same on both), in fp32.
          CHECK(rel_error(dact.download(), dact_cpu) < 1e-5);
          // Without dact (what ReLU and identity layers pass).
          std::vector<bf16_t> y2_cpu(total, 0);
          cpu.bias_act(acc0.data() + offset, bias_cpu, view_of(y2_cpu, offset), View{}, M, N,
                       act);
          DeviceArray<bf16_t> y2(gpu, total);
          gpu.ops->bias_act(acc.get() + offset, with_bias ? b.get() : nullptr, y2.view(offset),
                            View{}, M, N, act);
          check_bf16_match(y2.download(), y2_cpu, gelu);
        }

        INFO("act M " << M << " N " << N << " offset " << offset << " act " << int(act));
        const std::vector<bf16_t> x0 = random_bf16(total, seed++, -3.0f, 3.0f);
        const std::vector<bf16_t> dy0 = random_bf16(total, seed++);
        std::vector<bf16_t> post_cpu(total, 0), dx_cpu(total, 0);
        cpu.act_forward(view_of(x0, offset), view_of(post_cpu, offset), act);
        DeviceArray<bf16_t> x(gpu, x0), dy(gpu, dy0), post(gpu, total);
        gpu.ops->act_forward(x.view(offset), post.view(offset), act);
        check_bf16_match(post.download(), post_cpu, gelu);
        // Backward from the same post on both sides. offset 0: pre and post (Activation);
        // offset 1: pre for GELU only.
        const bool pass_pre = offset == 0 || gelu;
        cpu.act_backward(view_of(dy0, offset), pass_pre ? view_of(x0, offset) : ConstView{},
                         view_of(post_cpu, offset), view_of(dx_cpu, offset), act);
        DeviceArray<bf16_t> post_ref(gpu, post_cpu), dx(gpu, total);
        gpu.ops->act_backward(dy.view(offset), pass_pre ? x.view(offset) : View{},
                              post_ref.view(offset), dx.view(offset), act);
        check_bf16_match(dx.download(), dx_cpu, gelu);
      }
    }
  }
#endif
}

TEST_CASE("cuda: bf16 bias_grad is the fp32 kernel's fixed-order sum of bf16 inputs", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  BoundReductionWorkspace ws(gpu);  // as the DatasetTrainer plans it
  CpuOps cpu(1);
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {33, 10}, {128, 512}, {1000, 513},
                                                {4097, 7}};
  uint32_t seed = 1300;
  for (const auto& [M, N] : shapes) {
    INFO("M " << M << " N " << N);
    const std::vector<bf16_t> dy0 = random_bf16(M * N, seed++);
    const std::vector<float> db0 = random_floats(N, seed++);
    std::vector<float> db_cpu = db0;
    cpu.bias_grad(view_of(dy0), db_cpu.data(), M, N);
    DeviceArray<bf16_t> dy(gpu, dy0);
    DeviceArray<float> dy_f32(gpu, to_f32(dy0));
    DeviceArray<float> db(gpu, db0), db_again(gpu, db0), db_f32(gpu, db0);
    gpu.ops->bias_grad(dy.view(), db.get(), M, N);
    gpu.ops->bias_grad(dy.view(), db_again.get(), M, N);
    gpu.ops->bias_grad(dy_f32.view(), db_f32.get(), M, N);
    const std::vector<float> got = db.download();
    CHECK(rel_error(got, db_cpu) < 1e-5);
    CHECK(same_bytes(got, db_again.download()));  // deterministic
    CHECK(same_bytes(got, db_f32.download()));    // the fp32 kernel's order, bit for bit
  }
#endif
}

TEST_CASE("cuda: bf16 softmax_xent matches the CPU: loss, correct, dlogits, history", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1},    {1, 10},    {7, 10},
                                                {128, 10}, {1000, 65}, {33, 1001}};
  uint32_t seed = 1400;
  for (const auto& [B, C] : shapes) {
    INFO("B " << B << " C " << C);
    const std::vector<bf16_t> logits0 = random_bf16(B * C, seed++, -5.0f, 5.0f);
    const std::vector<int32_t> labels0 = random_labels(B, static_cast<int32_t>(C), seed++);
    const StepCounters counters0{5, 2};
    // A training call (with dlogits) and an evaluation call, into one accumulator.
    LossStats stats_cpu{};
    std::vector<bf16_t> dlogits_cpu(B * C);
    std::vector<float> history_cpu(4, -1.0f);
    cpu.softmax_xent(view_of(logits0), labels0.data(), B, C, 0.0f, view_of(dlogits_cpu), &stats_cpu,
                     history_cpu.data(), &counters0);
    cpu.softmax_xent(view_of(logits0), labels0.data(), B, C, 0.0f, View{}, &stats_cpu, nullptr,
                     &counters0);

    DeviceArray<bf16_t> logits(gpu, logits0), dlogits(gpu, B * C);
    DeviceArray<float> history(gpu, std::vector<float>(4, -1.0f));
    DeviceArray<int32_t> labels(gpu, labels0);
    DeviceArray<StepCounters> counters(gpu, std::vector<StepCounters>{counters0});
    DeviceArray<LossStats> stats(gpu, std::vector<LossStats>{LossStats{}});
    gpu.ops->softmax_xent(logits.view(), labels.get(), B, C, 0.0f, dlogits.view(), stats.get(),
                          history.get(), counters.get());
    gpu.ops->softmax_xent(logits.view(), labels.get(), B, C, 0.0f, View{}, stats.get(), nullptr,
                          counters.get());

    const LossStats got = stats.download()[0];
    CHECK(std::abs(got.loss_sum - stats_cpu.loss_sum) <=
          1e-5 * std::abs(stats_cpu.loss_sum) + 1e-9);
    CHECK(got.correct == stats_cpu.correct);
    CHECK(got.count == stats_cpu.count);
    const std::vector<bf16_t> d = dlogits.download();
    check_bf16_match(d, dlogits_cpu, true);  // exp
    const std::vector<float> h = history.download();
    CHECK(h[0] == -1.0f);
    CHECK(h[3] == -1.0f);
    CHECK(std::abs(h[2] - history_cpu[2]) <= 1e-5 * std::abs(history_cpu[2]) + 1e-9);

    // The fp32 kernel on the widened logits: the same sums bit for bit, and dlogits that
    // round to exactly the bf16 kernel's.
    DeviceArray<float> logits_f32(gpu, to_f32(logits0)), dlogits_f32(gpu, B * C);
    DeviceArray<float> history_f32(gpu, std::vector<float>(4, -1.0f));
    DeviceArray<LossStats> stats_f32(gpu, std::vector<LossStats>{LossStats{}});
    gpu.ops->softmax_xent(logits_f32.view(), labels.get(), B, C, 0.0f, dlogits_f32.view(),
                          stats_f32.get(), history_f32.get(), counters.get());
    gpu.ops->softmax_xent(logits_f32.view(), labels.get(), B, C, 0.0f, View{}, stats_f32.get(),
                          nullptr, counters.get());
    const LossStats f = stats_f32.download()[0];
    CHECK(std::memcmp(&f.loss_sum, &got.loss_sum, sizeof f.loss_sum) == 0);
    CHECK(f.correct == got.correct);
    CHECK(d == rounded(dlogits_f32.download()));
    CHECK(same_bytes(h, history_f32.download()));
  }
#endif
}

TEST_CASE("cuda: bf16 mse matches the CPU: loss, dpred, history", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {7, 3}, {128, 10}, {1000, 33}};
  uint32_t seed = 1500;
  for (const auto& [B, D] : shapes) {
    INFO("B " << B << " D " << D);
    const std::vector<bf16_t> pred0 = random_bf16(B * D, seed++);
    const std::vector<float> target0 = random_floats(B * D, seed++);
    const StepCounters counters0{0, 1};
    LossStats stats_cpu{};
    std::vector<bf16_t> dpred_cpu(B * D);
    std::vector<float> history_cpu(2, -1.0f);
    cpu.mse(view_of(pred0), target0.data(), B, D, view_of(dpred_cpu), &stats_cpu,
            history_cpu.data(), &counters0);
    DeviceArray<bf16_t> pred(gpu, pred0), dpred(gpu, B * D);
    DeviceArray<float> target(gpu, target0), history(gpu, std::vector<float>(2, -1.0f));
    DeviceArray<StepCounters> counters(gpu, std::vector<StepCounters>{counters0});
    DeviceArray<LossStats> stats(gpu, std::vector<LossStats>{LossStats{}});
    gpu.ops->mse(pred.view(), target.get(), B, D, dpred.view(), stats.get(), history.get(),
                 counters.get());
    const LossStats got = stats.download()[0];
    CHECK(std::abs(got.loss_sum - stats_cpu.loss_sum) <= 1e-5 * stats_cpu.loss_sum + 1e-12);
    CHECK(got.count == stats_cpu.count);
    CHECK(got.correct == 0);
    const std::vector<bf16_t> d = dpred.download();
    CHECK(d == dpred_cpu);  // 2 (p - t) / n: no transcendental, the same bits
    const std::vector<float> h = history.download();
    CHECK(h[0] == -1.0f);
    CHECK(std::abs(h[1] - history_cpu[1]) <= 1e-5 * history_cpu[1] + 1e-12);

    // The fp32 kernel on the widened predictions: the same sum, bit for bit.
    DeviceArray<float> pred_f32(gpu, to_f32(pred0)), dpred_f32(gpu, B * D);
    DeviceArray<float> history_f32(gpu, std::vector<float>(2, -1.0f));
    DeviceArray<LossStats> stats_f32(gpu, std::vector<LossStats>{LossStats{}});
    gpu.ops->mse(pred_f32.view(), target.get(), B, D, dpred_f32.view(), stats_f32.get(),
                 history_f32.get(), counters.get());
    const LossStats f = stats_f32.download()[0];
    CHECK(std::memcmp(&f.loss_sum, &got.loss_sum, sizeof f.loss_sum) == 0);
    CHECK(d == rounded(dpred_f32.download()));
    CHECK(same_bytes(h, history_f32.download()));
  }
#endif
}

TEST_CASE("cuda: bf16 gemm matches the CPU bf16 gemm in every transpose, beta 0 and 1",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  CpuOps cpu(1);
  struct Dims {
    int64_t M, N, K, pad;  // pad: extra leading-dimension elements (odd: 2-byte aligned rows)
  };
  const Dims dims[] = {{1, 1, 1, 0},     {7, 13, 5, 3},     {33, 65, 129, 0},
                       {64, 10, 784, 0}, {128, 512, 784, 0}, {784, 512, 128, 1}};
  uint32_t seed = 1600;
  // bf16 GEMMs accumulate in plain fp32 whatever the TF32 switch says.
  for (bool tf32 : {false, true}) {
    Backend gpu = gpu_backend(tf32);
    for (const Dims& d : dims) {
      for (int t = 0; t < 4; ++t) {
        const bool ta = t & 1, tb = t & 2;
        for (const auto& [alpha, beta] :
             {std::pair{1.0f, 0.0f}, std::pair{1.0f, 1.0f}, std::pair{0.5f, 1.0f}}) {
          INFO("tf32 " << tf32 << " M " << d.M << " N " << d.N << " K " << d.K << " pad "
                       << d.pad << " trans_a " << ta << " trans_b " << tb << " alpha " << alpha
                       << " beta " << beta);
          const int64_t lda = (ta ? d.M : d.K) + d.pad, ldb = (tb ? d.K : d.N) + d.pad,
                        ldc = d.N + d.pad;
          const std::vector<bf16_t> A0 = random_bf16((ta ? d.K : d.M) * lda, seed++);
          const std::vector<bf16_t> B0 = random_bf16((tb ? d.N : d.K) * ldb, seed++);
          const std::vector<float> C0 = random_floats(d.M * ldc, seed++);
          std::vector<float> C_cpu = C0;
          cpu.gemm(ta, tb, d.M, d.N, d.K, alpha, view_of(A0), lda, view_of(B0), ldb, beta,
                   C_cpu.data(), ldc);
          DeviceArray<bf16_t> A(gpu, A0), B(gpu, B0);
          DeviceArray<float> C(gpu, C0), C_again(gpu, C0);
          gpu.ops->gemm(ta, tb, d.M, d.N, d.K, alpha, A.view(), lda, B.view(), ldb, beta,
                        C.get(), ldc);
          gpu.ops->gemm(ta, tb, d.M, d.N, d.K, alpha, A.view(), lda, B.view(), ldb, beta,
                        C_again.get(), ldc);
          const std::vector<float> got = C.download();
          CHECK_FALSE(has_nan(got));
          CHECK(rel_error(got, C_cpu) < 1e-5);
          CHECK(same_bytes(got, C_again.download()));  // one cached algorithm per shape
        }
      }
    }
    // K == 0: C = beta * C (zeros for beta 0, unchanged for beta 1).
    const std::vector<float> C0 = random_floats(5 * 7, seed++);
    DeviceArray<bf16_t> A(gpu, 1), B(gpu, 1);
    DeviceArray<float> C(gpu, C0);
    gpu.ops->gemm(false, false, 5, 7, 0, 1.0f, A.view(), 1, B.view(), 7, 1.0f, C.get(), 7);
    CHECK(same_bytes(C.download(), C0));
    gpu.ops->gemm(false, false, 5, 7, 0, 1.0f, A.view(), 1, B.view(), 7, 0.0f, C.get(), 7);
    CHECK(same_bytes(C.download(), std::vector<float>(5 * 7, 0.0f)));
  }
#endif
}

TEST_CASE("cuda: bf16 gemm is within bf16 rounding of the fp32 GEMM", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend(false);  // fp32 reference without TF32
  struct Dims {
    int64_t M, N, K;
  };
  // At least a few hundred outputs, so the normwise error is the rounding's average.
  const Dims dims[] = {{33, 65, 129}, {64, 10, 784}, {128, 512, 784}, {784, 512, 128}};
  uint32_t seed = 1700;
  for (const Dims& d : dims) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      INFO("M " << d.M << " N " << d.N << " K " << d.K << " trans_a " << ta << " trans_b " << tb);
      const int64_t lda = ta ? d.M : d.K, ldb = tb ? d.K : d.N;
      const std::vector<float> A0 = random_floats(d.M * d.K, seed++);
      const std::vector<float> B0 = random_floats(d.K * d.N, seed++);
      DeviceArray<float> A(gpu, A0), B(gpu, B0), C(gpu, d.M * d.N), C_bf16(gpu, d.M * d.N);
      DeviceArray<bf16_t> Ab(gpu, to_bf16(A0)), Bb(gpu, to_bf16(B0));
      gpu.ops->gemm(ta, tb, d.M, d.N, d.K, 1.0f, A.view(), lda, B.view(), ldb, 0.0f, C.get(), d.N);
      gpu.ops->gemm(ta, tb, d.M, d.N, d.K, 1.0f, Ab.view(), lda, Bb.view(), ldb, 0.0f,
                    C_bf16.get(), d.N);
      const double e = rel_error(C_bf16.download(), C.download());
      INFO("relative error " << e);
      CHECK(e >= 1e-3);
      CHECK(e <= 1e-2);
    }
  }
#endif
}
