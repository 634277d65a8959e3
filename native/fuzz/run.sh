#!/usr/bin/env bash
# npm run fuzz [-- SECONDS]: builds the libFuzzer targets of native/fuzz/ with clang under
# AddressSanitizer + UndefinedBehaviorSanitizer into build-fuzz/, writes their seed corpora from the
# spec vectors (seeds.js) and runs each target for SECONDS (default 20). One line per target; exit 1
# if any target crashed, tripped a sanitizer or failed an invariant (its input is kept in
# build-fuzz/artifacts/, replay it with `build-fuzz/<target> <file>`).
set -uo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-20}"
out=build-fuzz
CXX="${CXX:-clang++}"
command -v "$CXX" >/dev/null || { echo "fuzz: $CXX not found (apt-get install clang libclang-rt-14-dev)"; exit 1; }
xxhash_dir=$(node -p "require('path').join(require('path').dirname(require.resolve('xxhash-addon/package.json')), 'xxHash')")
common=(-std=c++17 -O1 -g -fno-omit-frame-pointer -fno-sanitize-recover=undefined -Inative -Inative/fuzz -I"$xxhash_dir")
# The pure C++ core the targets exercise (no N-API).
core=(core/cbi1 core/ckf ingest/engine_decode ingest/router_event_decode pool/packed_batch pool/pool_canonical pool/pool_filter_state pool/pool_plan)
targets=(cbi1 pool_batch engine_decode bucket_map router_event_decode)

mkdir -p "$out/obj" "$out/artifacts"
objs=()
for unit in "${core[@]}"; do
  obj="$out/obj/${unit//\//_}.o"
  if [ ! -f "$obj" ] || [ "native/$unit.cc" -nt "$obj" ] || [ -n "$(find native -name '*.h' -newer "$obj" -print -quit)" ]; then
    "$CXX" "${common[@]}" -fsanitize=fuzzer-no-link,address,undefined -c "native/$unit.cc" -o "$obj" || { echo "fuzz: compiling $unit failed"; exit 1; }
  fi
  objs+=("$obj")
done
for t in "${targets[@]}"; do
  "$CXX" "${common[@]}" -fsanitize=fuzzer,address,undefined "native/fuzz/${t}_fuzz.cc" "${objs[@]}" -o "$out/$t" ||
    { echo "fuzz: building $t failed"; exit 1; }
done

rm -rf "$out/seeds"
node native/fuzz/seeds.js "$out/seeds" || { echo "fuzz: writing the seed corpus failed"; exit 1; }

failed=0
for t in "${targets[@]}"; do
  mkdir -p "$out/corpus/$t"
  log="$out/$t.log"
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$out/$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -artifact_prefix="$out/artifacts/$t-" \
    "$out/corpus/$t" "$out/seeds/$t" >"$log" 2>&1
  status=$?
  runs=$(grep -oE 'Done [0-9]+ runs' "$log" | grep -oE '[0-9]+' || echo 0)
  if [ "$status" -eq 0 ]; then
    echo "fuzz $t: ok, $runs runs in ${seconds}s, corpus $(ls "$out/corpus/$t" | wc -l) inputs"
  else
    failed=1
    echo "fuzz $t: FAILED (exit $status) — $log, input in $out/artifacts/"
    grep -E 'ERROR: |runtime error|FUZZ_CHECK|SUMMARY|deadly signal' "$log" | head -5
  fi
done
exit "$failed"
