// The SQL migrations, embedded at build time from migrations/NNNN_name.sql, in order.
#ifndef VANGUARD_MIGRATIONS_MIGRATIONS_H_
#define VANGUARD_MIGRATIONS_MIGRATIONS_H_

#include <span>

namespace vanguard {

struct Migration {
  const char* version;  // file name without ".sql", e.g. "0001_initial"
  const char* sql;
};

std::span<const Migration> EmbeddedMigrations();

}  // namespace vanguard

#endif  // VANGUARD_MIGRATIONS_MIGRATIONS_H_
