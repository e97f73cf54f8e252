// Ctrl-C (SIGINT) and SIGTERM during long work: the first asks the work to stop at its
// next safe point (after the current step; a child process is asked to stop too), so
// that what finished is kept and written; a second one ends the process at once.
#pragma once
#include <string>

namespace noeira {

// Installs the handlers (idempotent). Commands that can stop cleanly call it; the others
// keep the default (the process ends).
void install_interrupt_handlers();

// Whether a stop was asked for, and by which signal (0: none).
bool interrupt_requested();
int interrupt_signal();
// "SIGINT", "SIGTERM" (empty when none).
std::string interrupt_name();
// The shell's convention for a process ended by the signal: 128 + its number.
int interrupted_exit_code();

// For tests: forget a request.
void clear_interrupt();

}  // namespace noeira
