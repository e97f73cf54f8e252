// CIFAR-10: the shared subset loads as its raw records say; normalisation is per channel;
// every kind of bad record file gets its own one-line error naming it; checksums; the
// command line. Archives and the download: test_cifar10_archive.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>

#include "datasets/catalog.h"
#include "datasets/cifar10.h"
#include "datasets/data_files.h"
#include "models/recipe.h"
#include "models/recipe_data.h"
#include "tests/support/cifar_fixture.h"
#include "tests/support/mnist_fixture.h"
#include "tests/support/run_binary.h"
#include "tests/support/scoped_env.h"

using namespace noeira;
using noeira::test::TempDir;
namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;
using Catch::Matchers::Contains;

using noeira::test::ScopedEnv;
using namespace noeira::test::cifar;

// ---- the shared subset ----

TEST_CASE("cifar10-subset loads 4,000 train / 1,000 test images as their raw records say",
          "[cifar10]") {
  TempDir cache;
  auto split = load_cifar10(Cifar10Variant::kSubset, real_data(cache));
  REQUIRE(split.ok());
  const ImageDataset& train = split->train;
  const ImageDataset& test = split->test;
  CHECK(train.name == "cifar10-subset");
  CHECK(train.count == 4000);
  CHECK(test.count == 1000);
  CHECK(train.sample_shape == std::vector<int64_t>{3, 32, 32});
  CHECK(test.sample_shape == std::vector<int64_t>{3, 32, 32});
  CHECK(train.num_classes == 10);
  CHECK(train.pixels.size() == 4000u * 3072);
  CHECK(test.labels.size() == 1000u);

  // Labels as shared/data/PROVENANCE.txt lists them (frog truck truck deer automobile ...).
  CHECK(std::vector<int32_t>(train.labels.begin(), train.labels.begin() + 10) ==
        std::vector<int32_t>{6, 9, 9, 4, 1, 1, 2, 7, 8, 3});
  CHECK(std::vector<int32_t>(test.labels.begin(), test.labels.begin() + 10) ==
        std::vector<int32_t>{3, 8, 8, 0, 6, 6, 1, 6, 3, 1});
  // Against the raw bytes: the first and the last record of each file, label and pixels.
  for (const auto* pair : {&train, &test}) {
    const ImageDataset& ds = *pair;
    const Bytes& raw = &ds == &train ? raw_train() : raw_test();
    for (int64_t i : {int64_t{0}, ds.count - 1}) {
      INFO("record " << i);
      CHECK(ds.labels[static_cast<size_t>(i)] == raw[static_cast<size_t>(i * kRecord)]);
      CHECK(std::equal(raw.begin() + i * kRecord + 1, raw.begin() + (i + 1) * kRecord,
                       ds.pixels.begin() + i * 3072));
    }
  }
  // Every class present in plausible numbers (CIFAR-10 is balanced: about 400 and 100).
  for (const auto* ds : {&train, &test}) {
    std::array<int64_t, 10> histogram{};
    for (int32_t label : ds->labels) {
      REQUIRE(label >= 0);
      REQUIRE(label < 10);
      ++histogram[static_cast<size_t>(label)];
    }
    const int64_t expected = ds->count / 10;
    for (int64_t n : histogram) {
      INFO(ds->count << " samples, a class has " << n);
      CHECK(n > expected * 7 / 10);
      CHECK(n < expected * 13 / 10);
    }
  }
  // Channel means near CIFAR-10's published (0.4914, 0.4822, 0.4465) of 255.
  for (int c = 0; c < 3; ++c) {
    double sum = 0;
    for (int64_t i = 0; i < train.count; ++i)
      for (int p = 0; p < 1024; ++p) sum += train.pixels[static_cast<size_t>(i * 3072 + c * 1024 + p)];
    CHECK(sum / (4000.0 * 1024 * 255) == Approx(kMean[static_cast<size_t>(c)]).margin(0.02));
  }
  CHECK_FALSE(has_leftovers(cache.path()));
}

TEST_CASE("cifar10-subset is never downloaded; a missing copy is named", "[cifar10]") {
  TempDir dir;
  ScopedEnv no_data("NOEIRA_DATA", nullptr);
  DataSource source;
  source.data_dir = dir / "data";
  source.cache_dir = dir / "cache";
  auto split = load_cifar10(Cifar10Variant::kSubset, source);
  REQUIRE_FALSE(split.ok());
  const std::string& msg = split.error().message;
  check_one_line(msg);
  CHECK_THAT(msg, Contains("cifar10/data_batch_1_first4000.bin") &&
                      Contains((dir / "data").string()) && Contains("never downloaded") &&
                      Contains("--data-dir"));
  CHECK_FALSE(fs::exists(dir / "cache"));
}

TEST_CASE("cifar10-subset: a truncated or altered copy is named", "[cifar10]") {
  TempDir dir;
  ScopedEnv no_data("NOEIRA_DATA", nullptr);
  DataSource source;
  source.data_dir = dir / "data";
  source.cache_dir = dir / "cache";
  const fs::path train = dir / "data" / "cifar10" / "data_batch_1_first4000.bin";
  write_bytes(dir / "data" / "cifar10" / "test_batch_first1000.bin", raw_test());
  SECTION("truncated") {
    write_bytes(train, Bytes(raw_train().begin(), raw_train().end() - 5000));
    auto split = load_cifar10(Cifar10Variant::kSubset, source);
    REQUIRE_FALSE(split.ok());
    check_one_line(split.error().message);
    CHECK_THAT(split.error().message, Contains(train.string()) && Contains("truncated"));
  }
  SECTION("one pixel changed") {
    Bytes bytes = raw_train();
    bytes[100] ^= 1;
    write_bytes(train, bytes);
    auto split = load_cifar10(Cifar10Variant::kSubset, source);
    REQUIRE_FALSE(split.ok());
    check_one_line(split.error().message);
    CHECK_THAT(split.error().message, Contains(train.string()) && Contains("sha256") &&
                                          Contains("shared/data/cifar10"));
  }
}

TEST_CASE("cifar10: no archive and no download names both ways to provide it", "[cifar10]") {
  TempDir dir;
  ScopedEnv no_data("NOEIRA_DATA", nullptr);
  DataSource source;
  source.allow_download = false;
  source.data_dir = dir / "data";
  source.cache_dir = dir / "cache";
  auto split = load_cifar10(Cifar10Variant::kFull, source);
  REQUIRE_FALSE(split.ok());
  check_one_line(split.error().message);
  CHECK_THAT(split.error().message,
             Contains("cifar10/cifar-10-binary.tar.gz") && Contains((dir / "data").string()) &&
                 Contains("--data-dir") && Contains("extracted cifar10/cifar-10-batches-bin/"));
}

TEST_CASE("parse_cifar10_variant and the catalogue know both names", "[cifar10]") {
  CHECK(parse_cifar10_variant("cifar10").value() == Cifar10Variant::kFull);
  CHECK(parse_cifar10_variant("cifar10-subset").value() == Cifar10Variant::kSubset);
  CHECK_FALSE(parse_cifar10_variant("cifar100").ok());
  const auto names = image_dataset_names();
  CHECK(names == std::vector<std::string>{"mnist", "fashion-mnist", "cifar10", "cifar10-subset"});
  CHECK(find_image_dataset("cifar10").value().sample_shape == std::vector<int64_t>{3, 32, 32});
  auto unknown = find_image_dataset("cifar100");
  REQUIRE_FALSE(unknown.ok());
  CHECK_THAT(unknown.error().message, Contains("cifar100") && Contains("cifar10-subset"));
}

TEST_CASE("cifar10_files names the official archive, its URL and its published md5",
          "[cifar10]") {
  const Cifar10Files f = cifar10_files();
  CHECK(f.archive.relative_path == "cifar10/cifar-10-binary.tar.gz");
  CHECK(f.archive.urls ==
        std::vector<std::string>{"https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"});
  CHECK(f.archive.md5 == "c32a1d4ab5d03f1284b67883e8d87530");
  CHECK(f.archive.sha256.size() == 64u);
  CHECK(f.archive_dir == "cifar-10-batches-bin");
  CHECK(f.train_members.size() == 5u);
  CHECK(f.test_member == "test_batch.bin");
  CHECK(f.records_per_file == 10000);
}

// ---- bad record files ----

TEST_CASE("read_cifar10_files: a missing file is named", "[cifar10]") {
  TempDir dir;
  const std::string msg = read_error({dir / "data_batch_1.bin"}, 10000);
  CHECK_THAT(msg, Contains((dir / "data_batch_1.bin").string()) && Contains("does not exist") &&
                      Contains("--data-dir"));
}

TEST_CASE("read_cifar10_files: an empty file is named", "[cifar10]") {
  TempDir dir;
  write_bytes(dir / "data_batch_1.bin", {});
  const std::string msg = read_error({dir / "data_batch_1.bin"}, 0);
  CHECK_THAT(msg, Contains((dir / "data_batch_1.bin").string()) && Contains("is empty"));
}

TEST_CASE("read_cifar10_files: a size that is not whole records is truncated", "[cifar10]") {
  TempDir dir;
  Bytes bytes = records(raw_train(), 0, 3);
  bytes.resize(bytes.size() - 100);
  write_bytes(dir / "data_batch_1.bin", bytes);
  const std::string msg = read_error({dir / "data_batch_1.bin"}, 0);
  CHECK_THAT(msg, Contains((dir / "data_batch_1.bin").string()) && Contains("9119 bytes") &&
                      Contains("3073") && Contains("truncated") && Contains("delete it"));
}

TEST_CASE("read_cifar10_files: a full batch with the wrong record count is named",
          "[cifar10]") {
  const fs::path subset = shared_data() / "cifar10" / "data_batch_1_first4000.bin";
  const std::string msg = read_error({subset}, kCifar10RecordsPerBatch);
  CHECK_THAT(msg, Contains(subset.string()) && Contains("holds 4000 records") &&
                      Contains("must hold 10000") && Contains("30730000 bytes"));
}

TEST_CASE("read_cifar10_files: a label above 9 is named with its record", "[cifar10]") {
  TempDir dir;
  Bytes bytes = records(raw_train(), 0, 4);
  bytes[static_cast<size_t>(2 * kRecord)] = 10;
  write_bytes(dir / "b.bin", bytes);
  write_bytes(dir / "a.bin", records(raw_train(), 4, 2));
  const std::string msg = read_error({dir / "a.bin", dir / "b.bin"}, 0);
  CHECK_THAT(msg, Contains((dir / "b.bin").string()) && Contains("label 10") &&
                      Contains("record 2") && Contains("0-9"));
}

TEST_CASE("read_cifar10_files concatenates files in order", "[cifar10]") {
  TempDir dir;
  write_bytes(dir / "a.bin", records(raw_train(), 0, 2));
  write_bytes(dir / "b.bin", records(raw_train(), 2, 3));
  auto ds = read_cifar10_files({dir / "a.bin", dir / "b.bin"}, 0, "x");
  REQUIRE(ds.ok());
  CHECK(ds->count == 5);
  CHECK(ds->labels == std::vector<int32_t>{6, 9, 9, 4, 1});
  CHECK(std::equal(raw_train().begin() + 4 * kRecord + 1, raw_train().begin() + 5 * kRecord,
                   ds->pixels.begin() + 4 * 3072));
}

// ---- normalisation from the recipe ----

TEST_CASE("recipe normalisation is per channel on CIFAR-10", "[cifar10]") {
  TempDir dir, cache;
  auto recipe = load_recipe(write_recipe(dir, "cifar-mlp", kCifarDatasetJson, "[3072]"));
  REQUIRE(recipe.ok());
  CHECK(recipe->norm_mean == std::vector<float>(kMean.begin(), kMean.end()));
  CHECK(recipe->norm_std == std::vector<float>(kStd.begin(), kStd.end()));
  auto data = load_recipe_data(*recipe, "", real_data(cache));
  REQUIRE(data.ok());
  CHECK(data->train.name == "cifar10-subset");
  CHECK(data->train.count == 4000);
  CHECK(data->test.count == 1000);
  CHECK(data->train.sample_shape == Shape{3072});
  CHECK(data->train.x.size() == 4000u * 3072);
  CHECK(data->train.labels[0] == 6);
  // Sample 0 and sample 3999, every channel: the exact fp32 operations.
  for (int64_t i : {int64_t{0}, int64_t{3999}})
    for (size_t c = 0; c < 3; ++c)
      for (int64_t p : {int64_t{0}, int64_t{517}, int64_t{1023}}) {
        const uint8_t u8 = raw_train()[static_cast<size_t>(i * kRecord + 1 + static_cast<int64_t>(c) * 1024 + p)];
        const float want = (static_cast<float>(u8) / 255.0f - kMean[c]) / kStd[c];
        CHECK(data->train.x[static_cast<size_t>(i * 3072 + static_cast<int64_t>(c) * 1024 + p)] == want);
      }
  // Each channel comes out near zero mean, unit spread.
  for (size_t c = 0; c < 3; ++c) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < 4000; ++i)
      for (int64_t p = 0; p < 1024; ++p) {
        const double v = data->train.x[static_cast<size_t>(i * 3072 + static_cast<int64_t>(c) * 1024 + p)];
        sum += v;
        sq += v * v;
      }
    const double n = 4000.0 * 1024, mean = sum / n;
    INFO("channel " << c);
    CHECK(std::abs(mean) < 0.1);
    CHECK(std::sqrt(sq / n - mean * mean) == Approx(1.0).margin(0.1));
  }
}

TEST_CASE("recipe normalize: one number applies to every channel", "[cifar10]") {
  TempDir dir, cache;
  auto recipe = load_recipe(write_recipe(
      dir, "cifar-scalar",
      R"({"name": "cifar10-subset", "normalize": {"mean": 0.5, "std": 0.25}})", "[3072]"));
  REQUIRE(recipe.ok());
  CHECK(recipe->norm_mean == std::vector<float>{0.5f});
  auto data = load_recipe_data(*recipe, "", real_data(cache));
  REQUIRE(data.ok());
  for (size_t c = 0; c < 3; ++c) {
    const uint8_t u8 = raw_train()[1 + c * 1024];
    CHECK(data->train.x[c * 1024] == (static_cast<float>(u8) / 255.0f - 0.5f) / 0.25f);
  }
  // The committed MNIST recipe's scalars still parse as one value each.
  auto mlp = load_recipe_for_model("mlp");
  REQUIRE(mlp.ok());
  CHECK(mlp->norm_mean == std::vector<float>{0.1307f});
  CHECK(mlp->norm_std == std::vector<float>{0.3081f});
}

TEST_CASE("recipe normalize: bad per-channel values are one-line errors", "[cifar10]") {
  TempDir dir, cache;
  SECTION("a non-number in the list") {
    auto r = load_recipe(write_recipe(
        dir, "bad", R"({"name": "cifar10", "normalize": {"mean": [0.5, "x", 0.5], "std": 1}})",
        "[3072]"));
    REQUIRE_FALSE(r.ok());
    check_one_line(r.error().message);
    CHECK_THAT(r.error().message, Contains("dataset.normalize.mean") && Contains("one per channel"));
  }
  SECTION("a zero std") {
    auto r = load_recipe(write_recipe(
        dir, "bad", R"({"name": "cifar10", "normalize": {"mean": 0.5, "std": [0.2, 0, 0.2]}})",
        "[3072]"));
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Contains("std must be positive"));
  }
  SECTION("mean and std lists of different lengths") {
    auto r = load_recipe(write_recipe(
        dir, "bad",
        R"({"name": "cifar10", "normalize": {"mean": [0.5, 0.5, 0.5], "std": [0.2, 0.2]}})",
        "[3072]"));
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Contains("3 means but 2 stds"));
  }
  SECTION("a list that does not match the data set's channels") {
    auto r = load_recipe(write_recipe(
        dir, "two", R"({"name": "cifar10-subset", "normalize": {"mean": [0.5, 0.5], "std": 1}})",
        "[3072]"));
    REQUIRE(r.ok());
    auto data = load_recipe_data(*r, "", real_data(cache));
    REQUIRE_FALSE(data.ok());
    check_one_line(data.error().message);
    CHECK_THAT(data.error().message, Contains("normalize.mean has 2 values") &&
                                         Contains("3 channels") && Contains("(3, 32, 32)"));
    // Three values on a one-channel data set.
    auto rgb = load_recipe(write_recipe(dir, "rgb", kCifarDatasetJson, "[784]"));
    REQUIRE(rgb.ok());
    auto mnist = load_recipe_data(*rgb, "mnist", real_data(cache));
    REQUIRE_FALSE(mnist.ok());
    CHECK_THAT(mnist.error().message, Contains("3 values") && Contains("1 channel "));
  }
}

TEST_CASE("the 784-input MLP refuses CIFAR-10 before loading or downloading anything",
          "[cifar10]") {
  TempDir dir;
  ScopedEnv no_data("NOEIRA_DATA", nullptr);
  auto mlp = load_recipe_for_model("mlp");
  REQUIRE(mlp.ok());
  DataSource nowhere;  // downloads allowed: a misfit must not start one
  nowhere.cache_dir = dir / "cache";
  for (const char* name : {"cifar10", "cifar10-subset"}) {
    auto data = load_recipe_data(*mlp, name, nowhere);
    REQUIRE_FALSE(data.ok());
    check_one_line(data.error().message);
    CHECK_THAT(data.error().message, Contains(name) && Contains("(3, 32, 32)") &&
                                         Contains("3072") && Contains("(784)") &&
                                         Contains("input_shape"));
  }
  CHECK_FALSE(fs::exists(dir / "cache"));
}

// ---- checksums ----

TEST_CASE("md5_file, and a DataFile checked by md5", "[cifar10]") {
  TempDir dir;
  write_bytes(dir / "data" / "set" / "abc", {'a', 'b', 'c'});
  CHECK(md5_file(dir / "data" / "set" / "abc").value() == "900150983cd24fb0d6963f7d28e17f72");
  DataSource source;
  source.allow_download = false;
  source.data_dir = dir / "data";
  source.cache_dir = dir / "cache";
  const std::string sha = sha256_file(dir / "data" / "set" / "abc").value();
  CHECK(locate(DataFile{"set/abc", sha, {}, {}, "900150983cd24fb0d6963f7d28e17f72"}, source).ok());
  CHECK(locate(DataFile{"set/abc", "", {}, {}, "900150983cd24fb0d6963f7d28e17f72"}, source).ok());
  auto bad = locate(DataFile{"set/abc", sha, {}, {}, std::string(32, 'f')}, source);
  REQUIRE_FALSE(bad.ok());
  check_one_line(bad.error().message);
  CHECK_THAT(bad.error().message, Contains((dir / "data" / "set" / "abc").string()) &&
                                      Contains("md5 900150983cd24fb0d6963f7d28e17f72") &&
                                      Contains(std::string(32, 'f')) &&
                                      Contains("delete it to re-download"));
}

// ---- the command line ----

TEST_CASE("train and run accept --dataset cifar10 and cifar10-subset", "[cifar10][cli]") {
  using noeira::test::CommandResult;
  using noeira::test::run_bench;
  // The MLP recipe takes 784 inputs: accepted by the parser, refused with the shapes (exit 1).
  for (const char* args : {"train --dataset cifar10-subset --epochs 1",
                           "train --dataset cifar10 --epochs 1",
                           "run --dataset cifar10-subset --target cpu --twin none --steps 5"}) {
    TempDir dir;
    std::string cmd = args;
    cmd += " --threads 1 --data-dir '" + dir.path().string() + "'";
    if (cmd.rfind("run", 0) == 0) cmd += " --out '" + (dir / "r.json").string() + "'";
    const CommandResult r = run_bench(cmd);
    INFO("noeira-bench " << args << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Contains("(3, 32, 32)") && Contains("(784)"));
  }
  const CommandResult bad = run_bench("train --dataset cifar100");
  INFO(bad.output);
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Contains("--dataset"));
}

TEST_CASE("train an MLP on cifar10-subset end to end (a 3072-input test recipe)",
          "[cifar10][cli]") {
  TempDir recipes;
  write_recipe(recipes, "mlp-cifar-test", kCifarDatasetJson, "[3072]", 32);
  ScopedEnv env("NOEIRA_RECIPES", recipes.path().c_str());
  const noeira::test::CommandResult r =
      noeira::test::run_bench("train --model mlp-cifar-test --epochs 1 --threads 1 --seed 1");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("on cifar10-subset") && Contains("epoch 1/1") &&
                           Contains("test top1"));
}
