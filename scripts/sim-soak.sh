#!/usr/bin/env bash
# Runs the deterministic simulation (tests/sim) on fresh seeds until stopped (Ctrl-C): batches
# of seeds, each batch's seeds per second, and every failing seed (replay it with
# ZOOID_SIM_FIRST_SEED=<seed> ZOOID_SIM_SEEDS=1 cargo test --release --test sim).
# ZOOID_SIM_FIRST_SEED (default: from the clock) and ZOOID_SIM_BATCH (default 200) apply.
set -uo pipefail
cd "$(dirname "$0")/.."
cargo test --release --test sim --no-run >/dev/null 2>&1 || { echo "sim-soak: build failed" >&2; exit 2; }
seed=${ZOOID_SIM_FIRST_SEED:-$(( $(date +%s) * 1000 ))}
batch=${ZOOID_SIM_BATCH:-200}
total=0
failed=0
start=$(date +%s.%N)
while true; do
  t0=$(date +%s.%N)
  out=$(ZOOID_SIM_FIRST_SEED=$seed ZOOID_SIM_SEEDS=$batch ZOOID_SIM_NO_REPLAY_CHECK=1 \
        cargo test --release --test sim 2>/dev/null)
  rc=$?
  t1=$(date +%s.%N)
  total=$(( total + batch ))
  echo "$out" | grep -E '^sim: seed [0-9]+ .*FAILED' | sed 's/^/sim-soak: /'
  if [ $rc -ne 0 ]; then failed=$(( failed + 1 )); fi
  rate=$(echo "$batch / ($t1 - $t0)" | bc -l)
  overall=$(echo "$total / ($t1 - $start)" | bc -l)
  printf 'sim-soak: seeds %d..%d: %.1f seeds/s (overall %.1f, %d seeds, %d failing batches)\n' \
    "$seed" "$(( seed + batch - 1 ))" "$rate" "$overall" "$total" "$failed"
  seed=$(( seed + batch ))
done
