// CpuOps' option-A shortcut, dropout and crop + flip augmentation against their
// definitions in kernels/common.
#include "tests/support/image_reference.h"

using namespace noeira;
using namespace noeira::test::image_ref;

TEST_CASE("shortcut: 16 -> 32 channels at stride 2, and the identity", "[image-ops]") {
  CpuOps ops(2);
  ShortcutShape s;
  s.batch = 3, s.in_channels = 16, s.height = 7, s.width = 7, s.out_channels = 32, s.stride = 2;
  REQUIRE(s.out_height() == 4);
  const Vec x = random_vec(s.x_elems(), 61);
  Vec y(static_cast<size_t>(s.y_elems()), 9.0f);
  ops.shortcut_forward(s, cview(x), view(y));
  Vec y_ref(y.size(), 0.0f);
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t c = 0; c < 16; ++c)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j)
          y_ref[static_cast<size_t>(((b * 32 + c + 8) * 4 + i) * 4 + j)] =
              x[static_cast<size_t>(((b * 16 + c) * 7 + 2 * i) * 7 + 2 * j)];
  CHECK(same_bits(y, y_ref));

  const Vec dy = random_vec(s.y_elems(), 62);
  Vec dx(x.size(), 9.0f), dx_ref(x.size(), 0.0f);
  ops.shortcut_backward(s, cview(dy), view(dx));
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t c = 0; c < 16; ++c)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j)
          dx_ref[static_cast<size_t>(((b * 16 + c) * 7 + 2 * i) * 7 + 2 * j)] =
              dy[static_cast<size_t>(((b * 32 + c + 8) * 4 + i) * 4 + j)];
  CHECK(same_bits(dx, dx_ref));

  Bf yb(y.size());
  ops.shortcut_forward(s, cview(to_bf16(x)), view(yb));
  CHECK(same_bits(to_f32(yb), rounded(y_ref)));

  ShortcutShape id;
  id.batch = 2, id.in_channels = 4, id.height = 5, id.width = 6, id.out_channels = 4, id.stride = 1;
  const Vec xi = random_vec(id.x_elems(), 63);
  Vec yi(xi.size()), dxi(xi.size());
  ops.shortcut_forward(id, cview(xi), view(yi));
  CHECK(same_bits(yi, xi));
  ops.shortcut_backward(id, cview(xi), view(dxi));
  CHECK(same_bits(dxi, xi));
}

namespace {

// The option-A shortcut by its definition, in any storage type (a copy: the same bits).
template <class T>
std::vector<T> shortcut_ref(const ShortcutShape& s, const std::vector<T>& x) {
  std::vector<T> y(static_cast<size_t>(s.y_elems()), T{0});
  const int64_t Ho = s.out_height(), Wo = s.out_width(), p = s.pad_channels();
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t c = 0; c < s.in_channels; ++c)
      for (int64_t i = 0; i < Ho; ++i)
        for (int64_t j = 0; j < Wo; ++j)
          y[static_cast<size_t>(((b * s.out_channels + c + p) * Ho + i) * Wo + j)] =
              x[static_cast<size_t>(((b * s.in_channels + c) * s.height + i * s.stride) *
                                        s.width +
                                    j * s.stride)];
  return y;
}

template <class T>
std::vector<T> shortcut_grad_ref(const ShortcutShape& s, const std::vector<T>& dy) {
  std::vector<T> dx(static_cast<size_t>(s.x_elems()), T{0});
  const int64_t Ho = s.out_height(), Wo = s.out_width(), p = s.pad_channels();
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t c = 0; c < s.in_channels; ++c)
      for (int64_t i = 0; i < Ho; ++i)
        for (int64_t j = 0; j < Wo; ++j)
          dx[static_cast<size_t>(((b * s.in_channels + c) * s.height + i * s.stride) * s.width +
                                 j * s.stride)] =
              dy[static_cast<size_t>(((b * s.out_channels + c + p) * Ho + i) * Wo + j)];
  return dx;
}

}  // namespace

TEMPLATE_TEST_CASE("shortcut at stride 2 over even widths (rows as integer pairs, streamed "
                   "when large): its definition's bits, 1 and 2 threads, any alignment",
                   "[image-ops]", float, bf16_t) {
  using T = TestType;
  ShortcutShape big;  // ResNet-20's first downsampling: outputs of 2 MiB and more, streamed
  big.batch = 128, big.in_channels = 16, big.height = 32, big.width = 32;
  big.out_channels = 32, big.stride = 2;
  ShortcutShape odd_rows;  // an odd height over an even width
  odd_rows.batch = 3, odd_rows.in_channels = 4, odd_rows.height = 5, odd_rows.width = 6;
  odd_rows.out_channels = 8, odd_rows.stride = 2;
  for (const ShortcutShape& s : {big, odd_rows}) {
    const std::vector<T> x = [&] {
      const Vec v = random_vec(s.x_elems() + 1, 64);
      if constexpr (std::is_same_v<T, float>) return v;
      else return to_bf16(v);
    }();
    const std::vector<T> dy(x.begin(), x.begin() + s.y_elems() + 1);
    for (int64_t offset : {0, 1}) {  // 1: rows not pair-aligned, element by element
      const std::vector<T> xs(x.begin() + offset, x.begin() + offset + s.x_elems());
      const std::vector<T> dys(dy.begin() + offset, dy.begin() + offset + s.y_elems());
      const std::vector<T> y_ref = shortcut_ref(s, xs), dx_ref = shortcut_grad_ref(s, dys);
      for (int threads : {1, 2}) {
        INFO("H " << s.height << " W " << s.width << " offset " << offset << " threads "
                  << threads);
        CpuOps ops(threads);
        std::vector<T> y(s.y_elems() + 1, T{9}), dx(s.x_elems() + 1, T{9});
        ops.shortcut_forward(s, ConstView(x.data() + offset, s.x_elems()),
                             View(y.data() + offset, s.y_elems()));
        ops.shortcut_backward(s, ConstView(dy.data() + offset, s.y_elems()),
                              View(dx.data() + offset, s.x_elems()));
        CHECK(same_bits(std::vector<T>(y.begin() + offset, y.begin() + offset + s.y_elems()),
                        y_ref));
        CHECK(same_bits(std::vector<T>(dx.begin() + offset, dx.begin() + offset + s.x_elems()),
                        dx_ref));
      }
    }
  }
}

TEST_CASE("dropout: the dropout_keep mask, scale 1 / (1 - p), p = 0 is the identity",
          "[image-ops]") {
  CpuOps ops(2);
  const int64_t n = 5000;
  const Vec x = random_vec(n, 71);
  StepCounters counters{12, 3};
  const uint64_t seed = 0x1234567890ull;
  Vec y(static_cast<size_t>(n));
  ops.dropout(cview(x), view(y), 0.0f, seed, 2, &counters);
  CHECK(same_bits(y, x));

  const float p = 0.3f;
  ops.dropout(cview(x), view(y), p, seed, 2, &counters);
  const float scale = 1.0f / (1.0f - p);
  int64_t kept = 0;
  bool match = true;
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = dropout_keep(seed, 12, 2, static_cast<uint64_t>(i), p);
    kept += keep;
    match &= y[static_cast<size_t>(i)] == (keep ? x[static_cast<size_t>(i)] * scale : 0.0f);
  }
  CHECK(match);
  CHECK(std::abs(static_cast<double>(kept) / n - 0.7) < 0.03);

  // Backward is the same op on dy: the same mask, drawn again.
  Vec again(y.size());
  ops.dropout(cview(x), view(again), p, seed, 2, &counters);
  CHECK(same_bits(again, y));
  // Another step or layer: another mask.
  counters.step = 13;
  ops.dropout(cview(x), view(again), p, seed, 2, &counters);
  CHECK_FALSE(same_bits(again, y));
  counters.step = 12;
  ops.dropout(cview(x), view(again), p, seed, 3, &counters);
  CHECK_FALSE(same_bits(again, y));

  // bf16: x * mask rounded once (a dropped negative x gives -0, as torch's product).
  Bf yb(y.size());
  ops.dropout(cview(to_bf16(x)), view(yb), p, seed, 2, &counters);
  const Vec xr = rounded(x);
  bool match_b = true;
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = dropout_keep(seed, 12, 2, static_cast<uint64_t>(i), p);
    match_b &= yb[static_cast<size_t>(i)] ==
               f32_to_bf16(xr[static_cast<size_t>(i)] * (keep ? scale : 0.0f));
  }
  CHECK(match_b);
}

TEST_CASE("augment_crop_flip: crops and flips from augment_draw, padding filled, src kept",
          "[image-ops]") {
  CpuOps ops(2);
  AugmentSpec spec;
  spec.count = 40, spec.channels = 3, spec.height = 6, spec.width = 8, spec.pad = 2;
  spec.fill[0] = -1.5f, spec.fill[1] = -2.5f, spec.fill[2] = -3.5f;
  const int64_t C = 3, H = 6, W = 8, P = 2, image = C * H * W;
  const Vec src = random_vec(spec.count * image, 81);
  const Vec src_copy = src;
  for (bool flip : {true, false}) {
    spec.flip = flip;
    Vec dst(src.size(), 0.0f);
    ops.augment_crop_flip(spec, src.data(), dst.data(), 99, 4);
    CHECK(same_bits(src, src_copy));
    bool all_match = true, any_flip = false, any_fill = false;
    for (int64_t s = 0; s < spec.count; ++s) {
      const AugmentDraw d = augment_draw(99, 4, static_cast<uint32_t>(s), P, flip);
      CHECK((d.top >= 0 && d.top <= 2 * P && d.left >= 0 && d.left <= 2 * P));
      any_flip |= d.flip;
      // The reference: pad with fill, crop at (top, left), then mirror the crop.
      for (int64_t c = 0; c < C; ++c)
        for (int64_t y = 0; y < H; ++y)
          for (int64_t x = 0; x < W; ++x) {
            const int64_t xc = d.flip ? W - 1 - x : x;
            const int64_t r = y + d.top - P, q = xc + d.left - P;
            const bool inside = r >= 0 && r < H && q >= 0 && q < W;
            const float want = inside ? src[static_cast<size_t>(s * image + (c * H + r) * W + q)]
                                      : spec.fill[c];
            any_fill |= !inside;
            all_match &= dst[static_cast<size_t>(s * image + (c * H + y) * W + x)] == want;
          }
    }
    CHECK(all_match);
    CHECK(any_flip == flip);
    CHECK(any_fill);
  }
}
