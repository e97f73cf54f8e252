// Index arithmetic of the CUDA kernels' element loops (DESIGN.md rule 5: written once, tested
// on the CPU). A 64-bit `/` or `%` costs a GPU ~10 times a 32-bit one, and a 32-bit one ~20
// instructions; a loop over n < 2^31 elements can instead take 32-bit indices and divide
// by a divisor fixed at launch with a multiply-high and a shift (Granlund & Montgomery, as
// PyTorch's IntDivider). The quotients are exact, so results do not change by a bit.
#pragma once
#include <cstdint>

#include "kernels/common/hd.h"

namespace noeira {

// 32-bit indices serve a loop over n elements when every index below n fits in 31 bits:
// FastDivmod's domain, and a grid stride (< 2^31) added to one never wraps a uint32_t. A
// pure function of the shape, so eager and captured launches take the same path.
NOEIRA_HD bool use_index32(int64_t n) { return n >= 0 && n <= INT32_MAX; }

// n / d and n % d for 0 <= n < 2^31 and 1 <= d <= 2^31 (d = 0 is taken as 1: never divided
// by, as a launch over 0 elements returns first). shift = ceil(log2 d), magic =
// floor(2^32 (2^shift - d) / d) + 1 (< 2^32), and n / d = (mulhi(n, magic) + n) >> shift;
// the sum stays below 2^32 because mulhi(n, magic) <= n < 2^31.
struct FastDivmod {
  uint32_t divisor = 1;
  uint32_t magic = 1;
  uint32_t shift = 0;

  FastDivmod() = default;
  NOEIRA_HD explicit FastDivmod(uint32_t d) : divisor(d > 0 ? d : 1) {
    while (shift < 31 && (uint32_t{1} << shift) < divisor) ++shift;
    const uint64_t m = (uint64_t{1} << 32) * ((uint64_t{1} << shift) - divisor) / divisor + 1;
    magic = static_cast<uint32_t>(m);
  }

  NOEIRA_HD uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t hi = __umulhi(n, magic);
#else
    const uint32_t hi = static_cast<uint32_t>((static_cast<uint64_t>(n) * magic) >> 32);
#endif
    return (hi + n) >> shift;
  }
  NOEIRA_HD uint32_t mod(uint32_t n) const { return n - div(n) * divisor; }
};

// A divisor for an index type I: uint32_t divides by FastDivmod, int64_t by the machine's
// `/` (the path for n >= 2^31). Kernels templated on I write their index math once. A
// uint32_t divisor above 2^31 (a shape's dimension need not be bounded by n, e.g. a stride
// or T with few rows) is held as 2^31, where FastDivmod is still exact: every index is
// below it, so the quotient is 0 and the remainder the index, as for the real divisor.
template <class I>
struct Divider;

template <>
struct Divider<uint32_t> {
  FastDivmod f;
  Divider() = default;
  static constexpr int64_t kMaxDivisor = int64_t{1} << 31;
  NOEIRA_HD explicit Divider(int64_t d)
      : f(static_cast<uint32_t>(d < 1 ? 1 : (d > kMaxDivisor ? kMaxDivisor : d))) {}
  NOEIRA_HD uint32_t div(uint32_t n) const { return f.div(n); }
  NOEIRA_HD uint32_t mod(uint32_t n) const { return f.mod(n); }
  NOEIRA_HD uint32_t value() const { return f.divisor; }  // min(d, 2^31)
  // n / d, with n % d into rem.
  NOEIRA_HD uint32_t divmod(uint32_t n, uint32_t& rem) const {
    const uint32_t q = f.div(n);
    rem = n - q * f.divisor;
    return q;
  }
};

template <>
struct Divider<int64_t> {
  int64_t d = 1;
  Divider() = default;
  NOEIRA_HD explicit Divider(int64_t v) : d(v) {}
  NOEIRA_HD int64_t div(int64_t n) const { return n / d; }
  NOEIRA_HD int64_t mod(int64_t n) const { return n % d; }
  NOEIRA_HD int64_t value() const { return d; }
  NOEIRA_HD int64_t divmod(int64_t n, int64_t& rem) const {
    const int64_t q = n / d;
    rem = n - q * d;
    return q;
  }
};

}  // namespace noeira
