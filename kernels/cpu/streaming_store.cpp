#include "kernels/cpu/streaming_store.h"

#include <cstdlib>
#include <cstring>
#include <string_view>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace noeira {

namespace {

bool switched_off() {
  const char* v = std::getenv("NOEIRA_STREAM_STORES");
  return v != nullptr && std::string_view(v) == "0";
}

}  // namespace

bool streaming_stores_available() {
#if defined(__AVX512F__)
  static const bool on = !switched_off();
  return on;
#else
  return false;
#endif
}

bool streams(size_t bytes) { return bytes >= kStreamBytes && streaming_stores_available(); }

void stream_copy(void* dst, const void* src, size_t bytes) {
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  size_t i = 0;
#if defined(__AVX512F__)
  i = std::min(bytes, (64 - reinterpret_cast<uintptr_t>(d) % 64) % 64);
  std::memcpy(d, s, i);
  for (; i + 64 <= bytes; i += 64)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i), _mm512_loadu_si512(s + i));
#endif
  std::memcpy(d + i, s + i, bytes - i);
}

void stream_fence() {
#if defined(__AVX512F__)
  _mm_sfence();
#endif
}

}  // namespace noeira
