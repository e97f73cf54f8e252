// Streaming stores (kernels/cpu/streaming_store.h) change where bytes go, never which: the
// copy and the block writers give exactly the plain loop's bytes at every alignment and
// length, and add, act_backward, add_relu_backward and act_forward over kStreamBytes give
// their exact results at 1 and 2 threads. BatchNorm's streamed shape is in
// test_cpu_pool_norm_ops.cpp, the convolutions' streamed copies in test_channel_blocks.cpp.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/streaming_store.h"
#include "tests/support/image_reference.h"

using namespace noeira;
using namespace noeira::test::image_ref;

TEST_CASE("stream_copy copies exactly the bytes asked, at every alignment of dst",
          "[streaming]") {
  std::vector<uint8_t> src(700);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 3);
  alignas(64) static uint8_t dst[1024];
  for (size_t offset = 0; offset < 64; ++offset)
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{200},
                         size_t{640}}) {
      INFO("offset " << offset << " bytes " << bytes);
      std::memset(dst, 0xEE, sizeof(dst));
      stream_copy(dst + offset, src.data(), bytes);
      stream_fence();
      CHECK(std::memcmp(dst + offset, src.data(), bytes) == 0);
      bool untouched = true;  // nothing before or after the range
      for (size_t i = 0; i < sizeof(dst); ++i)
        if (i < offset || i >= offset + bytes) untouched &= dst[i] == 0xEE;
      CHECK(untouched);
    }
}

TEST_CASE("write_staged and write_blocks write what the plain loop writes, streamed or not",
          "[streaming]") {
  const auto value = [](int64_t i) { return static_cast<float>(i) * 0.5f - 3.0f; };
  for (int64_t n : {int64_t{0}, int64_t{1}, kStageElems - 1, kStageElems, 3 * kStageElems + 5}) {
    for (bool stream : {false, true}) {
      INFO("n " << n << " stream " << stream);
      std::vector<float> y(static_cast<size_t>(n) + 1, -1.0f);  // + 1: a guard after
      write_staged(y.data() + 1, n, stream, [&](int64_t i0, int64_t k, float* out) {
        for (int64_t i = 0; i < k; ++i) out[i] = value(i0 + i);
      });
      stream_fence();
      CHECK(y[0] == -1.0f);
      bool ok = true;
      for (int64_t i = 0; i < n; ++i) ok &= y[static_cast<size_t>(i) + 1] == value(i);
      CHECK(ok);
    }
  }
  // Over kStreamBytes (streamed where available), 1 and 2 threads.
  const int64_t n = static_cast<int64_t>(kStreamBytes / sizeof(float)) + 777;
  for (int threads : {1, 2}) {
    std::vector<float> y(static_cast<size_t>(n));
    write_blocks(threads, y.data(), n, [&](int64_t i0, int64_t k, float* out) {
      for (int64_t i = 0; i < k; ++i) out[i] = value(i0 + i);
    });
    bool ok = true;
    for (int64_t i = 0; i < n; ++i) ok &= y[static_cast<size_t>(i)] == value(i);
    CHECK(ok);
  }
}

TEST_CASE("add and act_backward over kStreamBytes: the exact sums and masked gradients, "
          "fp32 and bf16, 1 and 2 threads", "[streaming]") {
  // bf16 needs twice the elements to reach the threshold; tails after every block width.
  const int64_t n = static_cast<int64_t>(kStreamBytes / 2) + 1001;
  const Vec a = random_vec(n, 11), b = random_vec(n, 12), post = random_vec(n, 13);
  Vec sum_ref(static_cast<size_t>(n)), relu_ref(static_cast<size_t>(n));
  for (size_t i = 0; i < a.size(); ++i) {
    sum_ref[i] = a[i] + b[i];
    relu_ref[i] = a[i] * (post[i] > 0.0f ? 1.0f : 0.0f);  // dy = a; the mask from ReLU's output
  }
  for (int threads : {1, 2}) {
    INFO("threads " << threads);
    CpuOps ops(threads);
    Vec y(a.size()), dx(a.size());
    ops.add(cview(a), cview(b), view(y));
    ops.act_backward(cview(a), ConstView{}, cview(post), view(dx), Act::kReLU);
    CHECK(same_bits(y, sum_ref));
    CHECK(same_bits(dx, relu_ref));
    // bf16: the same values rounded once.
    const Bf ab = to_bf16(a), bb = to_bf16(b), pb = to_bf16(post);
    Bf yb(a.size()), dxb(a.size());
    ops.add(cview(ab), cview(bb), view(yb));
    ops.act_backward(cview(ab), ConstView{}, cview(pb), view(dxb), Act::kReLU);
    Vec want(a.size()), want_relu(a.size());
    const Vec af = to_f32(ab), bf = to_f32(bb), pf = to_f32(pb);
    for (size_t i = 0; i < a.size(); ++i) {
      want[i] = af[i] + bf[i];
      want_relu[i] = af[i] * (pf[i] > 0.0f ? 1.0f : 0.0f);
    }
    CHECK(same_bits(yb, to_bf16(want)));
    CHECK(same_bits(dxb, to_bf16(want_relu)));
  }
}

TEST_CASE("add_relu_backward has the bits of add then act_backward(ReLU), fp32 and bf16, "
          "specials included, over kStreamBytes and below, 1 and 2 threads",
          "[streaming]") {
  for (const int64_t n : {int64_t{37}, static_cast<int64_t>(kStreamBytes / 2) + 1001}) {
    Vec a = random_vec(n, 21), b = random_vec(n, 22), post = random_vec(n, 23);
    // NaN, infinities and signed zeros in the sum and in ReLU's output; bf16 ties and
    // subnormals in the sum.
    const float specials[][3] = {{NAN, 1.0f, 1.0f},      {NAN, 1.0f, -1.0f},
                                 {INFINITY, 1.0f, 0.5f}, {-INFINITY, 0.0f, 0.0f},
                                 {1.0f, -1.0f, 2.0f},    {-0.0f, -0.0f, 1.0f},
                                 {1.0f, 0.0f, NAN},      {0x1p-130f, 0x1p-140f, 3.0f},
                                 {1.00390625f, 0x1p-9f, 1.0f}, {2.0f, 3.0f, -0.0f}};
    for (size_t k = 0; k < std::size(specials); ++k)
      a[k] = specials[k][0], b[k] = specials[k][1], post[k] = specials[k][2];
    for (int threads : {1, 2}) {
      INFO("n " << n << " threads " << threads);
      CpuOps ops(threads);
      Vec sum(a.size()), want(a.size()), got(a.size());
      ops.add(cview(a), cview(b), view(sum));
      ops.act_backward(cview(sum), ConstView{}, cview(post), view(want), Act::kReLU);
      ops.add_relu_backward(cview(a), cview(b), cview(post), view(got));
      CHECK(same_bits(got, want));
      const Bf ab = to_bf16(a), bb = to_bf16(b), pb = to_bf16(post);
      Bf sumb(a.size()), wantb(a.size()), gotb(a.size());
      ops.add(cview(ab), cview(bb), view(sumb));
      ops.act_backward(cview(sumb), ConstView{}, cview(pb), view(wantb), Act::kReLU);
      ops.add_relu_backward(cview(ab), cview(bb), cview(pb), view(gotb));
      CHECK(same_bits(gotb, wantb));
    }
  }
}

TEST_CASE("act_forward over kStreamBytes: act_forward's values, ReLU and GELU, 1 and 2 threads",
          "[streaming]") {
  const int64_t n = static_cast<int64_t>(kStreamBytes / sizeof(float)) + 1001;
  const Vec x = random_vec(n, 14, -4.0f, 4.0f);
  for (const Act act : {Act::kReLU, Act::kGELU}) {
    Vec want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = act_forward(act, x[i]);
    for (int threads : {1, 2}) {
      INFO("threads " << threads << " GELU " << (act == Act::kGELU));
      CpuOps ops(threads);
      Vec y(x.size());
      ops.act_forward(cview(x), view(y), act);
      CHECK(same_bits(y, want));
    }
  }
}
