#include "parallel/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/cuda/cuda_stream.h"
#include "kernels/cuda/rank_ordered_sum.h"

namespace noeira {

struct NcclCommunicator::Impl {
  ncclComm_t comm = nullptr;
  ncclUniqueId id{};
  cudaStream_t compute = nullptr;  // the backend's
  cudaStream_t stream = nullptr;   // the collectives'
  cudaEvent_t ready = nullptr;     // recorded on compute before each collective
  cudaEvent_t done = nullptr;      // recorded on stream after each collective
};

namespace {

int local_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "LOCAL_RANK"})
    if (const char* v = std::getenv(var); v && *v) return std::atoi(v);
  return 0;
}

// A collective that fails mid-step cannot be undone: name it and end the job.
[[noreturn]] void nccl_failed(Communicator& host, const char* what, const char* why) {
  std::fprintf(stderr, "noeira-bench: rank %d: %s failed: %s\n", host.rank(), what, why);
  std::fflush(nullptr);
  host.abort(1);
  std::abort();  // not reached: abort ends the job
}

void check(Communicator& host, ncclResult_t r, const char* what) {
  if (r != ncclSuccess) nccl_failed(host, what, ncclGetErrorString(r));
}

void check(Communicator& host, cudaError_t e, const char* what) {
  if (e != cudaSuccess) nccl_failed(host, what, cudaGetErrorString(e));
}

}  // namespace

Result<std::unique_ptr<NcclCommunicator>> NcclCommunicator::create(Communicator& host) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    return make_error("NCCL: no CUDA device on rank " + std::to_string(host.rank()));
  const int local = local_rank();
  int version = 0;
  ncclGetVersion(&version);
  if (local >= devices && version < 23000)
    return make_error("NCCL " + std::to_string(version) + ": " + std::to_string(local + 1) +
                      " ranks on this node but " + std::to_string(devices) +
                      " GPU(s); this NCCL needs one GPU per rank (several ranks per GPU need "
                      "NCCL 2.30+ and NCCL_MULTI_RANK_GPU_ENABLE)");
  if (cudaSetDevice(local % devices) != cudaSuccess)
    return make_error("NCCL: cannot select GPU " + std::to_string(local % devices));
  std::unique_ptr<NcclCommunicator> c(new NcclCommunicator());
  c->host_ = &host;
  c->impl_ = std::make_unique<Impl>();
  // Rank 0's id, sent to every rank over the host engine (a gather of which rank 0's wins).
  ncclUniqueId mine{};
  if (host.rank() == 0 && ncclGetUniqueId(&mine) != ncclSuccess)
    return make_error("ncclGetUniqueId failed on rank 0");
  std::vector<ncclUniqueId> all(static_cast<size_t>(host.size()));
  host.all_gather_bytes(&mine, all.data(), sizeof(ncclUniqueId));
  c->impl_->id = all[0];
  return c;
}

NcclCommunicator::~NcclCommunicator() {
  if (!impl_) return;
  if (impl_->stream) cudaStreamSynchronize(impl_->stream);
  if (impl_->comm) ncclCommDestroy(impl_->comm);
  if (impl_->ready) cudaEventDestroy(impl_->ready);
  if (impl_->done) cudaEventDestroy(impl_->done);
  if (impl_->stream) cudaStreamDestroy(impl_->stream);
}

std::string NcclCommunicator::engine() const {
  int v = 0;
  ncclGetVersion(&v);
  // 2.28.9 is 22809 (NCCL_VERSION_CODE since 2.9: major * 10000 + minor * 100 + patch);
  // before 2.9 it was major * 1000 + minor * 100 + patch (2.8.4 is 2804).
  const bool old = v < 10000;
  return "NCCL " + std::to_string(old ? v / 1000 : v / 10000) + "." +
         std::to_string(old ? v / 100 % 10 : v / 100 % 100) + "." + std::to_string(v % 100) +
         " over " + host_->engine();
}

Status NcclCommunicator::attach(Stream& stream) {
  auto* cuda = dynamic_cast<CudaStream*>(&stream);
  if (!cuda) return make_error("the NCCL engine needs the CUDA backend (--target gpu)");
  Impl& m = *impl_;
  m.compute = cuda->handle();
  if (cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaEventCreateWithFlags(&m.ready, cudaEventDisableTiming) != cudaSuccess ||
      cudaEventCreateWithFlags(&m.done, cudaEventDisableTiming) != cudaSuccess)
    return make_error("NCCL: cannot create the communication stream and events");
  const ncclResult_t r = ncclCommInitRank(&m.comm, size(), m.id, rank());
  if (r != ncclSuccess)
    return make_error(std::string("ncclCommInitRank failed: ") + ncclGetErrorString(r));
  return {};
}

size_t NcclCommunicator::scratch_bytes(int64_t slice) const {
  return static_cast<size_t>(std::max(size() - 1, 0)) * static_cast<size_t>(slice) * sizeof(float);
}

void NcclCommunicator::begin() {
  check(*host_, cudaEventRecord(impl_->ready, impl_->compute), "cudaEventRecord (compute)");
  check(*host_, cudaStreamWaitEvent(impl_->stream, impl_->ready, 0), "cudaStreamWaitEvent (comm)");
}

void NcclCommunicator::end() {
  check(*host_, cudaEventRecord(impl_->done, impl_->stream), "cudaEventRecord (comm)");
}

void NcclCommunicator::join() {
  check(*host_, cudaStreamWaitEvent(impl_->compute, impl_->done, 0), "cudaStreamWaitEvent (compute)");
}

void NcclCommunicator::reduce_scatter_sum(const float* x, int64_t first, int64_t count, float* own,
                                          int64_t slice) {
  const int N = size(), me = rank();
  bytes_ += count * static_cast<int64_t>(sizeof(float));
  if (count <= 0) return;
  const RangePart mine = part_of(me, first, count, slice);
  begin();
  if (N > 1) {
    if (!scratch_) nccl_failed(*host_, "reduce_scatter_sum", "no scratch bound (bind_scratch)");
    check(*host_, ncclGroupStart(), "ncclGroupStart");
    for (int k = 1; k < N; ++k) {
      const int dst = (me + k) % N, src = (me - k + N) % N;
      const RangePart theirs = part_of(dst, first, count, slice);
      if (theirs.size() > 0)
        check(*host_, ncclSend(x + (theirs.lo - first), static_cast<size_t>(theirs.size()), ncclFloat,
                               dst, impl_->comm, impl_->stream), "ncclSend (reduce-scatter)");
      if (mine.size() > 0)
        check(*host_, ncclRecv(scratch_ + static_cast<int64_t>(k - 1) * mine.size(),
                               static_cast<size_t>(mine.size()), ncclFloat, src, impl_->comm,
                               impl_->stream), "ncclRecv (reduce-scatter)");
    }
    check(*host_, ncclGroupEnd(), "ncclGroupEnd");
  }
  if (mine.size() > 0)
    check(*host_, cuda::launch_rank_ordered_sum(impl_->stream, own + (mine.lo - me * slice),
                                                x + (mine.lo - first), scratch_, mine.size(), N - 1),
          "rank_ordered_sum kernel");
  end();
}

void NcclCommunicator::all_gather(const float* own, float* x, int64_t first, int64_t count,
                                  int64_t slice) {
  const int N = size(), me = rank();
  bytes_ += count * static_cast<int64_t>(sizeof(float));
  if (count <= 0) return;
  begin();
  check(*host_, ncclGroupStart(), "ncclGroupStart");
  for (int r = 0; r < N; ++r) {
    const RangePart p = part_of(r, first, count, slice);
    if (p.size() == 0) continue;
    // The root sends its own part (in place when it already sits in x).
    const float* send = r == me ? own + (p.lo - me * slice) : x + (p.lo - first);
    check(*host_, ncclBroadcast(send, x + (p.lo - first), static_cast<size_t>(p.size()), ncclFloat, r,
                                impl_->comm, impl_->stream), "ncclBroadcast (all-gather)");
  }
  check(*host_, ncclGroupEnd(), "ncclGroupEnd");
  end();
}

void NcclCommunicator::all_gather_bytes(const void* own, void* all, int64_t bytes) {
  begin();
  check(*host_, ncclAllGather(own, all, static_cast<size_t>(bytes), ncclChar, impl_->comm,
                              impl_->stream), "ncclAllGather");
  end();
}

void NcclCommunicator::abort(int code) {
  if (impl_ && impl_->comm) {
    ncclCommAbort(impl_->comm);
    impl_->comm = nullptr;
  }
  host_->abort(code);
  std::abort();  // not reached
}

}  // namespace noeira
