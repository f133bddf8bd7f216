// The harness table lookup and the abort on a broken contract. See fuzz_harnesses.h.
#include "tests/fuzz/fuzz_harnesses.h"

#include <cstdio>
#include <cstdlib>

namespace vanguard::fuzz {

const FuzzHarness* FindFuzzHarness(std::string_view name) {
  for (const FuzzHarness& h : kFuzzHarnesses) {
    if (h.name == name) return &h;
  }
  return nullptr;
}

void FuzzContractBroken(const char* harness, const char* check, int line) {
  std::fprintf(stderr, "fuzz harness %s: contract broken (line %d): %s\n", harness, line, check);
  std::abort();
}

}  // namespace vanguard::fuzz
