// Reads the worker's bearer token from a file (--token_file): Kubernetes mounts Secrets as
// files, and a file can be rotated without restarting a pod's environment.
//
//   absl::StatusOr<std::string> token = ReadTokenFile("/var/run/secrets/vanguard/worker-token");
//   if (!token.ok()) { /* print token.status() and exit non-zero */ }
//
// Called once from main() at start-up, on the main thread.
#ifndef VANGUARD_WORKER_TOKEN_FILE_H_
#define VANGUARD_WORKER_TOKEN_FILE_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace vanguard::worker {

// A token file larger than this is not a token (a wrong path, e.g. a log); it is refused.
inline constexpr size_t kMaxTokenFileBytes = 64 * 1024;

// The file's content without its trailing whitespace (the newline `echo` and editors add).
// Errors (each message names the path): NOT_FOUND if it does not exist, PERMISSION_DENIED if
// it cannot be read, FAILED_PRECONDITION if it is not a regular file, larger than
// kMaxTokenFileBytes, or empty or blank.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

}  // namespace vanguard::worker

#endif  // VANGUARD_WORKER_TOKEN_FILE_H_
