// Status propagation macros (our Abseil release ships none).
//
//   absl::StatusOr<int> Parse(std::string_view s);
//   absl::Status Use() {
//     ASSIGN_OR_RETURN(int n, Parse("42"));
//     RETURN_IF_ERROR(Check(n));
//     return absl::OkStatus();
//   }
#ifndef VANGUARD_COMMON_STATUS_MACROS_H_
#define VANGUARD_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define VANGUARD_CONCAT_INNER(a, b) a##b
#define VANGUARD_CONCAT(a, b) VANGUARD_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                            \
  do {                                                   \
    ::absl::Status _vanguard_status = (expr);            \
    if (!_vanguard_status.ok()) return _vanguard_status; \
  } while (0)

#define VANGUARD_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(*tmp)

#define ASSIGN_OR_RETURN(lhs, expr) \
  VANGUARD_ASSIGN_OR_RETURN_IMPL(VANGUARD_CONCAT(_vanguard_statusor_, __LINE__), lhs, expr)

#endif  // VANGUARD_COMMON_STATUS_MACROS_H_
