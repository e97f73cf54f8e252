// Checkpoints: round trip, and a specific error for every kind of bad file.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <fstream>

#include "nn/checkpoint.h"
#include "tests/support/mnist_fixture.h"
#include "tests/support/synthetic.h"

using namespace noeira;
using namespace noeira::test;

namespace {

void write_bytes(const std::filesystem::path& p, const std::vector<char>& b) {
  std::ofstream(p, std::ios::binary).write(b.data(), static_cast<std::streamsize>(b.size()));
}

std::string load_error(const std::filesystem::path& p) {
  auto t = small_trainer(Task::kClassification);
  Status s = t->load_checkpoint(p);
  REQUIRE_FALSE(s.ok());
  return s.error().message;
}

bool has_temp_files(const std::filesystem::path& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("A checkpoint round-trips parameters, optimizer state and step", "[checkpoint]") {
  TempDir dir;
  auto a = small_trainer(Task::kClassification, 3);
  a->train(2);
  REQUIRE(a->save_checkpoint(dir / "a.ckpt").ok());
  auto b = small_trainer(Task::kClassification, 4);
  REQUIRE(b->load_checkpoint(dir / "a.ckpt").ok());
  CHECK(b->epochs_done() == 2);
  CHECK(b->steps_done() == a->steps_done());
  CHECK(b->param_values(0) == a->param_values(0));
  REQUIRE(b->save_checkpoint(dir / "b.ckpt").ok());
  CHECK(file_bytes(dir / "a.ckpt") == file_bytes(dir / "b.ckpt"));
  CHECK_FALSE(has_temp_files(dir.path()));

  Result<Checkpoint> ck = read_checkpoint(dir / "a.ckpt");
  REQUIRE(ck.ok());
  CHECK(ck->meta.at("step") == 64);
  CHECK(ck->find("fc1.weight") != nullptr);
  CHECK(ck->find("adam.v.fc2.bias") != nullptr);
}

TEST_CASE("Corrupt, truncated and foreign checkpoints each give their own error",
          "[checkpoint]") {
  TempDir dir;
  auto t = small_trainer(Task::kClassification);
  REQUIRE(t->save_checkpoint(dir / "good.ckpt").ok());
  const std::vector<char> good = file_bytes(dir / "good.ckpt");

  std::vector<char> corrupt = good;
  corrupt[corrupt.size() / 2] ^= 0x5a;
  write_bytes(dir / "corrupt.ckpt", corrupt);
  CHECK_THAT(load_error(dir / "corrupt.ckpt"), Catch::Contains("checksum mismatch") &&
                                                   Catch::Contains("corrupt.ckpt"));

  write_bytes(dir / "short.ckpt", std::vector<char>(good.begin(), good.begin() + 20));
  CHECK_THAT(load_error(dir / "short.ckpt"), Catch::Contains("truncated"));

  write_bytes(dir / "half.ckpt", std::vector<char>(good.begin(), good.begin() + good.size() / 2));
  CHECK_THAT(load_error(dir / "half.ckpt"),
             Catch::Contains("truncated") || Catch::Contains("checksum mismatch"));

  write_bytes(dir / "foreign.ckpt", std::vector<char>(100, 'x'));
  CHECK_THAT(load_error(dir / "foreign.ckpt"), Catch::Contains("not a noeira checkpoint"));

  std::vector<char> future = good;
  future[8] = 9;
  write_bytes(dir / "future.ckpt", future);
  CHECK_THAT(load_error(dir / "future.ckpt"), Catch::Contains("format version 9"));

  CHECK_THAT(load_error(dir / "missing.ckpt"), Catch::Contains("cannot open"));
}

TEST_CASE("A checkpoint of another model or recipe is refused with the reason",
          "[checkpoint]") {
  TempDir dir;
  TrainerConfig c = small_config(Task::kClassification);
  c.recipe = {{"name", "small"}, {"lr", 0.5}};
  auto other = DatasetTrainer::create(small_mlp(32, 4), c, synthetic_classification(64, 1),
                               synthetic_classification(16, 2));
  REQUIRE(other.ok());
  REQUIRE((*other)->save_checkpoint(dir / "other.ckpt").ok());
  CHECK_THAT(load_error(dir / "other.ckpt"), Catch::Contains("recipe_hash"));

  TrainerConfig w = small_config(Task::kClassification);
  auto wide = DatasetTrainer::create(small_mlp(48, 4), w, synthetic_classification(64, 1),
                              synthetic_classification(16, 2));
  REQUIRE(wide.ok());
  REQUIRE((*wide)->save_checkpoint(dir / "wide.ckpt").ok());
  CHECK_THAT(load_error(dir / "wide.ckpt"), Catch::Contains("fc1.weight") &&
                                                Catch::Contains("(48, 8)"));

  // A refused checkpoint changes nothing: every tensor is checked before any is copied.
  // Here fc1 matches and only fc2 (5 outputs instead of 4) does not.
  auto five = DatasetTrainer::create(small_mlp(32, 5), small_config(Task::kClassification, 3),
                              synthetic_classification(64, 1), synthetic_classification(16, 2));
  REQUIRE(five.ok());
  REQUIRE((*five)->save_checkpoint(dir / "five.ckpt").ok());
  auto t = small_trainer(Task::kClassification, 9);
  const std::vector<float> before = t->param_values(0);
  const Status s = t->load_checkpoint(dir / "five.ckpt");
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message, Catch::Contains("fc2.weight"));
  CHECK(t->param_values(0) == before);
  CHECK(t->steps_done() == 0);
}

TEST_CASE("A failed save leaves no partial file behind", "[checkpoint]") {
  TempDir dir;
  auto t = small_trainer(Task::kClassification);
  Status s = t->save_checkpoint(dir / "no-such-dir" / "x.ckpt");
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message, Catch::Contains("no-such-dir"));
  CHECK(std::filesystem::is_empty(dir.path()));
}

TEST_CASE("A run stopped mid-epoch and resumed from its checkpoint ends with the same bits",
          "[checkpoint]") {
  TempDir dir;
  auto whole = small_trainer(Task::kClassification, 6);
  whole->train(2);  // 2 epochs of 32 steps

  // Stopped after step 10 of the first epoch (the stop is asked after every step).
  auto first = small_trainer(Task::kClassification, 6);
  int64_t steps = 0;
  first->train(2, {}, {}, [&] { return ++steps == 10; });
  CHECK(first->steps_done() == 10);
  CHECK(first->epochs_done() == 0);
  CHECK(first->in_epoch());
  REQUIRE(first->save_checkpoint(dir / "mid.ckpt").ok());
  Result<Checkpoint> ck = read_checkpoint(dir / "mid.ckpt");
  REQUIRE(ck.ok());
  CHECK(ck->meta.at("batch_in_epoch") == 10);

  auto resumed = small_trainer(Task::kClassification, 7);
  REQUIRE(resumed->load_checkpoint(dir / "mid.ckpt").ok());
  const auto epochs = resumed->train(2);
  REQUIRE(epochs.size() == 2);
  CHECK(epochs[0].steps == 22);  // the rest of the first epoch
  CHECK(resumed->steps_done() == whole->steps_done());
  for (size_t i = 0; i < whole->params().all().size(); ++i)
    CHECK(resumed->param_values(i) == whole->param_values(i));
  REQUIRE(whole->save_checkpoint(dir / "whole.ckpt").ok());
  REQUIRE(resumed->save_checkpoint(dir / "resumed.ckpt").ok());
  CHECK(file_bytes(dir / "whole.ckpt") == file_bytes(dir / "resumed.ckpt"));
}

TEST_CASE("A checkpoint whose batch_in_epoch is outside an epoch is refused", "[checkpoint]") {
  TempDir dir;
  auto t = small_trainer(Task::kClassification);
  REQUIRE(t->save_checkpoint(dir / "a.ckpt").ok());
  Result<Checkpoint> ck = read_checkpoint(dir / "a.ckpt");
  REQUIRE(ck.ok());
  ck->meta["batch_in_epoch"] = 32;  // an epoch has batches 0..31
  REQUIRE(write_checkpoint(dir / "b.ckpt", *ck).ok());
  CHECK_THAT(load_error(dir / "b.ckpt"), Catch::Contains("batch_in_epoch 32"));
}

namespace {

// A checkpoint file of `header` (its "tensors" as given) and `data`, with a right CRC, so
// that the reader gets past the checksum to what the header says.
void write_raw_checkpoint(const std::filesystem::path& p, const nlohmann::json& header,
                          const std::string& data = "") {
  const std::string h = header.dump();
  std::string out(kCheckpointMagic, 8);
  const uint32_t version = kCheckpointVersion, reserved = 0;
  const uint64_t hlen = h.size();
  out.append(reinterpret_cast<const char*>(&version), 4);
  out.append(reinterpret_cast<const char*>(&reserved), 4);
  out.append(reinterpret_cast<const char*>(&hlen), 8);
  out += h + data;
  const auto crc = static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(out.data()), static_cast<uInt>(out.size())));
  out.append(reinterpret_cast<const char*>(&crc), 4);
  std::ofstream(p, std::ios::binary) << out;
}

std::string read_error(const std::filesystem::path& p) {
  Result<Checkpoint> ck = read_checkpoint(p);
  REQUIRE_FALSE(ck.ok());
  return ck.error().message;
}

}  // namespace

// Found by fuzz/checkpoint.cpp: a shape whose element count overflows (undefined
// behaviour in Shape::numel), and header fields of another type, which a resume or
// `sample` read as theirs and threw on.
TEST_CASE("A checkpoint header with an impossible shape or a mistyped field is refused, "
          "naming it", "[checkpoint]") {
  TempDir dir;
  auto tensor = [](nlohmann::json shape, uint64_t nbytes) {
    return nlohmann::json::array({{{"name", "w"}, {"group", "param"}, {"dtype", "f32"},
                                   {"shape", shape}, {"offset", 0}, {"nbytes", nbytes}}});
  };
  write_raw_checkpoint(dir / "ok.ckpt", {{"tensors", tensor({2}, 8)}}, std::string(8, '\0'));
  REQUIRE(read_checkpoint(dir / "ok.ckpt").ok());

  write_raw_checkpoint(dir / "huge.ckpt", {{"tensors", tensor({int64_t{1} << 40, int64_t{1} << 40}, 0)}});
  CHECK_THAT(read_error(dir / "huge.ckpt"), Catch::Contains("huge.ckpt") &&
                                                Catch::Contains("impossible shape"));
  write_raw_checkpoint(dir / "negative.ckpt", {{"tensors", tensor({-2, -4}, 32)}},
                       std::string(32, '\0'));
  CHECK_THAT(read_error(dir / "negative.ckpt"), Catch::Contains("impossible shape"));
  // A float where an integer goes: json's get<int64_t>() would cast it, undefined beyond range.
  write_raw_checkpoint(dir / "float.ckpt", {{"tensors", tensor({1.5e300}, 8)}}, std::string(8, '\0'));
  CHECK_THAT(read_error(dir / "float.ckpt"), Catch::Contains("shape entry must be an integer"));

  const std::vector<std::pair<nlohmann::json, std::string>> fields = {
      {{{"ranks", "two"}}, "ranks is \"two\""},
      {{{"ranks", 0}}, "not a rank count"},
      {{{"epoch", -1}}, "epoch is -1, not a count"},
      {{{"seed", 1.5}}, "seed is 1.5"},
      {{{"model", 7}}, "model is number, not a string"},
      {{{"vocab", "abc"}}, "vocab is string, not a list"},
      {{{"optimizer", nlohmann::json::array()}}, "optimizer is array"}};
  for (const auto& [meta, why] : fields) {
    nlohmann::json header = meta;
    header["tensors"] = nlohmann::json::array();
    write_raw_checkpoint(dir / "field.ckpt", header);
    CHECK_THAT(read_error(dir / "field.ckpt"), Catch::Contains("header field") && Catch::Contains(why));
  }
  // A resume read "ranks" as an int: a checkpoint otherwise right for the run, with ranks
  // of another type, threw json's type_error past load_checkpoint.
  auto t = small_trainer(Task::kClassification);
  REQUIRE(t->save_checkpoint(dir / "good.ckpt").ok());
  Result<Checkpoint> good = read_checkpoint(dir / "good.ckpt");
  REQUIRE(good.ok());
  good->meta["ranks"] = "two";
  REQUIRE(write_checkpoint(dir / "ranks.ckpt", *good).ok());
  CHECK_THAT(load_error(dir / "ranks.ckpt"), Catch::Contains("ranks is \"two\""));

  nlohmann::json deep = nlohmann::json::array();
  for (int i = 0; i < 100; ++i) deep = nlohmann::json::array({deep});
  write_raw_checkpoint(dir / "deep.ckpt", {{"tensors", nlohmann::json::array()}, {"note", deep}});
  CHECK_THAT(read_error(dir / "deep.ckpt"), Catch::Contains("nested deeper"));
}
