// The CUDA convolutions (kernels/op_list.inc, through cuDNN) against the CPU reference (CpuOps)
// on random inputs, at the shapes of resnet20, cifar-cnn and conv2d-mnist plus odd ones,
// and a captured conv + BatchNorm + maxpool step. Errors are normwise relative
// (gpu_rig.h): < 1e-4 in fp32 with TF32 off (cuDNN may pick Winograd or FFT), 4e-3 with it
// on, 1e-2 for bf16 outputs. Every op also repeats bit for bit, and a captured graph
// replays the eager bits. The chosen cuDNN algorithms and the measured errors are printed,
// to calibrate the bounds on new hardware.
#include <catch2/catch.hpp>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include "tests/gpu/image_ops_rig.h"
using namespace noeira::test::image_gpu;
#endif

using namespace noeira;
using namespace noeira::test;

TEST_CASE("cuda: conv2d's three passes equal the CPU in fp32 (TF32 off) and repeat bit for bit",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend(/*tf32=*/false);
  CpuOps cpu(1);
  uint32_t seed = 100;
  for (const ConvShape& s : conv_shapes()) {
    INFO(text(s));
    const ConvCase c(s, seed);
    seed += 10;
    const ConvOut want = conv_on_cpu<float>(cpu, c);
    const ConvOut got = conv_on_gpu<float>(gpu, c);
    check_conv(got, want, 1e-4, 1e-4, 1e-4, 1e-5);
    CHECK(same(got, conv_on_gpu<float>(gpu, c)));
  }
#endif
}

TEST_CASE("cuda: conv2d with TF32 stays within TF32's bound of the CPU", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend(/*tf32=*/true);
  CpuOps cpu(1);
  uint32_t seed = 200;
  for (const ConvShape& s : conv_shapes()) {
    INFO(text(s));
    const ConvCase c(s, seed);
    seed += 10;
    // TF32 rounds each operand to 10 mantissa bits (gpu_rig.h's GEMM bound); cuDNN's
    // Winograd and FFT algorithms round their transformed operands too: 4e-3 for all.
    const double tol = 4e-3;
    check_conv(conv_on_gpu<float>(gpu, c), conv_on_cpu<float>(cpu, c), tol, tol, tol, 1e-5);
  }
#endif
}

TEST_CASE("cuda: bf16 conv2d equals the CPU's bf16 convolution within bf16 rounding", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  uint32_t seed = 300;
  for (const ConvShape& s : conv_shapes()) {
    INFO(text(s));
    const ConvCase c(s, seed);
    seed += 10;
    const ConvOut got = conv_on_gpu<bf16_t>(gpu, c);
    // y and dx are rounded to bf16 (2^-9 relative) by each backend; dw and db are fp32 sums
    // of exact products of the same bf16 values, in other orders (3e-3: room for a
    // Winograd or FFT algorithm's rounded transforms in the widened TF32 pass).
    check_conv(got, conv_on_cpu<bf16_t>(cpu, c), 1e-2, 1e-2, 3e-3, 1e-5);
    CHECK(same(got, conv_on_gpu<bf16_t>(gpu, c)));
  }
#endif
}

TEST_CASE("cuda: conv2d_plan rejects bad shapes and dtypes and plans a shape once", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CHECK_FALSE(gpu.ops->conv2d_plan(conv_shape(1, 1, 2, 2, 2, 5, 5, 1, 1, true), DType::kF32).ok());
  CHECK_FALSE(gpu.ops->conv2d_plan(conv_shape(0, 1, 8, 8, 2, 3, 3, 1, 0, true), DType::kF32).ok());
  CHECK_FALSE(gpu.ops->conv2d_plan(conv_shape(1, 1, 8, 8, 2, 3, 3, 1, 0, true), DType::kI32).ok());
  const ConvShape s = conv_shape(2, 3, 8, 8, 4, 3, 3, 1, 1, true);
  Result<size_t> a = gpu.ops->conv2d_plan(s, DType::kF32);
  REQUIRE(a.ok());
  Result<size_t> b = gpu.ops->conv2d_plan(s, DType::kF32);  // planned once, same answer
  REQUIRE(b.ok());
  CHECK(*a == *b);
  CHECK(cuda_ops(gpu).conv2d_plan_description(s, DType::kBF16).empty());
  CHECK_FALSE(cuda_ops(gpu).conv2d_plan_description(s, DType::kF32).empty());
#endif
}
TEST_CASE("cuda: a captured conv + batchnorm + maxpool step replays the eager bits", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  for (bool bf16 : {false, true}) {
    INFO("bf16 " << bf16);
    Backend gpu = gpu_backend();
    const DType dt = bf16 ? DType::kBF16 : DType::kF32;
    const ConvShape cs = conv_shape(10, 16, 32, 32, 32, 3, 3, 1, 1, true);
    const NormShape ns = norm_shape(cs.batch, cs.out_channels, 32 * 32);
    const PoolShape ps = pool_shape(cs.batch, cs.out_channels, 32, 32, 2, 2, 0);
    Result<size_t> conv_bytes = gpu.ops->conv2d_plan(cs, dt);
    REQUIRE(conv_bytes.ok());
    const size_t ny = static_cast<size_t>(cs.y_elems()), nx = static_cast<size_t>(cs.x_elems()),
                 np = static_cast<size_t>(ps.y_elems()), C = static_cast<size_t>(cs.out_channels);
    const auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      DeviceArray<float> conv_ws(gpu, floats_for(*conv_bytes));
      DeviceArray<float> bn_ws(gpu, floats_for(gpu.ops->batchnorm_workspace_bytes(ns)));
      DeviceArray<T> x(gpu, stored<T>(random_floats(nx, 1))),
          w(gpu, stored<T>(random_floats(static_cast<size_t>(cs.w_elems()), 2))), y(gpu, ny),
          z(gpu, ny), pooled(gpu, np), dpooled(gpu, stored<T>(random_floats(np, 3))), dz(gpu, ny),
          dy(gpu, ny), dx(gpu, nx);
      DeviceArray<int32_t> arg(gpu, np);
      DeviceArray<float> bias(gpu, random_floats(C, 4)), gamma(gpu, random_floats(C, 5)),
          beta(gpu, random_floats(C, 6)), mean(gpu, C), inv(gpu, C), rm(gpu, C), rv(gpu, C),
          dw(gpu, static_cast<size_t>(cs.w_elems())), db(gpu, C), dg(gpu, C), dbeta(gpu, C);
      const std::vector<float> ones(C, 1.0f);
      BatchNormHyper h;
      // Accumulated and in-place state back to its start, outside any capture.
      const auto reset = [&] {
        rm.upload(std::vector<float>(C, 0.0f));
        rv.upload(ones);
        for (auto* a : {&dw, &db, &dg, &dbeta}) gpu.stream->fill_zero(a->get(), a->size() * 4);
      };
      const auto step = [&] {
        gpu.ops->conv2d_forward(cs, x.view(), w.view(), bias.get(), y.view(), conv_ws.get(),
                                *conv_bytes);
        gpu.ops->batchnorm_forward_train(ns, y.view(), gamma.get(), beta.get(), h, z.view(), {},
                                         mean.get(), inv.get(), rm.get(), rv.get(), bn_ws.get());
        gpu.ops->maxpool2d_forward(ps, z.view(), pooled.view(), arg.get());
        gpu.ops->maxpool2d_backward(ps, dpooled.view(), arg.get(), dz.view());
        gpu.ops->batchnorm_backward(ns, dz.view(), y.view(), gamma.get(), mean.get(), inv.get(),
                                    dy.view(), dg.get(), dbeta.get(), bn_ws.get());
        gpu.ops->conv2d_backward_data(cs, dy.view(), w.view(), dx.view(), conv_ws.get(),
                                      *conv_bytes);
        gpu.ops->conv2d_backward_weights(cs, x.view(), dy.view(), dw.get(), db.get(),
                                         conv_ws.get(), *conv_bytes);
      };
      const auto results = [&] {
        return std::vector<std::vector<float>>{
            to_f32(pooled.download()), to_f32(dx.download()), dw.download(), db.download(),
            dg.download(),             dbeta.download(),      rm.download(), rv.download()};
      };
      reset();
      step();  // eager, which also loads every kernel before the capture
      const std::vector<std::vector<float>> eager = results();
      reset();
      step();  // eager again: deterministic
      const std::vector<std::vector<float>> again = results();
      reset();
      REQUIRE(gpu.stream->begin_capture().ok());
      step();
      Result<std::unique_ptr<StepGraph>> graph = gpu.stream->end_capture();
      INFO((graph ? std::string() : graph.error().message));
      REQUIRE(graph.ok());
      for (int replay = 0; replay < 2; ++replay) {
        reset();
        (*graph)->replay();
        gpu.stream->synchronize();
        const std::vector<std::vector<float>> replayed = results();
        for (size_t i = 0; i < eager.size(); ++i) {
          INFO("result " << i << " replay " << replay);
          CHECK(same_bytes(again[i], eager[i]));
          CHECK(same_bytes(replayed[i], eager[i]));
        }
      }
    };
    if (bf16)
      run(StorageTag<bf16_t>{});
    else
      run(StorageTag<float>{});
  }
#endif
}

TEST_CASE("cuda: conv2d_backward's dx epilogue has the bits of conv2d_backward then "
          "add_relu_backward, fp32 and bf16",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  // 16-byte groups; a 735-element dx (groups and a scalar tail, in place).
  for (const ConvShape& cs : {conv_shape(6, 16, 12, 12, 16, 3, 3, 1, 1, false),
                              conv_shape(5, 3, 7, 7, 16, 3, 3, 1, 1, false)})
  for (bool bf16 : {false, true}) {
    INFO("bf16 " << bf16 << " Cin " << cs.in_channels);
    Backend gpu = gpu_backend();
    const DType dt = bf16 ? DType::kBF16 : DType::kF32;
    Result<size_t> conv_bytes = gpu.ops->conv2d_plan(cs, dt);
    REQUIRE(conv_bytes.ok());
    const size_t ny = static_cast<size_t>(cs.y_elems()), nx = static_cast<size_t>(cs.x_elems()),
                 nw = static_cast<size_t>(cs.w_elems());
    const auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      DeviceArray<float> ws(gpu, floats_for(*conv_bytes)), dw(gpu, nw), dw2(gpu, nw);
      DeviceArray<T> x(gpu, stored<T>(random_floats(nx, 11))),
          w(gpu, stored<T>(random_floats(nw, 12))), dy(gpu, stored<T>(random_floats(ny, 13))),
          res(gpu, stored<T>(random_floats(nx, 14))), post(gpu, stored<T>(random_floats(nx, 15))),
          dx(gpu, nx), want(gpu, nx), got(gpu, nx);
      gpu.stream->fill_zero(dw.get(), nw * 4);
      gpu.stream->fill_zero(dw2.get(), nw * 4);
      gpu.ops->conv2d_backward(cs, x.view(), dy.view(), w.view(), dx.view(), {}, dw.get(),
                               nullptr, ws.get(), *conv_bytes);
      gpu.ops->add_relu_backward(dx.view(), res.view(), post.view(), want.view());
      gpu.ops->conv2d_backward(cs, x.view(), dy.view(), w.view(), got.view(),
                               ConvDxEpilogue{res.view(), post.view()}, dw2.get(), nullptr,
                               ws.get(), *conv_bytes);
      CHECK(same_bytes(to_f32(got.download()), to_f32(want.download())));
      CHECK(same_bytes(dw2.download(), dw.download()));
    };
    if (bf16)
      run(StorageTag<bf16_t>{});
    else
      run(StorageTag<float>{});
  }
#endif
}
