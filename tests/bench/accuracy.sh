#!/usr/bin/env bash
# capacity estimates on models nobody tuned for: held-out virtual, real time, ablations (~1.5 h)
#
# The accuracy benchmark of issue 19, in one run, every figure on models drawn fresh from a
# seed printed in the output (taken from the clock unless ACCURACY_SEED is given):
#  1. tests/bench/heldout.sh: HELDOUT_MODELS (300) generated models in virtual time, the
#     adaptive search, binary search with the same range, the ablations, repeat_cv_pct, and
#     the five named profiles with a new user's wide range (profiles_wide_mae_pct).
#  2. tests/bench/heldout_realtime.sh: REALTIME_MODELS (8) generated models through the real
#     binaries on loopback (`vanguard submit --strategy=adaptive ... --wait`).
# ACCURACY_PARTS ("heldout realtime") picks the parts. The five named profiles through the
# real TestRunner with every strategy are tests/bench/profiles.sh.
# Final line: the parts' final lines joined (heldout_*, binary_mae_pct, ablation_*,
# heldout_time_vs_binary, repeat_cv_pct, profiles_wide_mae_pct, realtime_*), gen_seed, wall_s.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
seed=${ACCURACY_SEED:-$(( $(date +%s) % 1000000000 ))}
parts=${ACCURACY_PARTS:-heldout realtime}
start=$(date +%s)
line=""
for part in $parts; do
  case $part in
    heldout) out=$(HELDOUT_SEED=$seed bash "$here/heldout.sh" | tee /dev/stderr | tail -1) ;;
    realtime) out=$(REALTIME_SEED=$seed bash "$here/heldout_realtime.sh" | tee /dev/stderr | tail -1) ;;
    *) echo "unknown part $part (heldout, realtime)" >&2; exit 2 ;;
  esac
  # Each part ends with gen_seed=… models=… wall_s=…: keep its figures, not those.
  line="$line $(sed 's/ *\(gen_seed\|models\|wall_s\)=[^ ]*//g' <<<"$out")"
done
echo "${line# } gen_seed=$seed wall_s=$(( $(date +%s) - start ))"
