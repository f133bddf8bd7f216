// The `--port_file` convention of our server binaries: once listening, a server writes
// "<port>\n" to the file through a temporary file and rename, so scripts and tests that
// poll for it never read half a number.
//
//   if (!port_file.empty() && !WritePortFile(port_file, port)) { ...report, exit 1... }
#ifndef VANGUARD_COMMON_PORT_FILE_H_
#define VANGUARD_COMMON_PORT_FILE_H_

#include <string>

namespace vanguard {

// False when the file could not be written or renamed into place.
bool WritePortFile(const std::string& path, int port);

}  // namespace vanguard

#endif  // VANGUARD_COMMON_PORT_FILE_H_
