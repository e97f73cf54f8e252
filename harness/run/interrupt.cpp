#include "harness/run/interrupt.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "harness/exit_codes.h"

namespace noeira {

namespace {

std::atomic<int> g_signal{0};

// SIGINT and SIGTERM are blocked in every thread and taken by one thread that only waits
// for them: no compute thread (OpenMP, oneDNN) is ever interrupted by a handler. With a
// handler, the work's threads were: oneDNN's GEMM corrupted the heap when a Ctrl-C
// landed in it (seen on oneDNN 2.6.3, with and without SA_RESTART).
void wait_for_signals(sigset_t set) {
  for (;;) {
    int sig = 0;
    if (::sigwait(&set, &sig) != 0) continue;
    int none = 0;
    if (g_signal.compare_exchange_strong(none, sig)) continue;
    // The second request: the default action (the process ends now).
    ::signal(sig, SIG_DFL);
    ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    ::raise(sig);
  }
}

}  // namespace

void install_interrupt_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    // Threads started from here on inherit the mask (call this before starting work);
    // child processes get an empty mask back (harness/twin/subprocess.cpp).
    ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread(wait_for_signals, set).detach();
  });
}

bool interrupt_requested() { return g_signal.load() != 0; }

int interrupt_signal() { return g_signal.load(); }

std::string interrupt_name() {
  switch (g_signal.load()) {
    case 0: return "";
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "signal " + std::to_string(g_signal.load());
  }
}

int interrupted_exit_code() { return exit_code_for_signal(g_signal.load()); }

void clear_interrupt() { g_signal.store(0); }

}  // namespace noeira
