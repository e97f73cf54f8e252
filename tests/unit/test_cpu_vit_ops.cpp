// CpuOps' Vision-Transformer ops: patches against an independent loop, the class token and
// token-row copies against their definitions, and attention without the causal mask
// against double precision, bf16 against fp32 on the rounded inputs, 1, 2 and 3 threads.
#include <algorithm>

#include "tests/support/attention_reference.h"
#include "tests/support/image_reference.h"

using namespace noeira;
using namespace noeira::test::image_ref;
using namespace noeira::test::attention_ref;

TEST_CASE("patchify: patch n row-major over the grid, each flattened (c, ky, kx); unpatchify "
          "inverts it", "[vit-ops]") {
  const PatchShape s{2, 3, 8, 12, 4};  // 2 x 3 = 6 patches of 48
  REQUIRE(s.patches() == 6);
  REQUIRE(s.patch_elems() == 48);
  const Vec x = random_vec(s.elems(), 61);
  Vec want(x.size());
  size_t i = 0;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t py = 0; py < 2; ++py)
      for (int64_t px = 0; px < 3; ++px)
        for (int64_t c = 0; c < 3; ++c)
          for (int64_t ky = 0; ky < 4; ++ky)
            for (int64_t kx = 0; kx < 4; ++kx)
              want[i++] = x[static_cast<size_t>(((b * 3 + c) * 8 + py * 4 + ky) * 12 + px * 4 + kx)];
  for (const int threads : {1, 2}) {
    CpuOps ops(threads);
    Vec y(x.size(), -7.0f), back(x.size(), -7.0f);
    ops.patchify(s, cview(x), view(y));
    CHECK(y == want);
    ops.unpatchify(s, cview(y), view(back));
    CHECK(back == x);
    Bf xb = to_bf16(x), yb(x.size()), backb(x.size());
    ops.patchify(s, cview(xb), view(yb));
    CHECK(to_f32(yb) == rounded(want));
    ops.unpatchify(s, cview(yb), view(backb));
    CHECK(same_bits(backb, xb));
  }
}

TEST_CASE("class_token_forward: class token + pos[0] first, then each patch + its position",
          "[vit-ops]") {
  const int64_t B = 3, N = 5, C = 7;
  const Vec x = random_vec(B * N * C, 62), cls = random_vec(C, 63), pos = random_vec((N + 1) * C, 64);
  for (const int threads : {1, 2}) {
    CpuOps ops(threads);
    Vec y(static_cast<size_t>(B * (N + 1) * C));
    ops.class_token_forward(cview(x), cls.data(), pos.data(), view(y), B, N, C);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t <= N; ++t)
        for (int64_t c = 0; c < C; ++c) {
          const float in = t == 0 ? cls[c] : x[static_cast<size_t>((b * N + t - 1) * C + c)];
          REQUIRE(y[static_cast<size_t>((b * (N + 1) + t) * C + c)] ==
                  in + pos[static_cast<size_t>(t * C + c)]);
        }
    Bf xb = to_bf16(x), yb(y.size());
    ops.class_token_forward(cview(xb), cls.data(), pos.data(), view(yb), B, N, C);
    Vec y_rounded(y.size());
    ops.class_token_forward(cview(rounded(x)), cls.data(), pos.data(), view(y_rounded), B, N, C);
    CHECK(to_f32(yb) == rounded(y_rounded));  // fp32 sum, rounded once
  }
}

TEST_CASE("copy_token_rows copies a run of rows per sample and leaves the rest", "[vit-ops]") {
  const int64_t B = 2, C = 3;
  const Vec src = random_vec(B * 5 * C, 65);
  CpuOps ops(2);
  Vec dst(static_cast<size_t>(B * 4 * C), 9.0f);
  ops.copy_token_rows(cview(src), 5, 1, view(dst), 4, 2, 2, B, C);  // rows 1, 2 -> 2, 3
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < 4; ++t)
      for (int64_t c = 0; c < C; ++c) {
        const float got = dst[static_cast<size_t>((b * 4 + t) * C + c)];
        if (t < 2) CHECK(got == 9.0f);
        else CHECK(got == src[static_cast<size_t>((b * 5 + t - 1) * C + c)]);
      }
}

TEST_CASE("attention without the mask: against double; bf16; 1, 2 and 3 threads", "[vit-ops]") {
  // T 65: a ViT's 64 patches + the class token (one block of all rows without the mask,
  // past the causal block size); T 7: a short one.
  for (const int64_t T_ : {int64_t{7}, int64_t{65}}) {
    const int64_t B = 3, C = 32, nh = 4;
    INFO("T " << T_);
    const Vec qkv = random_vec(B * T_ * 3 * C, 71, -2.0f, 2.0f);
    const Vec dout = random_vec(B * T_ * C, 72);
    const AttOut f1 = run_attention<float>(1, qkv, dout, B, T_, C, nh, false);
    const Dvec dout_d(dout.begin(), dout.end());
    const AttRef ref =
        attention_ref(Dvec(qkv.begin(), qkv.end()), &dout_d, B, T_, C, nh, false);
    CHECK(rel_error(f1.out, ref.out) < 1e-5);
    CHECK(rel_error(f1.att, ref.att) < 1e-5);
    CHECK(rel_error(f1.dqkv, ref.dqkv) < 1e-4);
    CHECK(std::count(f1.att.begin(), f1.att.end(), 0.0f) == 0);  // nothing masked
    for (const int threads : {2, 3}) {
      const AttOut fn = run_attention<float>(threads, qkv, dout, B, T_, C, nh, false);
      CHECK(same_bits(fn.out, f1.out));
      CHECK(same_bits(fn.att, f1.att));
      CHECK(same_bits(fn.dqkv, f1.dqkv));
    }
    const AttOut bf = run_attention<bf16_t>(2, qkv, dout, B, T_, C, nh, false);
    const AttOut fr = run_attention<float>(2, rounded(qkv), rounded(dout), B, T_, C, nh, false);
    CHECK(same_bits(bf.out, rounded(fr.out)));
    CHECK(same_bits(bf.dqkv, rounded(fr.dqkv)));
    // The causal result differs (the mask matters) and stays what it was.
    const AttOut causal = run_attention<float>(1, qkv, dout, B, T_, C, nh, true);
    CHECK_FALSE(same_bits(causal.out, f1.out));
  }
}
