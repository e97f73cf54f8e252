#include "parallel/process_group.h"

#include <cstdio>
#include <cstdlib>

#if defined(NOEIRA_WITH_MPI)
#include "parallel/mpi_communicator.h"
#endif
#if defined(NOEIRA_WITH_NCCL)
#include "parallel/nccl_communicator.h"
#endif

namespace noeira {

int ProcessGroup::launched_ranks() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(var); v && *v) return std::max(1, std::atoi(v));
  return 1;
}

Result<std::unique_ptr<ProcessGroup>> ProcessGroup::join(Device device, bool requested) {
  if (!requested && launched_ranks() <= 1) return std::unique_ptr<ProcessGroup>();
#if defined(NOEIRA_WITH_MPI)
  Result<std::unique_ptr<MpiCommunicator>> mpi = MpiCommunicator::create();
  if (!mpi) return mpi.error();
  std::unique_ptr<ProcessGroup> g(new ProcessGroup());
  g->host_ = std::move(mpi).value();
  if (device == Device::kGpu) {
#if defined(NOEIRA_WITH_NCCL)
    Result<std::unique_ptr<NcclCommunicator>> nccl = NcclCommunicator::create(*g->host_);
    if (!nccl) return nccl.error();
    g->device_ = std::move(nccl).value();
#else
    return make_error("--target gpu with data parallelism needs NCCL (nccl.h and libnccl next "
                      "to the CUDA toolkit) in the build");
#endif
  }
  return g;
#else
  (void)device;
  return make_error("data parallelism (--zero, or mpirun with several ranks): this build has no "
                    "MPI (install libopenmpi-dev with scripts/setup and rebuild)");
#endif
}

ProcessGroup::~ProcessGroup() = default;

int ProcessGroup::rank() const { return host_->rank(); }
int ProcessGroup::size() const { return host_->size(); }
std::string ProcessGroup::engine() const { return trainer_engine().engine(); }

Result<std::unique_ptr<GradientSync>> ProcessGroup::make_sync(int zero_stage) {
  Result<std::unique_ptr<DataParallelSync>> s = DataParallelSync::create(trainer_engine(), zero_stage);
  if (!s) return s.error();
  sync_ = s->get();
  return std::unique_ptr<GradientSync>(std::move(s).value());
}

void ProcessGroup::all_sum(double* v, int64_t n) { host_->all_sum(v, n); }

Status ProcessGroup::quiet_unless_first() {
  if (rank() != 0 && !std::freopen("/dev/null", "w", stdout))
    return make_error("cannot silence the output of rank " + std::to_string(rank()));
  return {};
}

void ProcessGroup::abort(int code) {
  std::fflush(nullptr);
  host_->abort(code);
  std::abort();  // not reached (Communicator::abort is [[noreturn]]; GCC does not see it
                 // through the virtual call and warned that this function returns)
}

}  // namespace noeira
