#include "kernels/cpu/bf16_conv3x3_wgrad_amx.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "kernels/cpu/channel_blocks.h"
#include "kernels/cpu/onednn_engine.h"

#if defined(__AVX512BW__)
#include <immintrin.h>
#endif
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define NOEIRA_AMX_WGRAD_BUILT 1
#endif

namespace noeira {

namespace {

constexpr int64_t kBlock = 16;  // channels per tile side
constexpr int64_t kStep = 32;   // bf16 values of a tile row: the pixels of one tdpbf16ps
constexpr int kTaps = 9;
using onednn::align_up;  // the conv workspace's cache-line rounding

// Images per chunk: the slab is walked a chunk at a time, the chunk's x and dy copies
// (about kChunkBytes) staying in L2 while every group of accumulators reads them.
constexpr size_t kChunkBytes = 768 * 1024;

// A chunk of n images in the virtual order (see the header).
struct Geometry {
  int64_t Wr = 0;     // a row: W values, then two zeros (even, so no pair of dy values
                      // straddles two rows)
  int64_t image = 0;  // H + 1 rows (the last all zeros)
  int64_t K = 0;      // the chunk's values, rounded up to kStep (zeros beyond)
  int64_t P = 0;      // x's plane per channel: K + 1 at least, an odd number of lines
  int64_t E = 0;      // zero values before and after dy's: a tap's reach
  int64_t rows = 0;   // dy's pair rows per channel block: (E + K + E) / 2
  Geometry(const ConvShape& s, int64_t n) {
    Wr = s.width + 2;
    image = (s.height + 1) * Wr;
    K = (n * image + kStep - 1) / kStep * kStep;
    P = K + kStep;
    if ((P / kStep) % 2 == 0) P += kStep;  // 16 rows of a tile on 16 different sets
    E = (Wr + 2 + kStep - 1) / kStep * kStep;
    rows = (E + K + E) / 2;
  }
  // Tap (p, q) pairs x's virtual value V + d with dy's V.
  int64_t shift(int64_t tap) const { return (tap / 3 - 1) * Wr + (tap % 3 - 1); }
};

// The area: x's planes twice (Cin, P), the second a value later; dy's pairs (Cout / 16,
// rows, 16 pairs); the accumulators (9, Cin / 16, Cout / 16, 16 x 16) fp32 between chunks.
struct Area {
  int64_t chunk = 1;
  size_t x_bytes = 0, dy_bytes = 0, acc_bytes = 0;
  Area(const ConvShape& s, int64_t images) {
    const Geometry one(s, 1);
    const size_t per_image =
        static_cast<size_t>((2 * s.in_channels + s.out_channels) * one.image) * sizeof(bf16_t);
    chunk = std::clamp<int64_t>(static_cast<int64_t>(kChunkBytes / per_image), 1,
                                std::max<int64_t>(images, 1));
    const Geometry g(s, chunk);
    x_bytes = align_up(static_cast<size_t>(s.in_channels * g.P) * sizeof(bf16_t));
    dy_bytes = align_up(static_cast<size_t>(s.out_channels * g.rows * 2) * sizeof(bf16_t));
    acc_bytes = static_cast<size_t>(kTaps * s.in_channels * s.out_channels) * sizeof(float);
  }
  size_t bytes() const { return 2 * x_bytes + dy_bytes + acc_bytes; }
};

#if defined(NOEIRA_AMX_WGRAD_BUILT)

bool cpu_has_amx_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  // CPUID leaf 7, sub-leaf 0: EDX bit 22 is AMX-BF16, bit 24 AMX-TILE.
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) != 0 && (d & (1u << 22)) != 0 &&
         (d & (1u << 24)) != 0;
}

// Linux hands a process the tiles' 8 KiB of state only when asked (arch_prctl
// ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); oneDNN asks too, and asking twice is fine.
bool os_grants_tiles() {
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

// The tile registers, as ldtilecfg reads them: palette 1, every tile 16 rows of 64 bytes
// (C: 16 x 16 fp32; A: 16 channels x 32 bf16; B: 16 pixel pairs x 16 channels x 2 bf16).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};
static_assert(sizeof(TileConfig) == 64);

// The tile instructions, register numbers as immediates (GCC's _tile_* macros paste the
// tokens, which a template parameter is not), in AT&T syntax (GCC's default; these do not
// offer -masm=intel's alternative). The memory clobbers keep the copies that feed the
// loads, and the reads of what the stores wrote, on their side.
template <int T>
inline void tile_load(const void* p, int64_t stride) {
  asm volatile("tileloadd (%0,%1,1), %%tmm%c2" ::"r"(p), "r"(stride), "i"(T) : "memory");
}
template <int T>
inline void tile_store(void* p, int64_t stride) {
  asm volatile("tilestored %%tmm%c2, (%0,%1,1)" ::"r"(p), "r"(stride), "i"(T) : "memory");
}
template <int T>
inline void tile_zero() {
  asm volatile("tilezero %%tmm%c0" ::"i"(T));
}
// C += A * B.
template <int C, int A, int B>
inline void tile_dp() {
  asm volatile("tdpbf16ps %%tmm%c0, %%tmm%c1, %%tmm%c2" ::"i"(B), "i"(A), "i"(C));
}

// n values from src to dst, then `zeros` zeros (at most 32), and the same one value later
// at dst + 1 (which the caller has cleared before the first): masked vector moves
// (ResNet-20's rows are 16-64 bytes; a memcpy call per row cost more than the copy).
inline void copy_row_twice(const bf16_t* src, int64_t n, int64_t zeros, bf16_t* dst,
                           bf16_t* later) {
#if defined(__AVX512BW__)
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    const __m512i v = _mm512_loadu_si512(src + j);
    _mm512_storeu_si512(dst + j, v);
    _mm512_storeu_si512(later + 1 + j, v);
  }
  const int64_t rest = n - j, out = rest + zeros;
  const auto mask = [](int64_t k) { return static_cast<__mmask32>((uint64_t{1} << k) - 1); };
  const __m512i v = _mm512_maskz_loadu_epi16(mask(rest), src + j);
  if (out <= 32) {
    _mm512_mask_storeu_epi16(dst + j, mask(out), v);
    _mm512_mask_storeu_epi16(later + 1 + j, mask(out), v);
  } else {
    _mm512_storeu_si512(dst + j, v);
    _mm512_storeu_si512(later + 1 + j, v);
    _mm512_mask_storeu_epi16(dst + j + 32, mask(out - 32), _mm512_setzero_si512());
    _mm512_mask_storeu_epi16(later + 1 + j + 32, mask(out - 32), _mm512_setzero_si512());
  }
#else
  for (bf16_t* d : {dst, later + 1}) {
    std::memcpy(d, src, static_cast<size_t>(n) * sizeof(bf16_t));
    std::memset(d + n, 0, static_cast<size_t>(zeros) * sizeof(bf16_t));
  }
#endif
}

// x (n, Cin, H, W) -> xs (Cin, P): per channel each image's rows each with its two zeros,
// its zero row, and zeros to P; and xv the same one value later (a zero first).
void copy_x(const ConvShape& s, int64_t n, const bf16_t* x, const Geometry& g, bf16_t* xs,
            bf16_t* xv) {
  const int64_t H = s.height, W = s.width, C = s.in_channels;
  for (int64_t c = 0; c < C; ++c) {
    bf16_t* plane = xs + c * g.P;
    bf16_t* later = xv + c * g.P;
    later[0] = 0;
    int64_t at = 0;
    for (int64_t b = 0; b < n; ++b) {
      const bf16_t* image = x + (b * C + c) * H * W;
      for (int64_t i = 0; i < H; ++i, at += g.Wr)
        copy_row_twice(image + i * W, W, g.Wr - W, plane + at, later + at);
      std::memset(plane + at, 0, static_cast<size_t>(g.Wr) * sizeof(bf16_t));
      std::memset(later + 1 + at, 0, static_cast<size_t>(g.Wr) * sizeof(bf16_t));
      at += g.Wr;
    }
    std::memset(plane + at, 0, static_cast<size_t>(g.P - at) * sizeof(bf16_t));
    std::memset(later + 1 + at, 0, static_cast<size_t>(g.P - at - 1) * sizeof(bf16_t));
  }
}

// dy (n, Cout, H, W) -> pairs (Cout / 16, rows, 16): row r of block ob holds, for each of
// its 16 channels, the virtual values 2r - E and 2r - E + 1 (zeros outside the images and
// in their padding). 16 pairs of 16 channels at a time transposed in registers, then each
// row stored where its pixels go.
void copy_dy_pairs(const ConvShape& s, int64_t n, const bf16_t* dy, const Geometry& g,
                   uint32_t* pairs) {
  const int64_t Cout = s.out_channels, half_w = s.width / 2, hw = s.height * half_w;
  const int64_t half_row = g.Wr / 2, half_image = g.image / 2;
  const auto put = [](uint32_t* row, const uint32_t* from) {
    std::memcpy(row, from, kBlock * sizeof(uint32_t));
  };
  for (int64_t ob = 0; ob < Cout / kBlock; ++ob) {
    uint32_t* block = pairs + ob * g.rows * kBlock;
    std::memset(block, 0, static_cast<size_t>(g.E / 2 * kBlock) * sizeof(uint32_t));
    for (int64_t b = 0; b < n; ++b) {
      uint32_t* image = block + (g.E / 2 + b * half_image) * kBlock;  // its row 0's pairs
      const auto* src = reinterpret_cast<const uint32_t*>(dy) + (b * Cout + ob * kBlock) * hw;
      // (its 16 channels, hw pairs) -> virtual rows; the zero pair closing each row.
      const auto row_of = [&](int64_t q) {
        return image + ((q / half_w) * half_row + q % half_w) * kBlock;
      };
      int64_t q0 = 0;
      alignas(64) uint32_t t[kBlock * kBlock];
      for (; q0 + kBlock <= hw; q0 += kBlock) {
        transpose_16x16(src + q0, hw, t, kBlock);
        for (int64_t k = 0; k < kBlock; ++k) put(row_of(q0 + k), t + k * kBlock);
      }
      for (; q0 < hw; ++q0)
        for (int64_t l = 0; l < kBlock; ++l)
          std::memcpy(row_of(q0) + l, src + l * hw + q0, sizeof(uint32_t));
      for (int64_t i = 0; i < s.height; ++i)
        std::memset(image + (i * half_row + half_w) * kBlock, 0,
                    static_cast<size_t>((half_row - half_w) * kBlock) * sizeof(uint32_t));
      std::memset(image + s.height * half_row * kBlock, 0,
                  static_cast<size_t>(half_row * kBlock) * sizeof(uint32_t));
    }
    uint32_t* end = block + (g.E / 2 + n * half_image) * kBlock;
    std::memset(end, 0, static_cast<size_t>(block + g.rows * kBlock - end) * sizeof(uint32_t));
  }
}

// One accumulator tile of a group: its dy operand at step 0 and its fp32 tile.
struct Member {
  const uint32_t* b;
  float* acc;
};
constexpr int kGroup = 6;  // C tiles 0-5; B (dy) 6; A (x) 7

// Steps per pass of a group: the group's x rows and dy pairs of 8 steps (~10 KiB each) stay
// in L1 from one group to the next; whole chunks per group were 4-8% slower.
constexpr int64_t kBlockSteps = 8;

// The taps by the parity of their shift: a tap of an even shift (q = 1, as Wr is even) meets
// dy's pairs with x's values as they are (xs), one of an odd shift with them a value later
// (xv), so each group's members share one x tile per step.
struct TapClass {
  int odd;
  int64_t count;
  int64_t taps[6];
};
constexpr TapClass kTapClasses[] = {{0, 3, {1, 4, 7}}, {1, 6, {0, 2, 3, 5, 6, 8}}};
// So every group has 3 or 6 members (run_group below).
static_assert(kTapClasses[0].count == 3 && kTapClasses[1].count == kGroup && kGroup == 6);

// G accumulator tiles over `steps` steps of 32 pixels: each step loads the group's x tile
// once and each member's dy tile. `first`: the tiles start from zero, else from acc.
template <int... M>
void run_group(std::integer_sequence<int, M...>, const Member* m, const bf16_t* a,
               int64_t steps, int64_t a_stride, bool first) {
  if (first) (tile_zero<M>(), ...);
  else (tile_load<M>(m[M].acc, 64), ...);
  for (int64_t s = 0; s < steps; ++s) {
    tile_load<7>(a + s * kStep, a_stride);
    ((tile_load<6>(m[M].b + s * kBlock * kBlock, 64), tile_dp<M, 7, 6>()), ...);
  }
  (tile_store<M>(m[M].acc, 64), ...);
}

// A class's members are 3 or 6 per output block, taken 6 at a time: every group has 3 or 6.
void run_group(int g, const Member* m, const bf16_t* a, int64_t steps, int64_t a_stride,
               bool first) {
  if (g == 3) return run_group(std::make_integer_sequence<int, 3>{}, m, a, steps, a_stride, first);
  run_group(std::make_integer_sequence<int, kGroup>{}, m, a, steps, a_stride, first);
}

#endif  // NOEIRA_AMX_WGRAD_BUILT

}  // namespace

bool amx_wgrad_available() {
#if defined(NOEIRA_AMX_WGRAD_BUILT)
  static const bool ok = cpu_has_amx_bf16() && os_grants_tiles();
  return ok;
#else
  return false;
#endif
}

bool amx_wgrad_takes(const ConvShape& s) {
  return s.kernel_h == 3 && s.kernel_w == 3 && s.stride == 1 && s.pad == 1 &&
         s.width % 2 == 0 && s.in_channels > 0 && s.in_channels % kBlock == 0 &&
         s.out_channels > 0 && s.out_channels % kBlock == 0;
}

size_t amx_wgrad_area_bytes(const ConvShape& s, int64_t images) {
  return Area(s, images).bytes();
}

void amx_wgrad_slab(const ConvShape& s, int64_t images, const bf16_t* x, const bf16_t* dy,
                    float* dw, std::byte* area) {
#if defined(NOEIRA_AMX_WGRAD_BUILT)
  const Area a(s, images);
  // xs (Cin, P): x's virtual values; xv the same a value later (a zero first).
  auto* xs = reinterpret_cast<bf16_t*>(area);
  auto* xv = reinterpret_cast<bf16_t*>(area + a.x_bytes);
  auto* pairs = reinterpret_cast<uint32_t*>(area + 2 * a.x_bytes);
  // (9, Cin / 16, Cout / 16) tiles of 16 x 16: acc[c][o] of the tap and blocks.
  auto* acc = reinterpret_cast<float*>(area + 2 * a.x_bytes + a.dy_bytes);
  const int64_t Cin = s.in_channels, Cout = s.out_channels, HW = s.height * s.width;
  const int64_t in_blocks = Cin / kBlock, out_blocks = Cout / kBlock;
  const auto tile_of = [&](int64_t tap, int64_t cb, int64_t ob) {
    return acc + ((tap * in_blocks + cb) * out_blocks + ob) * kBlock * kBlock;
  };
  if (images <= 0) {
    std::fill(dw, dw + Cout * Cin * kTaps, 0.0f);
    return;
  }
  const TileConfig config;
  for (int64_t b0 = 0; b0 < images; b0 += a.chunk) {
    const int64_t n = std::min(a.chunk, images - b0);
    const Geometry g(s, n);
    copy_x(s, n, x + b0 * Cin * HW, g, xs, xv);
    copy_dy_pairs(s, n, dy + b0 * Cout * HW, g, pairs);
    // After the copies' calls: the ABI does not keep the tile configuration across a call.
    asm volatile("ldtilecfg %0" ::"m"(config));
    const int64_t steps = g.K / kStep;
    for (int64_t s0 = 0; s0 < steps; s0 += kBlockSteps) {
      const int64_t run = std::min(kBlockSteps, steps - s0);
      for (int64_t cb = 0; cb < in_blocks; ++cb)
        for (const TapClass& tc : kTapClasses) {
          const bf16_t* xa = (tc.odd ? xv : xs) + cb * kBlock * g.P + s0 * kStep;
          const int64_t members = out_blocks * tc.count;  // (output block, tap) pairs
          for (int64_t k0 = 0; k0 < members; k0 += kGroup) {
            Member m[kGroup];
            const int count = static_cast<int>(std::min<int64_t>(kGroup, members - k0));
            for (int j = 0; j < count; ++j) {
              const int64_t ob = (k0 + j) / tc.count, tap = tc.taps[(k0 + j) % tc.count];
              const int64_t row = (g.E + s0 * kStep - tc.odd - g.shift(tap)) / 2;
              m[j] = Member{pairs + (ob * g.rows + row) * kBlock, tile_of(tap, cb, ob)};
            }
            run_group(count, m, xa, run, g.P * static_cast<int64_t>(sizeof(bf16_t)),
                      b0 == 0 && s0 == 0);
          }
        }
    }
  }
  asm volatile("tilerelease" ::: "memory");
  // acc (9, Cin / 16, Cout / 16, 16 c, 16 o) -> dw (Cout, Cin, 3, 3).
  for (int64_t tap = 0; tap < kTaps; ++tap)
    for (int64_t cb = 0; cb < in_blocks; ++cb)
      for (int64_t ob = 0; ob < out_blocks; ++ob) {
        const float* t = tile_of(tap, cb, ob);
        for (int64_t ci = 0; ci < kBlock; ++ci)
          for (int64_t oi = 0; oi < kBlock; ++oi)
            dw[((ob * kBlock + oi) * Cin + cb * kBlock + ci) * kTaps + tap] = t[ci * kBlock + oi];
      }
#else
  (void)s, (void)images, (void)x, (void)dy, (void)dw, (void)area;
#endif
}

}  // namespace noeira
