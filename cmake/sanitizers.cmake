# Sanitizer builds, one switch for every target:
#
#   cmake -DVANGUARD_SANITIZE=address,undefined ...                    # build-asan (g++)
#   cmake -DVANGUARD_SANITIZE=thread ...                               # build-tsan (g++)
#   cmake -DCMAKE_CXX_COMPILER=clang++-14 -DVANGUARD_FUZZ=ON ...       # build-fuzz (clang)
#
# deploy/local/test runs the first two (--only=asan|tsan runs one); tests/fuzz/run the third.
# Every target is compiled with -O1 (fast enough to run the tests, still readable stacks;
# a test's own file at -O0, cmake/vanguard.cmake says why),
# line tables only (-g1: symbolized reports without full debug info), frame pointers
# (cheap, complete stacks), assertions on, and -fno-sanitize-recover=all: the first
# report aborts the process, so a test that hits UB or a race fails instead of printing.
# The sanitizer stages use g++ 12, the compiler of the Release build: everything we have
# compiles with it (clang 14 rejects some of our code: a lambda capturing a structured
# binding, absl::StrFormat with a format chosen at run time), and its ASan, UBSan and TSan
# runtimes come with build-essential. The fuzzers need clang's libFuzzer. The Debian gRPC,
# protobuf and Abseil libraries are not instrumented; tests/sanitizers/README.md says what
# that means for each sanitizer.
set(VANGUARD_SANITIZE "" CACHE STRING
    "Sanitizers for every target: address,undefined or thread (g++ or clang; empty: none)")
option(VANGUARD_FUZZ "Build the libFuzzer targets in tests/fuzz (clang only)" OFF)

if(VANGUARD_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "VANGUARD_FUZZ needs clang (e.g. -DCMAKE_CXX_COMPILER=clang++-14)")
  endif()
  # The fuzzers are ASan + UBSan builds plus libFuzzer's coverage instrumentation.
  if(VANGUARD_SANITIZE AND NOT VANGUARD_SANITIZE STREQUAL "address,undefined")
    message(FATAL_ERROR "VANGUARD_FUZZ implies VANGUARD_SANITIZE=address,undefined")
  endif()
  set(VANGUARD_SANITIZE address,undefined)
  add_compile_options(-fsanitize=fuzzer-no-link)
  set(VANGUARD_SANITIZE_DEBUG_INFO -g)  # full debug info to step through a reproducer
else()
  set(VANGUARD_SANITIZE_DEBUG_INFO -g1)
endif()

if(VANGUARD_SANITIZE)
  if(NOT VANGUARD_SANITIZE MATCHES "^(address,undefined|undefined,address|address|undefined|thread)$")
    message(FATAL_ERROR "VANGUARD_SANITIZE=${VANGUARD_SANITIZE}: use address,undefined or thread")
  endif()
  add_compile_options(-fsanitize=${VANGUARD_SANITIZE} -fno-sanitize-recover=all
                      -fno-omit-frame-pointer -O1 ${VANGUARD_SANITIZE_DEBUG_INFO} -UNDEBUG)
  add_link_options(-fsanitize=${VANGUARD_SANITIZE})
endif()

# Debian's Abseil is not built with TSan, so absl::Mutex (ours and gRPC's) is invisible to
# it; tests/sanitizers/tsan_absl_shim.cc tells TSan about every lock and unlock. Its objects
# go into every executable made by vanguard_cc_binary/vanguard_cc_test, exported (-rdynamic)
# so that the calls from inside libabsl and libgrpc reach them too.
if(VANGUARD_SANITIZE STREQUAL "thread")
  add_library(vanguard_tsan_absl_shim OBJECT ${PROJECT_SOURCE_DIR}/tests/sanitizers/tsan_absl_shim.cc)
  target_link_libraries(vanguard_tsan_absl_shim PUBLIC absl::synchronization absl::time)
  add_link_options(-rdynamic)
  set(VANGUARD_SANITIZER_LIBS vanguard_tsan_absl_shim)
else()
  set(VANGUARD_SANITIZER_LIBS "")
endif()
