// A command run in the background (through /bin/sh, `exec`ed so that the pid is the
// command's own), to be signalled mid-run: kill -9, Ctrl-C.
#pragma once
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

extern char** environ;

namespace noeira::test {

class BackgroundProcess {
 public:
  // `command`: a shell command line (its redirections included).
  explicit BackgroundProcess(const std::string& command) {
    const std::string line = "exec " + command;
    const char* argv[] = {"/bin/sh", "-c", line.c_str(), nullptr};
    if (::posix_spawn(&pid_, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ) != 0)
      pid_ = -1;
  }
  ~BackgroundProcess() {
    if (pid_ > 0 && !done_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  bool started() const { return pid_ > 0; }
  void signal(int sig) const { ::kill(pid_, sig); }
  // The exit code, or 128 + the signal that ended it (the shell's convention).
  int wait() {
    if (done_) return code_;
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0) {}
    done_ = true;
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return code_;
  }

 private:
  pid_t pid_ = -1;
  bool done_ = false;
  int code_ = -1;
};

// Polls `ready` every 20 ms for up to `seconds`; whether it held.
inline bool wait_until(const std::function<bool()>& ready, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return ready();
}

}  // namespace noeira::test
