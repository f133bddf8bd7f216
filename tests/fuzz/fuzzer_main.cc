// libFuzzer's entry point for one harness, chosen at build time: tests/fuzz/CMakeLists.txt
// compiles this file once per harness with VANGUARD_FUZZ_HARNESS="<name>".
#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/fuzz_harnesses.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const vanguard::fuzz::FuzzHarness* const harness = [] {
    const vanguard::fuzz::FuzzHarness* h = vanguard::fuzz::FindFuzzHarness(VANGUARD_FUZZ_HARNESS);
    if (h == nullptr) {
      std::fprintf(stderr, "no fuzz harness named %s\n", VANGUARD_FUZZ_HARNESS);
      std::abort();
    }
    return h;
  }();
  return harness->run(data, size);
}
