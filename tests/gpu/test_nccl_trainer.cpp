// The NCCL engine with one rank (parallel/nccl_communicator.h over a SingleRankCommunicator):
// gpt-tiny's trainer with a DataParallelSync on the GPU, every ZeRO stage. The bucket
// exchanges run on NCCL's stream with event handshakes; with one rank every stage must give
// the same checkpoint bytes, and training must follow the single-process GPU trainer (its
// clipping sums its squares in another tree, so not bit for bit).
// Two ranks on one GPU need NCCL 2.30+ (NCCL_MULTI_RANK_GPU_ENABLE) and mpirun; this test
// says SKIP with the reason where either is missing.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_NCCL)
#include <nccl.h>

#include "parallel/data_parallel_sync.h"
#include "parallel/nccl_communicator.h"
#include "parallel/single_rank_communicator.h"
#include "nn/checkpoint.h"
#include "tests/gpu/gpu_rig.h"
#include "tests/support/gpt_fixture.h"
#include "tests/support/scoped_env.h"
#include "tests/support/temp_dir.h"
#endif

using namespace noeira;
using namespace noeira::test;

TEST_CASE("nccl: one rank, gpt-tiny on the GPU: ZeRO 0-3 give identical checkpoints and "
          "follow the single-process trainer", "[gpu][nccl][distributed]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if !defined(NOEIRA_WITH_NCCL)
  WARN("SKIP: this build has no NCCL (nccl.h and libnccl next to the CUDA toolkit)");
#else
  ScopedEnv no_tf32("NOEIRA_TF32", "0");
  TempDir dir;
  TrainerOptions o;
  o.device = Device::kGpu;
  o.seed = 4;
  std::vector<std::vector<char>> ckpts;
  std::vector<float> losses0;
  for (int stage = 0; stage <= 3; ++stage) {
    INFO("ZeRO-" << stage);
    SingleRankCommunicator host;
    Result<std::unique_ptr<NcclCommunicator>> nccl = NcclCommunicator::create(host);
    REQUIRE(nccl.ok());
    Result<std::unique_ptr<DataParallelSync>> sync = DataParallelSync::create(**nccl, stage);
    REQUIRE(sync.ok());
    const DataParallelSync& d = **sync;
    Result<std::unique_ptr<AutoregressiveTrainer>> t =
        make_lm_trainer(recipe_named("gpt-tiny"), shakespeare(), o, std::move(sync).value());
    if (!t) FAIL(t.error().message);
    const std::vector<float> losses = lm_steps(**t, 10);
    CHECK_FALSE(has_nan(losses));
    CHECK(d.comm_bytes_per_step() ==
          (stage == 3 ? 3 : 2) * d.padded_params() * static_cast<int64_t>(sizeof(float)));
    REQUIRE((*t)->save_checkpoint(dir / "z.ckpt").ok());
    ckpts.push_back(file_bytes(dir / "z.ckpt"));
    if (stage == 0) losses0 = losses;
    else CHECK(same_bytes(losses, losses0));
  }
  for (size_t i = 1; i < ckpts.size(); ++i) CHECK(ckpts[i] == ckpts[0]);
  auto single = lm_trainer({.device = Device::kGpu, .seed = 4});
  const std::vector<float> ref = lm_steps(*single, 10);
  REQUIRE(ref.size() == losses0.size());
  for (size_t i = 0; i < ref.size(); ++i) CHECK(std::abs(ref[i] - losses0[i]) <= 1e-5f * std::abs(ref[i]));
#endif
}

TEST_CASE("nccl: two ranks on one GPU", "[gpu][nccl][distributed]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_NCCL)
  int version = 0;
  ncclGetVersion(&version);
  if (version < 23000) {
    WARN("SKIP: NCCL " << version / 10000 << "." << version / 100 % 100 << "." << version % 100
                       << " runs one rank per GPU; two ranks on one GPU need NCCL 2.30+ "
                          "(NCCL_MULTI_RANK_GPU_ENABLE)");
    return;
  }
  WARN("SKIP: two ranks on one GPU are started by mpirun (a build with MPI); not covered "
       "by this test yet");
#else
  WARN("SKIP: this build has no NCCL");
#endif
}
