#include "dist/mpi_communicator.h"

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

int launched_ranks() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(var); v && *v) return std::atoi(v);
  return 1;
}

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

void MpiCommunicator::reduce_scatter_sum(const float* x, float* out, int64_t slice) {
  const int64_t N = size_;
  const float* own = x + rank_ * slice;
  for (int64_t i = 0; i < slice; ++i) out[i] = own[i];
  bytes_ += N * slice * static_cast<int64_t>(sizeof(float));
  if (N == 1 || slice == 0) return;
  recv_.resize(static_cast<size_t>(std::min(slice, kMaxCount)));
  for (int64_t k = 1; k < N; ++k) {
    const int dst = static_cast<int>((rank_ + k) % N), src = static_cast<int>((rank_ - k + N) % N);
    for (int64_t first = 0; first < slice; first += kMaxCount) {
      const int count = static_cast<int>(std::min(kMaxCount, slice - first));
      check(MPI_Sendrecv(x + dst * slice + first, count, MPI_FLOAT, dst, 0, recv_.data(), count,
                         MPI_FLOAT, src, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            "MPI_Sendrecv (gradient reduce-scatter)");
      float* o = out + first;
      for (int i = 0; i < count; ++i) o[i] += recv_[static_cast<size_t>(i)];
    }
  }
}

void MpiCommunicator::all_gather(const float* in, float* out, int64_t slice) {
  bytes_ += size_ * slice * static_cast<int64_t>(sizeof(float));
  if (slice > kMaxCount) {  // in pieces: one all-gather per piece, into a strided layout
    for (int64_t first = 0; first < slice; first += kMaxCount) {
      const int count = static_cast<int>(std::min(kMaxCount, slice - first));
      float* mine = out + rank_ * slice + first;
      if (in + first != mine) std::memmove(mine, in + first, static_cast<size_t>(count) * sizeof(float));
      for (int r = 0; r < size_; ++r)
        check(MPI_Bcast(out + r * slice + first, count, MPI_FLOAT, r, MPI_COMM_WORLD),
              "MPI_Bcast (all-gather)");
    }
    return;
  }
  // The own slice may already sit in its place in out (the ZeRO exchanges): MPI_IN_PLACE.
  const bool in_place = in == out + rank_ * slice;
  check(MPI_Allgather(in_place ? MPI_IN_PLACE : in, static_cast<int>(slice), MPI_FLOAT, out,
                      static_cast<int>(slice), MPI_FLOAT, MPI_COMM_WORLD),
        "MPI_Allgather");
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
