#include "worker/token_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace vanguard::worker {
namespace {

absl::Status OpenError(const std::string& path, int error) {
  std::string message = absl::StrCat("--token_file ", path, ": ", std::strerror(error));
  if (error == ENOENT) return absl::NotFoundError(message);
  if (error == EACCES) return absl::PermissionDeniedError(message);
  return absl::FailedPreconditionError(message);
}

}  // namespace

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::error_code ec;
  std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (ec) return OpenError(path, ec.value());
  if (!std::filesystem::is_regular_file(status)) {
    return absl::FailedPreconditionError(absl::StrCat("--token_file ", path, ": not a file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return OpenError(path, errno);
  std::string content;
  content.resize(kMaxTokenFileBytes + 1);
  in.read(content.data(), static_cast<std::streamsize>(content.size()));
  if (in.bad()) return OpenError(path, errno);
  content.resize(static_cast<size_t>(in.gcount()));
  if (content.size() > kMaxTokenFileBytes) {
    return absl::FailedPreconditionError(absl::StrCat("--token_file ", path, ": larger than ",
                                                      kMaxTokenFileBytes, " bytes, not a token"));
  }
  absl::StripTrailingAsciiWhitespace(&content);
  if (content.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("--token_file ", path, ": empty"));
  }
  return content;
}

}  // namespace vanguard::worker
