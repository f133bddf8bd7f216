#!/usr/bin/env bash
# libFuzzer targets for what a submitter controls (tests/fuzz/run), 60 s each by default
#
# Builds build-fuzz with clang (-DVANGUARD_FUZZ=ON: libFuzzer, ASan, UBSan) and runs every
# harness in tests/fuzz for FUZZ_SECONDS (60) seconds; arguments go to tests/fuzz/run
# (--seconds N, harness names; tests/fuzz/run --help). Ends with:
#   fuzz: targets=.. execs=.. crashes=..
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../fuzz/run" --seconds "${FUZZ_SECONDS:-60}" "$@"
