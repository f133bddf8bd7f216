// The replayer's open-file budget. Every keep-alive connection of a step is a file
// descriptor, and an HTTP/1.1 step needs one per request in flight (rate x latency): a slow
// model at a few hundred requests per second holds thousands. Many systems start processes
// with a soft limit of 1024 open files and a far higher hard limit.
//
//   RaiseOpenFileLimit();                    // main(), once, before the first step
//   config.max_connections = std::min(config.max_connections, ConnectionBudget());
//
// A step never asks for more connections than the budget: past it, socket() would fail and
// the requests would read as the model's connect errors, where a capped pool makes them wait
// and the step client-invalid, naming the cap (StepResult.connection_waits).
//
// Any thread (getrlimit/setrlimit are process-wide and thread-safe).
#ifndef VANGUARD_REPLAYER_OPEN_FILES_H_
#define VANGUARD_REPLAYER_OPEN_FILES_H_

namespace vanguard::replayer {

// Files kept out of the connection budget: gRPC, the trace and its index, each loop's epoll,
// timer and event descriptors, logs.
inline constexpr int kReservedFiles = 256;

// Raises the soft RLIMIT_NOFILE to the hard limit; on failure the old limit stays in force.
void RaiseOpenFileLimit();

// Connections one step may open: the soft RLIMIT_NOFILE less kReservedFiles, at least 1.
int ConnectionBudget();

}  // namespace vanguard::replayer

#endif  // VANGUARD_REPLAYER_OPEN_FILES_H_
