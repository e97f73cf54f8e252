// The CUPTI timer: device time per step from CUPTI activity records.
//
// begin_step pushes an external correlation id (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
// one id per step) and end_step pops it. Every CUDA API call made in between (kernel
// launches, memsets, cuBLASLt's launches, cudaGraphLaunch) gets an EXTERNAL_CORRELATION
// record mapping its correlation id to the step's id; kernel, memcpy and memset records
// carry the correlation id of the API call that launched them. Kernels inside a CUDA
// graph all carry the correlation id of the cudaGraphLaunch call, so one external record
// attributes the whole replay to its step. CUPTI emits external correlation records
// alongside API records, so RUNTIME and DRIVER activity are enabled too (their own
// records are skipped).
//
// collect() synchronises the stream, forces a flush (cuptiActivityFlushAll), and returns
// per step the sum of the record durations and the union of their [start, end)
// intervals, in milliseconds. Activity buffers are allocated in CUPTI's buffer-request
// callback, outside any step. CUPTI's callbacks are process-wide, so one CUPTI timer may
// exist at a time.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_timers.h"

namespace noeira::cuda {

namespace {

constexpr CUpti_ExternalCorrelationKind kStepKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
constexpr size_t kBufferBytes = 8u << 20;  // per CUPTI activity buffer

const CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,            CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    CUPTI_ACTIVITY_KIND_RUNTIME,           CUPTI_ACTIVITY_KIND_DRIVER,
};

const char* kind_name(CUpti_ActivityKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return "CONCURRENT_KERNEL";
    case CUPTI_ACTIVITY_KIND_MEMCPY: return "MEMCPY";
    case CUPTI_ACTIVITY_KIND_MEMSET: return "MEMSET";
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return "EXTERNAL_CORRELATION";
    case CUPTI_ACTIVITY_KIND_RUNTIME: return "RUNTIME";
    case CUPTI_ACTIVITY_KIND_DRIVER: return "DRIVER";
    default: return "?";
  }
}

std::string cupti_fix(CUptiResult r) {
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    return "profiling is restricted to administrators on this machine "
           "(NVreg_RestrictProfilingToAdminUsers=1); use the event timer";
  return "CUPTI is unavailable (is libcupti from the same CUDA toolkit as the driver? is "
         "another profiler attached?); use the event timer";
}

// One device activity: its launch's correlation id and [start, end) in ns.
struct Activity {
  uint32_t correlation;
  uint64_t start, end;
};

// What the completion callback gathers for the active timer (under `mu`).
struct Records {
  std::vector<Activity> activities;
  std::unordered_map<uint32_t, uint64_t> step_of;  // API correlation id -> step id
  size_t dropped = 0;
};

// Process-wide: CUPTI has one set of buffer callbacks. Never destroyed, since CUPTI may
// call back while the process exits.
struct CuptiGlobal {
  std::mutex mu;
  Records* active = nullptr;  // the live timer's records, or null
  bool callbacks_registered = false;
};
CuptiGlobal& global() {
  static CuptiGlobal* g = new CuptiGlobal();
  return *g;
}

// Step ids are unique across timers, so a late record never lands in a newer timer.
std::atomic<uint64_t> next_step_id{1};

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void take(Records& out, const CUpti_Activity* r) {
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
      out.activities.push_back({k->correlationId, k->start, k->end});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(r);
      out.activities.push_back({m->correlationId, m->start, m->end});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(r);
      out.activities.push_back({m->correlationId, m->start, m->end});
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(r);
      if (e->externalKind == kStepKind) out.step_of[e->correlationId] = e->externalId;
      break;
    }
    default: break;  // API records: only needed so CUPTI emits the external ones
  }
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                               size_t /*size*/, size_t valid_size) {
  {
    std::lock_guard<std::mutex> lock(global().mu);
    if (Records* out = global().active) {
      CUpti_Activity* record = nullptr;
      while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS)
        take(*out, record);
      size_t dropped = 0;
      if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS)
        out->dropped += dropped;
    }
  }
  std::free(buffer);
}

class CuptiTimer final : public DeviceStepTimer {
 public:
  explicit CuptiTimer(cudaStream_t stream) : stream_(stream) {}

  ~CuptiTimer() override {
    if (!started_) return;
    for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::lock_guard<std::mutex> lock(global().mu);
    global().active = nullptr;
  }

  // Registers the callbacks (once per process) and enables the activity kinds.
  Status start() {
    std::lock_guard<std::mutex> lock(global().mu);
    if (global().active)
      return make_error("a CUPTI timer is already active in this process; destroy it first");
    if (!global().callbacks_registered) {
      const CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
      if (r != CUPTI_SUCCESS) return call_error("cuptiActivityRegisterCallbacks", r, cupti_fix(r));
      global().callbacks_registered = true;
    }
    for (size_t i = 0; i < std::size(kKinds); ++i) {
      const CUptiResult r = cuptiActivityEnable(kKinds[i]);
      if (r != CUPTI_SUCCESS) {
        for (size_t j = 0; j < i; ++j) cuptiActivityDisable(kKinds[j]);
        return make_error(std::string("cuptiActivityEnable(") + kind_name(kKinds[i]) +
                          ") failed (" + error_text(r) + "); " + cupti_fix(r));
      }
    }
    global().active = &records_;
    started_ = true;
    return {};
  }

  void begin_step() override {
    const uint64_t id = next_step_id.fetch_add(1);
    const CUptiResult r = cuptiActivityPushExternalCorrelationId(kStepKind, id);
    if (r != CUPTI_SUCCESS)
      fatal("CUPTI timer begin_step: cuptiActivityPushExternalCorrelationId failed (" +
            error_text(r) + "); use the event timer");
    steps_.push_back(id);
  }

  void end_step() override {
    uint64_t id = 0;
    const CUptiResult r = cuptiActivityPopExternalCorrelationId(kStepKind, &id);
    if (r != CUPTI_SUCCESS)
      fatal("CUPTI timer end_step: cuptiActivityPopExternalCorrelationId failed (" +
            error_text(r) + "); every end_step needs a begin_step");
  }

  Result<Samples> collect() override {
    std::vector<uint64_t> steps;
    steps.swap(steps_);
    NOEIRA_CUDA_TRY(cudaStreamSynchronize(stream_),
                    "a step failed on the device; rerun with CUDA_LAUNCH_BLOCKING=1");
    if (const CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        r != CUPTI_SUCCESS)
      return call_error("cuptiActivityFlushAll", r, cupti_fix(r));
    Records got;
    {
      std::lock_guard<std::mutex> lock(global().mu);
      std::swap(got, records_);
    }
    if (got.dropped > 0)
      return make_error("CUPTI dropped " + std::to_string(got.dropped) +
                        " activity records (buffers full); collect() more often");

    // Step id -> index into this collect's samples.
    std::unordered_map<uint64_t, size_t> index;
    for (size_t i = 0; i < steps.size(); ++i) index[steps[i]] = i;
    std::vector<std::vector<std::pair<uint64_t, uint64_t>>> spans(steps.size());
    for (const Activity& a : got.activities) {
      if (a.end <= a.start) continue;  // no timestamps
      const auto step = got.step_of.find(a.correlation);
      if (step == got.step_of.end()) continue;  // outside any bracketed step
      const auto i = index.find(step->second);
      if (i != index.end()) spans[i->second].emplace_back(a.start, a.end);
    }

    Samples s;
    for (auto& span : spans) {
      uint64_t sum = 0, busy = 0;
      std::sort(span.begin(), span.end());
      uint64_t open_start = 0, open_end = 0;  // the current merged interval
      for (const auto& [start, end] : span) {
        sum += end - start;
        if (open_end == 0 || start > open_end) {
          busy += open_end - open_start;
          open_start = start, open_end = end;
        } else {
          open_end = std::max(open_end, end);
        }
      }
      busy += open_end - open_start;
      s.sum_ms.push_back(static_cast<double>(sum) * 1e-6);
      s.busy_ms.push_back(static_cast<double>(busy) * 1e-6);
    }
    return s;
  }

 private:
  cudaStream_t stream_;
  bool started_ = false;
  Records records_;             // filled by the completion callback, under global().mu
  std::vector<uint64_t> steps_;  // ids bracketed since the last collect()
};

}  // namespace

std::unique_ptr<DeviceStepTimer> make_cupti_timer(cudaStream_t stream, std::string* why) {
  auto timer = std::make_unique<CuptiTimer>(stream);
  if (Status s = timer->start(); !s) {
    if (why) *why = "CUPTI timer: " + s.error().message;
    return nullptr;
  }
  return timer;
}

}  // namespace noeira::cuda
