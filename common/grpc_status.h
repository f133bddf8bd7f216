// Conversion between absl::Status (used across module boundaries) and grpc::Status (used
// only in service adapters and clients).
#ifndef VANGUARD_COMMON_GRPC_STATUS_H_
#define VANGUARD_COMMON_GRPC_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace vanguard {

inline grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

inline absl::Status FromGrpcStatus(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

}  // namespace vanguard

#endif  // VANGUARD_COMMON_GRPC_STATUS_H_
