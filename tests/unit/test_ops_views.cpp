// The ops interface's views (kernels/view.h) and dtype dispatch (kernels/dispatch.h), and
// the CPU's data ops that take several dtype pairs: gather_rows (fp32, fp32 -> bf16,
// int32 labels) and cast.
#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/cpu_stream.h"
#include "kernels/dispatch.h"
#include "nn/tensor.h"
#include "tests/support/views.h"

using namespace noeira;
using noeira::test::view_of;

TEST_CASE("A tensor passes to an op as a view of its pointer, dtype and element count",
          "[ops]") {
  std::vector<bf16_t> storage(24);
  Tensor t;
  t.data = storage.data();
  t.shape = Shape{2, 3, 4};
  t.dtype = DType::kBF16;
  const View v = t;
  const ConstView c = t;
  CHECK(v.data == storage.data());
  CHECK(v.dtype == DType::kBF16);
  CHECK(v.n == 24);
  CHECK(c.data == v.data);
  CHECK(c.n == 24);
  CHECK(v.as<bf16_t>() == storage.data());
  const View none = Tensor{};
  CHECK(none.empty());
  const std::vector<int32_t> labels(5);
  const ConstView l = view_of(labels, 1);
  CHECK(l.dtype == DType::kI32);
  CHECK(l.n == 4);
}

TEST_CASE("dispatch_float turns a view's dtype into its storage type", "[ops]") {
  std::vector<float> f(3);
  std::vector<bf16_t> b(3);
  auto name = [](auto storage) {
    return std::is_same_v<typename decltype(storage)::type, float> ? "f32" : "bf16";
  };
  CHECK(std::strcmp(dispatch_float("test", {view_of(f)}, name), "f32") == 0);
  CHECK(std::strcmp(dispatch_float("test", {view_of(b), View{}}, name), "bf16") == 0);
  auto pair = [](auto from, auto to) {
    return std::is_same_v<typename decltype(from)::type, float> &&
           std::is_same_v<typename decltype(to)::type, bf16_t>;
  };
  CHECK(dispatch_float_pair("test", DType::kF32, DType::kBF16, pair));
  CHECK_FALSE(dispatch_float_pair("test", DType::kBF16, DType::kF32, pair));
}

TEST_CASE("CPU gather_rows: fp32 rows, rounded bf16 rows and int32 labels of the counter's batch",
          "[ops]") {
  CpuOps ops(2);
  const int64_t count = 10, rows = 3, row_elems = 5;
  std::vector<int32_t> perm(count);
  std::iota(perm.rbegin(), perm.rend(), 0);  // 9, 8, ..., 0
  const StepCounters counters{7, 2};         // batch 2: perm[6..8] = 3, 2, 1
  std::vector<float> src(count * row_elems);
  for (size_t i = 0; i < src.size(); ++i) src[i] = 0.1f * static_cast<float>(i) + 1e-3f;
  std::vector<int32_t> labels(count);
  std::iota(labels.begin(), labels.end(), 100);

  std::vector<float> f32(rows * row_elems);
  std::vector<bf16_t> b16(rows * row_elems);
  std::vector<int32_t> y(rows);
  ops.gather_rows(view_of(src), perm.data(), rows, row_elems, &counters, view_of(f32));
  ops.gather_rows(view_of(src), perm.data(), rows, row_elems, &counters, view_of(b16));
  ops.gather_rows(view_of(labels), perm.data(), rows, 1, &counters, view_of(y));
  const int32_t want[rows] = {3, 2, 1};
  for (int64_t r = 0; r < rows; ++r) {
    CHECK(y[static_cast<size_t>(r)] == 100 + want[r]);
    for (int64_t k = 0; k < row_elems; ++k) {
      const float s = src[static_cast<size_t>(want[r] * row_elems + k)];
      CHECK(f32[static_cast<size_t>(r * row_elems + k)] == s);
      CHECK(b16[static_cast<size_t>(r * row_elems + k)] == f32_to_bf16(s));
    }
  }
}

TEST_CASE("CPU cast rounds fp32 to bf16, widens back exactly, and copies one dtype to itself",
          "[ops]") {
  CpuOps ops(1);
  const std::vector<float> x = {1.0f, 3.14159265f, -2.5f, 1e-3f, 65504.0f};
  const auto n = static_cast<int64_t>(x.size());
  std::vector<bf16_t> b(x.size());
  std::vector<float> back(x.size()), copy(x.size());
  ops.cast(view_of(x), view_of(b));
  ops.cast(view_of(b), view_of(back));
  ops.cast(view_of(x), view_of(copy));
  for (int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<size_t>(i);
    CHECK(b[k] == f32_to_bf16(x[k]));
    CHECK(back[k] == round_to_bf16(x[k]));
    CHECK(copy[k] == x[k]);
  }
}

// Found by scripts/sanitize (UBSan): a module without parameters has an empty gradient
// arena with a null base, and zeroing it passed null to memset.
TEST_CASE("CPU fill_zero and copies of zero bytes are no-ops, even on null pointers", "[ops]") {
  CpuStream stream;
  stream.fill_zero(nullptr, 0);
  stream.copy_to_device(nullptr, nullptr, 0);
  stream.copy_to_host(nullptr, nullptr, 0);
  std::vector<float> a = {1, 2}, b = {3, 4};
  stream.copy_to_device(a.data(), b.data(), sizeof(float));
  CHECK(a == std::vector<float>{3, 2});
  stream.fill_zero(b.data(), b.size() * sizeof(float));
  CHECK(b == std::vector<float>{0, 0});
}

TEST_CASE("CPU fill_zero shared by threads zeroes exactly the range asked for", "[ops]") {
  // Below 256 KiB one memset; from there one piece per thread, a multiple of 4 KiB long,
  // the last piece shorter or (more threads than pieces) empty. 512 KiB + 1 over 2
  // threads: half of it rounded down is a whole number of pages, so a piece size that
  // drops the remainder leaves the last byte.
  const size_t kib = 1024;
  for (int threads : {1, 2, 3, 8})
    for (size_t bytes : {size_t{0}, size_t{5}, 256 * kib - 1, 256 * kib, 300 * kib + 7,
                         512 * kib + 1, size_t{1} << 20, 12 * kib * 1024 / 4 + 3})
      for (size_t offset : {size_t{0}, size_t{3}}) {
        std::vector<unsigned char> buf(bytes + offset + 16, 0xAB);
        CpuStream(threads).fill_zero(buf.data() + offset, bytes);
        size_t zeros = 0, kept = 0;
        for (size_t i = 0; i < buf.size(); ++i) {
          const bool inside = i >= offset && i < offset + bytes;
          zeros += inside && buf[i] == 0;
          kept += !inside && buf[i] == 0xAB;
        }
        INFO("threads " << threads << ", bytes " << bytes << ", offset " << offset);
        CHECK(zeros == bytes);
        CHECK(kept == buf.size() - bytes);
      }
}
