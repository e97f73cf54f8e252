#include "harness/twin/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "harness/exit_codes.h"
#include "harness/run/interrupt.h"

extern char** environ;

namespace noeira {

namespace {

using Clock = std::chrono::steady_clock;

// argv[0] as execvp would find it, resolved before fork (the child may only make
// async-signal-safe calls).
std::string resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!dirs.empty()) {
    const size_t colon = dirs.find(':');
    const std::string dir(dirs.substr(0, colon));
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return name;  // execve fails with ENOENT, reported as such
}

std::vector<std::string> child_environment(const std::vector<std::string>& extra_env) {
  std::vector<std::string> env = extra_env;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const bool overridden = std::any_of(extra_env.begin(), extra_env.end(), [&](const std::string& x) {
      return entry.substr(0, entry.find('=') + 1) == std::string_view(x).substr(0, x.find('=') + 1);
    });
    if (!overridden) env.emplace_back(entry);
  }
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (std::string& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// In the forked child: its own process group, death with the parent, the descriptors,
// then exec. Only async-signal-safe calls; a failure is written to `error_fd` as errno.
[[noreturn]] void exec_child(pid_t parent, int out_fd, int log_fd, int null_fd, int error_fd,
                             const char* program, char* const* argv, char* const* envp) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(kExitExecFailed);  // the parent died before prctl took effect
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(log_fd, STDERR_FILENO);
  ::dup2(null_fd, STDIN_FILENO);
  // The interrupt handlers are reset by exec; an interrupt's blocked state must not leak.
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(program, argv, envp);
  const int err = errno;
  [[maybe_unused]] const ssize_t w = ::write(error_fd, &err, sizeof err);
  ::_exit(kExitExecFailed);
}

}  // namespace

std::string self_binary() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("noeira-bench") : p.string();
}

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::filesystem::path& stderr_log, double timeout_seconds,
                          const std::vector<std::string>& extra_env, double grace_seconds) {
  ProcessResult r;
  const int log_fd = ::open(stderr_log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    r.error = "cannot open the log " + stderr_log.string() + ": " + std::strerror(errno);
    return r;
  }
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int pipe_fd[2], error_pipe[2];
  if (null_fd < 0 || ::pipe2(pipe_fd, O_CLOEXEC) != 0) {
    r.error = std::string("pipe: ") + std::strerror(errno);
    ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    return r;
  }
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) {
    r.error = std::string("pipe: ") + std::strerror(errno);
    for (int fd : {log_fd, null_fd, pipe_fd[0], pipe_fd[1]}) ::close(fd);
    return r;
  }
  const std::string program = resolve_program(argv.at(0));
  std::vector<std::string> args = argv, env = child_environment(extra_env);
  std::vector<char*> arg_ptrs = pointers(args), env_ptrs = pointers(env);

  const pid_t parent = ::getpid();
  const auto start = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0)
    exec_child(parent, pipe_fd[1], log_fd, null_fd, error_pipe[1], program.c_str(),
               arg_ptrs.data(), env_ptrs.data());
  const int fork_errno = errno;
  for (int fd : {log_fd, null_fd, pipe_fd[1], error_pipe[1]}) ::close(fd);
  if (pid < 0) {
    ::close(pipe_fd[0]);
    ::close(error_pipe[0]);
    r.error = std::string("fork: ") + std::strerror(fork_errno);
    return r;
  }
  ::setpgid(pid, pid);  // also here: a kill of the group must not race the child's setpgid
  int exec_errno = 0;
  ssize_t got;
  do got = ::read(error_pipe[0], &exec_errno, sizeof exec_errno);
  while (got < 0 && errno == EINTR);
  ::close(error_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {  // exec failed: nothing ran
    ::close(pipe_fd[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    r.error = argv[0] + ": " + std::strerror(exec_errno);
    return r;
  }
  r.started = true;

  const auto deadline = start + std::chrono::duration<double>(timeout_seconds);
  Clock::time_point kill_at = Clock::time_point::max();
  // An interrupt: SIGINT to the child's group once (it stops cleanly), SIGKILL after the grace.
  auto check_interrupt = [&] {
    if (!r.interrupted && interrupt_requested()) {
      r.interrupted = true;
      ::kill(-pid, SIGINT);
      kill_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(grace_seconds));
    }
    if (Clock::now() >= kill_at) {
      ::kill(-pid, SIGKILL);
      kill_at = Clock::time_point::max();
    }
  };
  char buf[65536];
  for (;;) {
    check_interrupt();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd p{pipe_fd[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 200)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = ::read(pipe_fd[0], buf, sizeof buf);
    if (n > 0) r.out.append(buf, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR) break;  // EOF: the child closed stdout
  }
  ::close(pipe_fd[0]);
  // A child may close stdout and keep running: the deadline and interrupts still apply.
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    check_interrupt();
    if (Clock::now() >= deadline && !r.timed_out) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
    }
    ::usleep(10000);
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

}  // namespace noeira
