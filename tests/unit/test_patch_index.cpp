// The CUDA patch kernels' index math (kernels/common/patch_index.h) on the host: for every
// element of real and odd shapes, PatchIndex<I>::source equals PatchShape::patch_source in
// both index types.
#include <catch2/catch.hpp>

#include <cstdint>

#include "kernels/common/patch_index.h"

using namespace noeira;

TEST_CASE("patch index: 32- and 64-bit sources equal patch_source for every element",
          "[image-ops]") {
  const PatchShape shapes[] = {
      {.batch = 2, .channels = 3, .height = 32, .width = 32, .patch = 4},  // vit-tiny
      {.batch = 3, .channels = 1, .height = 28, .width = 28, .patch = 7},
      {.batch = 2, .channels = 5, .height = 6, .width = 15, .patch = 3},
      {.batch = 1, .channels = 2, .height = 5, .width = 5, .patch = 5},
      {.batch = 4, .channels = 3, .height = 8, .width = 8, .patch = 1}};
  for (const PatchShape& s : shapes) {
    INFO("patches of " << s.batch << "x" << s.channels << "x" << s.height << "x" << s.width
                       << ", patch " << s.patch);
    const PatchIndex<uint32_t> narrow(s);
    const PatchIndex<int64_t> wide(s);
    int64_t wrong = 0;
    for (int64_t i = 0; i < s.elems(); ++i) {
      const int64_t want = s.patch_source(i);
      wrong += narrow.source(static_cast<uint32_t>(i)) != want;
      wrong += wide.source(i) != want;
    }
    CHECK(wrong == 0);
  }
}
