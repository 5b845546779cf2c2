// SIGINT and SIGTERM ask the run to stop: the row in progress finishes and is journaled, nothing
// new starts, and gemmlab exits with 128 + the signal's number after printing how to resume.
// A second signal of either kind ends the process at once (the default action), for a user who
// does not want to wait for the row; the journal still holds every finished row.
#pragma once
#include <string>
#include <vector>

namespace gemmlab::engine {

// Installs the handlers (idempotent) and clears any earlier request.
void install_stop_handlers();
// Restores the default actions.
void remove_stop_handlers();

// The signal that asked to stop, or 0. Async-signal-safe to set, cheap to poll between rows.
int stop_signal();
// For tests and for a worker that fails: ask the run to stop as if `sig` had arrived.
void request_stop(int sig);

// The exit status for a run stopped by `sig`: 128 + sig, as a shell reports a killed process.
int stopped_exit_status(int sig);

// The command that continues this run: `args` (argv, including the program) shell-quoted, with
// --force removed (it would discard the journal) and --resume added if absent.
std::string resume_command(const std::vector<std::string>& args);

}  // namespace gemmlab::engine
