#include "harness/twin/twin.h"

#include <cstdlib>
#include <fstream>
#include <vector>

#include "harness/twin/subprocess.h"
#include "harness/twin/twin_reply.h"
#include "models/install_root.h"

namespace noeira {

namespace {

std::string last_line_of(const std::filesystem::path& log) {
  std::ifstream in(log);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last.size() > 200 ? last.substr(last.size() - 200) : last;
}

// A number as the twin's command line takes it: shortest round-trip text (JSON's).
std::string json_number(double v) { return nlohmann::json(v).dump(); }

// torch.set_num_threads does not reach the BLAS torch links (OpenBLAS starts one thread
// per core at import): every pool is pinned to the same count as ours.
std::vector<std::string> thread_env(int threads) {
  std::vector<std::string> env;
  if (threads > 0)
    for (const char* var : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"})
      env.push_back(std::string(var) + "=" + std::to_string(threads));
  return env;
}

}  // namespace

std::filesystem::path twin_script() {
  return install_root() / "reference" / "torch_nn_reference.py";
}

std::filesystem::path twin_venv_python() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v && *v ? v : "";
  };
  std::filesystem::path venv = env("NOEIRA_TWIN_VENV");
  if (venv.empty()) {
    std::filesystem::path cache = env("XDG_CACHE_HOME");
    if (cache.empty()) cache = std::filesystem::path(env("HOME")) / ".cache";
    venv = cache / "noeira" / "twin-venv";
  }
  return venv / "bin" / "python";
}

std::vector<std::string> twin_python_candidates(const std::string& requested) {
  if (!requested.empty()) return {requested};
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("NOEIRA_PYTHON"); env && *env) candidates.push_back(env);
  if (std::error_code ec; std::filesystem::exists(twin_venv_python(), ec))
    candidates.push_back(twin_venv_python().string());
  candidates.push_back("python3");
  candidates.push_back("/usr/bin/python3");
  return candidates;
}

PythonProbe find_python_with_torch(const std::string& requested) {
  const std::vector<std::string> candidates = twin_python_candidates(requested);
  PythonProbe probe;
  std::string tried;
  const auto log = std::filesystem::temp_directory_path() / "noeira-python-probe.log";
  for (const std::string& py : candidates) {
    const ProcessResult r =
        run_process({py, "-c", "import torch; print(torch.__version__)"}, log, 120);
    tried += (tried.empty() ? "" : ", ") + py;
    if (r.started && !r.timed_out && r.exit_code == 0 && !r.out.empty()) {
      probe.python = py;
      probe.torch_version = r.out.substr(0, r.out.find_first_of("\r\n"));
      break;
    }
  }
  std::error_code ec;
  std::filesystem::remove(log, ec);
  if (!probe.python.empty()) return probe;
  probe.reason = "no python with torch found (tried " + tried +
                 "); run scripts/setup (it makes the twin's venv with a pinned torch, "
                 "scripts/twin-env) or pass --python PATH";
  return probe;
}

nlohmann::json run_twin_probe(const std::string& python, const std::string& device, int threads,
                              const std::filesystem::path& log, double timeout_seconds) {
  std::vector<std::string> argv = {python, twin_script().string(), "--probe", "--device", device};
  if (threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(threads)});
  const ProcessResult r = run_process(argv, log, timeout_seconds, thread_env(threads));
  const std::string hint = " (log: " + log.string() + ")";
  auto error = [](const std::string& why) { return nlohmann::json{{"error", why}}; };
  if (!r.started) return error("cannot start " + python + ": " + r.error);
  if (r.timed_out) return error("timed out after " + std::to_string(static_cast<int>(timeout_seconds)) + " s" + hint);
  return parse_twin_probe_reply(r.out, r.exit_code, hint);
}

TwinOutcome run_twin(const TwinRequest& q) {
  std::vector<std::string> argv = {q.python,        twin_script().string(),
                                   "--recipe",      q.recipe.string(),
                                   "--data-dir",    q.data_dir.string(),
                                   "--device",      q.device,
                                   "--mode",        q.mode,
                                   "--dtype",       q.dtype,
                                   "--seed",        std::to_string(q.seed),
                                   "--epochs",      std::to_string(q.epochs),
                                   "--max-steps",   std::to_string(q.max_steps),
                                   "--warmup",      std::to_string(q.warmup)};
  if (!q.dataset.empty()) argv.insert(argv.end(), {"--dataset", q.dataset});
  if (!q.target_metric.empty())
    argv.insert(argv.end(), {"--target-metric", q.target_metric, "--target-score", json_number(q.target_score)});
  if (q.threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(q.threads)});
  if (q.profile_steps > 0) argv.insert(argv.end(), {"--profile", std::to_string(q.profile_steps)});
  if (!q.profile_trace.empty()) argv.insert(argv.end(), {"--profile-trace", q.profile_trace.string()});
  if (q.init_checkpoint) argv.insert(argv.end(), {"--init-checkpoint", q.init_checkpoint->string()});
  if (q.ranks > 1)
    argv.insert(argv.end(), {"--ranks", std::to_string(q.ranks), "--zero", std::to_string(q.zero)});

  TwinOutcome o;
  const ProcessResult r = run_process(argv, q.log, q.timeout_seconds, thread_env(q.threads));
  o.seconds = r.seconds;
  const std::string log_hint = " (log: " + q.log.string() + ")";
  if (!r.started) {
    o.reason = "twin failed: cannot start " + q.python + ": " + r.error;
    return o;
  }
  if (r.timed_out) {
    o.reason = "twin failed: timed out after " + std::to_string(static_cast<int>(q.timeout_seconds)) +
               " s" + log_hint;
    return o;
  }
  std::optional<TwinOutcome> reply = parse_twin_reply(r.out, log_hint);
  if (!reply) {
    std::string why = r.signal ? "killed by signal " + std::to_string(r.signal)
                               : "exit code " + std::to_string(r.exit_code);
    const std::string tail = last_line_of(q.log);
    o.reason = "twin failed: " + why + ", no JSON on stdout" + (tail.empty() ? "" : ": " + tail) +
               log_hint;
    return o;
  }
  reply->seconds = o.seconds;
  return *reply;
}

}  // namespace noeira
