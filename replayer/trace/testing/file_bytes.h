// Whole-file reads and writes for the trace tests, which corrupt traces and indexes byte by
// byte. Test code only; any thread.
//
//   std::string bytes = testing::ReadFileBytes(path);
//   bytes[20] ^= 0x01;
//   testing::WriteFileBytes(path, bytes);
#ifndef VANGUARD_REPLAYER_TRACE_TESTING_FILE_BYTES_H_
#define VANGUARD_REPLAYER_TRACE_TESTING_FILE_BYTES_H_

#include <fstream>
#include <sstream>
#include <string>

namespace vanguard::replayer::testing {

// The file's bytes; empty if it cannot be read.
inline std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Replaces the file's contents with `bytes`.
inline void WriteFileBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace vanguard::replayer::testing

#endif  // VANGUARD_REPLAYER_TRACE_TESTING_FILE_BYTES_H_
