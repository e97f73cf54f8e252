// The convolution slabs' layout copies (kernels/cpu/channel_blocks.h): nchw -> nChw16c or
// nhwc and back give exactly the bytes of oneDNN's own reorder between the same
// descriptors, for bf16 and fp32, pixel counts with and without tails (< 32, < 16), one and
// several blocks; streamed back into nchw too.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/channel_blocks.h"
#include "kernels/cpu/onednn_engine.h"

using namespace noeira;

namespace {

using md = dnnl::memory::desc;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// Random bit patterns (NaN payloads included: the copies must not look at values).
std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(g());
  return v;
}

// oneDNN's reorder from `from_tag` to `to_tag` of the same dims and type.
std::vector<uint8_t> onednn_reorder(const std::vector<uint8_t>& src, const dnnl::memory::dims& d,
                                    dt type, tag from_tag, tag to_tag) {
  const dnnl::engine& e = onednn::cpu_engine();
  const md from(d, type, from_tag), to(d, type, to_tag);
  std::vector<uint8_t> out(to.get_size());
  dnnl::memory a(from, e, const_cast<uint8_t*>(src.data())), b(to, e, out.data());
  dnnl::stream s(e);
  dnnl::reorder(a, b).execute(s, a, b);
  s.wait();
  return out;
}

}  // namespace

TEST_CASE("channel blocks: nchw <-> nChw16c and nhwc copies match oneDNN's reorder bit for bit",
          "[onednn]") {
  struct Case {
    int64_t N, C, H, W;
  };
  const Case cases[] = {{8, 16, 32, 32}, {8, 32, 16, 16}, {8, 64, 8, 8}, {3, 16, 26, 26},
                        {2, 48, 5, 3},   {1, 16, 1, 1},   {2, 32, 4, 5},
                        {2, 16, 7, 7}};  // 49 pixels: a 32-pixel tile, a 16-pixel one, one left
  struct Layout {
    ChannelLayout ours;
    tag onednn;
  };
  const Layout layouts[] = {{ChannelLayout::kBlocks16, tag::nChw16c},
                            {ChannelLayout::kChannelsLast, tag::nhwc}};
  for (const Layout& l : layouts)
  for (const dt type : {dt::bf16, dt::f32})
    for (const Case& c : cases) {
      const size_t bytes = dnnl::memory::data_type_size(type);
      INFO((l.ours == ChannelLayout::kBlocks16 ? "nChw16c" : "nhwc")
           << ", dtype bytes " << bytes << ", N " << c.N << " C " << c.C << " H " << c.H
           << " W " << c.W);
      REQUIRE(channel_blocks_apply(c.C, bytes));
      const dnnl::memory::dims d{c.N, c.C, c.H, c.W};
      const size_t n = static_cast<size_t>(c.N * c.C * c.H * c.W) * bytes;
      const std::vector<uint8_t> plain = random_bytes(n, 7);

      std::vector<uint8_t> blocked(n);
      nchw_to_channel_blocks(plain.data(), blocked.data(), c.N, c.C, c.H * c.W, bytes, l.ours);
      CHECK(blocked == onednn_reorder(plain, d, type, tag::nchw, l.onednn));

      std::vector<uint8_t> back(n);
      channel_blocks_to_nchw(blocked.data(), back.data(), c.N, c.C, c.H * c.W, bytes, l.ours);
      CHECK(back == plain);
      CHECK(back == onednn_reorder(blocked, d, type, l.onednn, tag::nchw));
      // Streamed into nchw (streaming_store.h): the same bytes, also where the rows do not
      // allow it (plain stores then) or dst is off a 64-byte boundary.
      for (size_t offset : {size_t{0}, size_t{4}}) {
        std::vector<uint8_t> streamed(n + 64 + offset);
        uint8_t* at = streamed.data() + (64 - reinterpret_cast<uintptr_t>(streamed.data()) % 64) %
                                            64 + offset;
        channel_blocks_to_nchw(blocked.data(), at, c.N, c.C, c.H * c.W, bytes, l.ours, true);
        CHECK(std::memcmp(at, plain.data(), n) == 0);
      }
    }
}

TEST_CASE("channel blocks: only whole blocks of 16 channels of 2- or 4-byte elements",
          "[onednn]") {
  CHECK(channel_blocks_apply(16, 2));
  CHECK(channel_blocks_apply(64, 4));
  CHECK_FALSE(channel_blocks_apply(3, 4));    // a first layer's padded block: oneDNN's reorder
  CHECK_FALSE(channel_blocks_apply(24, 2));
  CHECK_FALSE(channel_blocks_apply(0, 4));
  CHECK_FALSE(channel_blocks_apply(16, 1));
}
