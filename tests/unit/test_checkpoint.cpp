// Checkpoints: round trip, and a specific error for every kind of bad file.
#include <catch2/catch.hpp>

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
  auto other = Trainer::create(small_mlp(32, 4), c, synthetic_classification(64, 1),
                               synthetic_classification(16, 2));
  REQUIRE(other.ok());
  REQUIRE((*other)->save_checkpoint(dir / "other.ckpt").ok());
  CHECK_THAT(load_error(dir / "other.ckpt"), Catch::Contains("recipe_hash"));

  TrainerConfig w = small_config(Task::kClassification);
  auto wide = Trainer::create(small_mlp(48, 4), w, synthetic_classification(64, 1),
                              synthetic_classification(16, 2));
  REQUIRE(wide.ok());
  REQUIRE((*wide)->save_checkpoint(dir / "wide.ckpt").ok());
  CHECK_THAT(load_error(dir / "wide.ckpt"), Catch::Contains("fc1.weight") &&
                                                Catch::Contains("(48, 8)"));

  // A refused checkpoint changes nothing: every tensor is checked before any is copied.
  // Here fc1 matches and only fc2 (5 outputs instead of 4) does not.
  auto five = Trainer::create(small_mlp(32, 5), small_config(Task::kClassification, 3),
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
