// Every CUDA op against the CPU reference (CpuOps) on random inputs and several shapes,
// odd sizes included. Errors are normwise relative (gpu_rig.h): fp32 ops < 1e-5, GEMMs
// < 1e-3 with TF32 (K >= 32; see tf32_tolerance) and < 1e-5 without; integer results and
// permutations are exact.
#include <catch2/catch.hpp>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include <cmath>
#include <cstddef>
#include <iterator>
#include <numeric>

#include "kernels/common/column_sum.h"
#include "tests/gpu/gpu_rig.h"
#endif

using namespace noeira;
using namespace noeira::test;

TEST_CASE("cuda: bias_act, act_forward, act_backward(_saved), add and add_relu_backward match "
          "the CPU",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {7, 13}, {33, 1001}, {128, 512}};
  uint32_t seed = 1;
  for (const auto& [M, N] : shapes) {
    const size_t n = static_cast<size_t>(M * N);
    for (Act act : {Act::kNone, Act::kReLU, Act::kGELU}) {
      for (bool with_bias : {false, true}) {
        INFO("M " << M << " N " << N << " act " << int(act) << " bias " << with_bias);
        const std::vector<float> y0 = random_floats(n, seed++, -3.0f, 3.0f);
        const std::vector<float> bias = random_floats(static_cast<size_t>(N), seed++);
        std::vector<float> y_cpu = y0, dact_cpu(n);
        cpu.bias_act(y_cpu.data(), with_bias ? bias.data() : nullptr, view_of(y_cpu),
                     view_of(dact_cpu), M, N, act);
        DeviceArray<float> y(gpu, y0), dact(gpu, n), b(gpu, bias);
        gpu.ops->bias_act(y.get(), with_bias ? b.get() : nullptr, y.view(), dact.view(), M, N,
                          act);
        CHECK(rel_error(y.download(), y_cpu) < 1e-5);
        CHECK(rel_error(dact.download(), dact_cpu) < 1e-5);
      }
      const std::vector<float> x0 = random_floats(n, seed++, -3.0f, 3.0f);
      const std::vector<float> dy0 = random_floats(n, seed++);
      std::vector<float> post_cpu(n), dx_cpu(n);
      cpu.act_forward(view_of(x0), view_of(post_cpu), act);
      cpu.act_backward(view_of(dy0), view_of(x0), view_of(post_cpu), view_of(dx_cpu), act);
      DeviceArray<float> x(gpu, x0), dy(gpu, dy0), post(gpu, n), dx(gpu, n);
      gpu.ops->act_forward(x.view(), post.view(), act);
      gpu.ops->act_backward(dy.view(), x.view(), post.view(), dx.view(), act);
      INFO("act " << int(act) << " n " << n);
      CHECK(rel_error(post.download(), post_cpu) < 1e-5);
      CHECK(rel_error(dx.download(), dx_cpu) < 1e-5);
      // From a saved derivative: one multiply, one rounding, the same on both.
      const std::vector<float> dact0 = random_floats(n, seed++, -0.2f, 1.2f);
      std::vector<float> saved_cpu(n);
      cpu.act_backward_saved(view_of(dy0), view_of(dact0), view_of(saved_cpu));
      DeviceArray<float> dact(gpu, dact0), saved(gpu, n);
      gpu.ops->act_backward_saved(dy.view(), dact.view(), saved.view());
      CHECK(same_bytes(saved.download(), saved_cpu));
    }
    const std::vector<float> a0 = random_floats(n, seed++), b0 = random_floats(n, seed++);
    std::vector<float> sum_cpu(n);
    cpu.add(view_of(a0), view_of(b0), view_of(sum_cpu));
    DeviceArray<float> a(gpu, a0), b(gpu, b0), sum(gpu, n);
    gpu.ops->add(a.view(), b.view(), sum.view());
    CHECK(same_bytes(sum.download(), sum_cpu));  // one rounding, same on both
    // The sum through a ReLU whose output was post: add's rounding, an exact mask. Specials
    // (no NaN: its payload is the hardware's): signed zeros, infinity, subnormals, overflow,
    // post = +-0.
    std::vector<float> a1 = a0, b1 = b0, p1 = random_floats(n, seed++);
    const float specials[][3] = {{-0.0f, -0.0f, 1.0f},      {INFINITY, 1.0f, 2.0f},
                                 {1e-40f, 1e-41f, 1.0f},    {2.0f, 1.0f, -0.0f},
                                 {2.0f, 1.0f, 0.0f},        {3.4e38f, 3.4e38f, 1.0f},
                                 {-1e-40f, 1e-40f, 0.5f},   {-INFINITY, -1.0f, 3.0f}};
    for (size_t k = 0; k < std::size(specials) && k < n; ++k)
      a1[k] = specials[k][0], b1[k] = specials[k][1], p1[k] = specials[k][2];
    std::vector<float> masked_cpu(n);
    cpu.add_relu_backward(view_of(a1), view_of(b1), view_of(p1), view_of(masked_cpu));
    DeviceArray<float> a1d(gpu, a1), b1d(gpu, b1), p(gpu, p1), masked(gpu, n);
    gpu.ops->add_relu_backward(a1d.view(), b1d.view(), p.view(), masked.view());
    CHECK(same_bytes(masked.download(), masked_cpu));
  }
#endif
}

TEST_CASE("cuda: bias_grad accumulates column sums like the CPU, deterministically", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  BoundReductionWorkspace ws(gpu);  // as the DatasetTrainer plans it
  CpuOps cpu(1);
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {33, 10}, {1000, 513}, {4097, 7}};
  uint32_t seed = 300;
  for (const auto& [M, N] : shapes) {
    INFO("M " << M << " N " << N);
    const std::vector<float> dy0 = random_floats(M * N, seed++);
    const std::vector<float> db0 = random_floats(N, seed++);
    std::vector<float> db_cpu = db0, db_order = db0;
    cpu.bias_grad(view_of(dy0), db_cpu.data(), M, N);
    column_sums_in_gpu_order(dy0.data(), db_order.data(), M, N,
                             column_sum_plan(M, kColumnSumMaxChunks));
    DeviceArray<float> dy(gpu, dy0), db(gpu, db0), db_again(gpu, db0);
    gpu.ops->bias_grad(dy.view(), db.get(), M, N);
    gpu.ops->bias_grad(dy.view(), db_again.get(), M, N);
    const std::vector<float> got = db.download();
    CHECK(rel_error(got, db_cpu) < 1e-5);
    CHECK(same_bytes(got, db_again.download()));
    CHECK(same_bytes(got, db_order));  // the documented order, bit for bit
  }
#endif
}

TEST_CASE("cuda: softmax_xent matches the CPU: loss, correct, dlogits, history", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1},    {1, 10},   {7, 10},
                                                {128, 10}, {1000, 65}, {33, 1001}};
  uint32_t seed = 400;
  for (const auto& [B, C] : shapes) {
    INFO("B " << B << " C " << C);
    const std::vector<float> logits0 = random_floats(B * C, seed++, -5.0f, 5.0f);
    const std::vector<int32_t> labels0 = random_labels(B, static_cast<int32_t>(C), seed++);
    const StepCounters counters0{5, 2};
    // CPU: a training call (with dlogits) and an evaluation call, into one accumulator.
    LossStats stats_cpu{};
    std::vector<float> dlogits_cpu(B * C), history_cpu(4, -1.0f);
    cpu.softmax_xent(view_of(logits0), labels0.data(), B, C, 0.0f, view_of(dlogits_cpu), &stats_cpu,
                     history_cpu.data(), &counters0);
    cpu.softmax_xent(view_of(logits0), labels0.data(), B, C, 0.0f, View{}, &stats_cpu, nullptr,
                     &counters0);

    DeviceArray<float> logits(gpu, logits0), dlogits(gpu, B * C);
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
    CHECK(rel_error(dlogits.download(), dlogits_cpu) < 1e-5);
    const std::vector<float> h = history.download();
    CHECK(h[0] == -1.0f);
    CHECK(h[3] == -1.0f);
    CHECK(std::abs(h[2] - history_cpu[2]) <= 1e-5 * std::abs(history_cpu[2]) + 1e-9);
  }
#endif
}

TEST_CASE("cuda: mse matches the CPU: loss, dpred, history", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {7, 3}, {128, 10}, {1000, 33}};
  uint32_t seed = 500;
  for (const auto& [B, D] : shapes) {
    INFO("B " << B << " D " << D);
    const std::vector<float> pred0 = random_floats(B * D, seed++);
    const std::vector<float> target0 = random_floats(B * D, seed++);
    const StepCounters counters0{0, 1};
    LossStats stats_cpu{};
    std::vector<float> dpred_cpu(B * D), history_cpu(2, -1.0f);
    cpu.mse(view_of(pred0), target0.data(), B, D, view_of(dpred_cpu), &stats_cpu,
            history_cpu.data(), &counters0);
    DeviceArray<float> pred(gpu, pred0), target(gpu, target0), dpred(gpu, B * D),
        history(gpu, std::vector<float>(2, -1.0f));
    DeviceArray<StepCounters> counters(gpu, std::vector<StepCounters>{counters0});
    DeviceArray<LossStats> stats(gpu, std::vector<LossStats>{LossStats{}});
    gpu.ops->mse(pred.view(), target.get(), B, D, dpred.view(), stats.get(), history.get(),
                 counters.get());
    const LossStats got = stats.download()[0];
    CHECK(std::abs(got.loss_sum - stats_cpu.loss_sum) <= 1e-5 * stats_cpu.loss_sum + 1e-12);
    CHECK(got.count == stats_cpu.count);
    CHECK(got.correct == 0);
    CHECK(rel_error(dpred.download(), dpred_cpu) < 1e-5);
    const std::vector<float> h = history.download();
    CHECK(h[0] == -1.0f);
    CHECK(std::abs(h[1] - history_cpu[1]) <= 1e-5 * history_cpu[1] + 1e-12);
  }
#endif
}

TEST_CASE("cuda: adam and sgd over 3 steps equal the CPU within 1e-6", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  uint32_t seed = 600;
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{1001}, int64_t{65539}}) {
    // offset 1: buffers not 16-byte aligned, the scalar path
    for (int64_t offset : {int64_t{0}, int64_t{1}}) {
      for (int kind = 0; kind < 3; ++kind) {  // adam, adamw, sgd
        INFO("n " << n << " offset " << offset << " optimizer " << kind);
        const size_t total = static_cast<size_t>(n + offset);
        std::vector<float> p_cpu = random_floats(total, seed++);
        std::vector<float> m_cpu(total, 0.0f), v_cpu(total, 0.0f);
        std::vector<std::vector<float>> grads;
        for (int s = 0; s < 3; ++s) grads.push_back(random_floats(total, seed++));
        DeviceArray<float> p(gpu, p_cpu), m(gpu, m_cpu), v(gpu, v_cpu), g(gpu, total);
        DeviceArray<StepCounters> counters(gpu, std::vector<StepCounters>{StepCounters{0, 0}});
        StepCounters counters_cpu{0, 0};
        AdamHyper ah;
        ah.lr = 1e-2f;
        ah.weight_decay = kind == 0 ? 0.01f : 0.1f;
        ah.decoupled = kind == 1;
        SgdHyper sh;
        sh.lr = 0.05f;
        sh.weight_decay = 0.01f;
        for (int s = 0; s < 3; ++s) {
          g.upload(grads[s]);
          float* pc = p_cpu.data() + offset;
          const float* gc = grads[s].data() + offset;
          if (kind < 2) {
            cpu.adam(pc, gc, m_cpu.data() + offset, v_cpu.data() + offset, n, ah, &counters_cpu);
            gpu.ops->adam(p.get() + offset, g.get() + offset, m.get() + offset, v.get() + offset,
                          n, ah, counters.get());
          } else {
            cpu.sgd(pc, gc, m_cpu.data() + offset, n, sh, &counters_cpu);
            gpu.ops->sgd(p.get() + offset, g.get() + offset, m.get() + offset, n, sh,
                         counters.get());
          }
          cpu.advance(&counters_cpu);
          gpu.ops->advance(counters.get());
        }
        CHECK(max_abs_diff(p.download(), p_cpu) <= 1e-6);
        CHECK(max_abs_diff(m.download(), m_cpu) <= 1e-6);
        CHECK(max_abs_diff(v.download(), v_cpu) <= 1e-6);
        const StepCounters c = counters.download()[0];
        CHECK(c.step == 3);
        CHECK(c.batch_in_epoch == 3);
      }
    }
  }
#endif
}

TEST_CASE("cuda: gather_rows of fp32 rows and int32 labels reads the counter's batch exactly",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  const int64_t count = 50, rows = 8;
  std::vector<int32_t> perm0(count);
  std::iota(perm0.begin(), perm0.end(), 0);
  std::shuffle(perm0.begin(), perm0.end(), std::mt19937(7));
  const StepCounters counters0{11, 3};  // rows 24..31 of the permutation
  DeviceArray<int32_t> perm(gpu, perm0);
  DeviceArray<StepCounters> counters(gpu, std::vector<StepCounters>{counters0});
  for (int64_t row_elems : {int64_t{784}, int64_t{12}, int64_t{5}, int64_t{1}}) {
    INFO("row_elems " << row_elems);
    const std::vector<float> src0 = random_floats(count * row_elems, 700 + row_elems);
    std::vector<float> dst_cpu(rows * row_elems);
    cpu.gather_rows(view_of(src0), perm0.data(), rows, row_elems, &counters0, view_of(dst_cpu));
    DeviceArray<float> src(gpu, src0), dst(gpu, rows * row_elems);
    gpu.ops->gather_rows(src.view(), perm.get(), rows, row_elems, counters.get(), dst.view());
    CHECK(same_bytes(dst.download(), dst_cpu));
  }
  const std::vector<int32_t> labels0 = random_labels(count, 10, 9);
  std::vector<int32_t> out_cpu(rows);
  cpu.gather_rows(view_of(labels0), perm0.data(), rows, 1, &counters0, view_of(out_cpu));
  DeviceArray<int32_t> labels(gpu, labels0), out(gpu, rows);
  gpu.ops->gather_rows(labels.view(), perm.get(), rows, 1, counters.get(), out.view());
  CHECK(out.download() == out_cpu);
#endif
}

TEST_CASE("cuda: the device shuffle equals the CPU permutation exactly", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  for (int64_t n : {int64_t{60000}, int64_t{37}, int64_t{1}}) {
    Result<size_t> ws_bytes = gpu.ops->shuffle_workspace_bytes(n);
    REQUIRE(ws_bytes.ok());
    REQUIRE(*ws_bytes > 0);
    DeviceArray<uint8_t> ws(gpu, *ws_bytes);
    DeviceArray<int32_t> perm(gpu, static_cast<size_t>(n));
    Result<size_t> ws_cpu_bytes = cpu.shuffle_workspace_bytes(n);
    REQUIRE(ws_cpu_bytes.ok());
    std::vector<uint8_t> ws_cpu(*ws_cpu_bytes);
    std::vector<int32_t> perm_cpu(static_cast<size_t>(n));
    for (uint64_t seed : {uint64_t{42}, uint64_t{0x1234567890abcdefull}}) {
      for (uint32_t epoch : {0u, 3u}) {
        INFO("n " << n << " seed " << seed << " epoch " << epoch);
        cpu.shuffle(seed, epoch, n, perm_cpu.data(), ws_cpu.data());
        gpu.ops->shuffle(seed, epoch, n, perm.get(), ws.get());
        CHECK(perm.download() == perm_cpu);
      }
    }
  }
#endif
}

TEST_CASE("cuda: advance, fill_zero and the copies", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  DeviceArray<StepCounters> counters(gpu, std::vector<StepCounters>{StepCounters{41, 6}});
  gpu.ops->advance(counters.get());
  gpu.ops->advance(counters.get());
  const StepCounters c = counters.download()[0];
  CHECK(c.step == 43);
  CHECK(c.batch_in_epoch == 8);

  const std::vector<float> data = random_floats(1001, 800);
  DeviceArray<float> a(gpu, data);
  CHECK(same_bytes(a.download(), data));
  gpu.stream->fill_zero(a.get() + 1, 999 * sizeof(float));
  const std::vector<float> z = a.download();
  CHECK(z[0] == data[0]);
  CHECK(z[1000] == data[1000]);
  CHECK(std::all_of(z.begin() + 1, z.begin() + 1000, [](float v) { return v == 0.0f; }));
  gpu.stream->synchronize();
  // The allocator hands out zero-filled memory.
  DeviceArray<float> fresh(gpu, 4097);
  const std::vector<float> f = fresh.download();
  CHECK(std::all_of(f.begin(), f.end(), [](float v) { return v == 0.0f; }));
#endif
}

TEST_CASE("cuda: the backend describes itself and honours the TF32 switch", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend on = gpu_backend(true), off = gpu_backend(false);
  INFO(on.description);
  CHECK(on.description.find("TF32 on") != std::string::npos);
  CHECK(off.description.find("TF32 off") != std::string::npos);
  CHECK(on.allocator->device() == Device::kGpu);
  CHECK(on.stream->supports_graphs());
#endif
}
