#include "parallel/mpi_communicator.h"

#include "kernels/stream.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace noeira {

namespace {

// MPI counts are int: a call moves at most this many floats (larger slices go in pieces).
constexpr int64_t kMaxCount = INT_MAX / 2;

[[noreturn]] void mpi_failed(const char* what, int code) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, msg, &len);
  std::fprintf(stderr, "noeira-bench: %s failed: %.*s\n", what, len, msg);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) mpi_failed(what, code);
}

}  // namespace

Result<std::unique_ptr<MpiCommunicator>> MpiCommunicator::create() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized && MPI_Init(nullptr, nullptr) != MPI_SUCCESS)
    return make_error("MPI_Init failed; start the ranks with mpirun (Open MPI)");
  // Errors come back as codes, so a failing call names itself before the job ends.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::unique_ptr<MpiCommunicator> c(new MpiCommunicator);
  MPI_Comm_rank(MPI_COMM_WORLD, &c->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &c->size_);
  return c;
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::string MpiCommunicator::engine() const {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(v, &len);
  std::string s(v, static_cast<size_t>(len));
  if (const auto nl = s.find_first_of(",\n"); nl != std::string::npos) s.resize(nl);
  return "MPI (" + s + ")";
}

// In pieces of at most kMaxCount floats (MPI counts are int); every element lies in one
// piece, so its sum order does not depend on the cut.
void MpiCommunicator::reduce_scatter_sum(const float* x, int64_t first, int64_t count,
                                         float* own, int64_t slice) {
  const int64_t N = size_;
  bytes_ += count * static_cast<int64_t>(sizeof(float));
  for (int64_t at = first; at < first + count; at += kMaxCount) {
    const int64_t n = std::min(kMaxCount, first + count - at);
    const float* xs = x + (at - first);  // (n) this piece of the range
    const RangePart mine = part_of(rank_, at, n, slice);
    float* o = mine.size() > 0 ? own + (mine.lo - rank_ * slice) : own;
    for (int64_t i = 0; i < mine.size(); ++i) o[i] = xs[mine.lo - at + i];
    if (N == 1) continue;
    recv_.resize(static_cast<size_t>(std::max<int64_t>(mine.size(), 1)));
    for (int64_t k = 1; k < N; ++k) {
      const int dst = static_cast<int>((rank_ + k) % N), src = static_cast<int>((rank_ - k + N) % N);
      const RangePart theirs = part_of(dst, at, n, slice);
      check(MPI_Sendrecv(theirs.size() > 0 ? xs + (theirs.lo - at) : xs, static_cast<int>(theirs.size()), MPI_FLOAT, dst, 0,
                         recv_.data(), static_cast<int>(mine.size()), MPI_FLOAT, src, 0,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            "MPI_Sendrecv (gradient reduce-scatter)");
      for (int64_t i = 0; i < mine.size(); ++i) o[i] += recv_[static_cast<size_t>(i)];
    }
  }
}

void MpiCommunicator::all_gather(const float* own, float* x, int64_t first, int64_t count,
                                 int64_t slice) {
  bytes_ += count * static_cast<int64_t>(sizeof(float));
  counts_.resize(static_cast<size_t>(size_));
  displs_.resize(static_cast<size_t>(size_));
  for (int64_t at = first; at < first + count; at += kMaxCount) {
    const int64_t n = std::min(kMaxCount, first + count - at);
    for (int r = 0; r < size_; ++r) {
      const RangePart p = part_of(r, at, n, slice);
      counts_[static_cast<size_t>(r)] = static_cast<int>(p.size());
      displs_[static_cast<size_t>(r)] = p.size() > 0 ? static_cast<int>(p.lo - at) : 0;
    }
    const RangePart mine = part_of(rank_, at, n, slice);
    float* piece = x + (at - first);
    const float* send = mine.size() > 0 ? own + (mine.lo - rank_ * slice) : own;
    // The own part may already sit in its place in x (the ZeRO exchanges): MPI_IN_PLACE.
    const bool in_place = mine.size() > 0 && send == piece + (mine.lo - at);
    check(MPI_Allgatherv(in_place ? MPI_IN_PLACE : send, static_cast<int>(mine.size()), MPI_FLOAT,
                         piece, counts_.data(), displs_.data(), MPI_FLOAT, MPI_COMM_WORLD),
          "MPI_Allgatherv");
  }
}

void MpiCommunicator::all_gather_bytes(const void* own, void* all, int64_t bytes) {
  check(MPI_Allgather(own, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes),
                      MPI_BYTE, MPI_COMM_WORLD),
        "MPI_Allgather (bytes)");
}

Status MpiCommunicator::attach(Stream& stream) {
  if (!stream.host_memory())
    return make_error("the MPI engine moves host memory: ranks on the GPU use NCCL "
                      "(a build with CUDA and NCCL, --target gpu)");
  return {};
}

void MpiCommunicator::all_sum(double* v, int64_t n) {
  std::vector<double> all(static_cast<size_t>(n * size_));
  check(MPI_Allgather(v, static_cast<int>(n), MPI_DOUBLE, all.data(), static_cast<int>(n),
                      MPI_DOUBLE, MPI_COMM_WORLD),
        "MPI_Allgather (statistics)");
  for (int64_t i = 0; i < n; ++i) {
    double s = 0.0;
    for (int r = 0; r < size_; ++r) s += all[static_cast<size_t>(r * n + i)];
    v[i] = s;
  }
}

void MpiCommunicator::barrier() { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

void MpiCommunicator::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();
}

}  // namespace noeira
