#!/usr/bin/env bash
# Instructions (and with --cache-sim, D1 misses) per op of apply + drain, for one driver binary:
#   bash bench/native/cg.sh build-driver/pool_driver raw|engine [--cache-sim]
# Prints Ir/op (and D1mr+D1mw per op). The raw/engine op counts are the driver's defaults
# (2 015 232 raw ops, 1 015 808 engine block ops); --cache-sim runs half as many ops.
set -euo pipefail
bin="$1"; mode="$2"; sim="${3:-}"
out=$(mktemp -d)
ops=""
extra=()
if [ "$sim" = "--cache-sim" ]; then
  extra=(--cache-sim=yes)
  ops=$([ "$mode" = raw ] && echo 1000000 || echo 500000)
fi
log=$(valgrind --tool=callgrind --collect-atstart=no "${extra[@]}" --callgrind-out-file="$out/cg.out" "$bin" "$mode" $ops 2>&1)
counted=$(echo "$log" | grep -oE '[0-9]+ ops counted' | grep -oE '^[0-9]+')
summary=$(grep -E '^(summary|totals):' "$out/cg.out" | head -1)
events=$(grep -E '^events:' "$out/cg.out" | head -1)
python3 - "$counted" "$events" "$summary" <<'PY'
import sys
ops = int(sys.argv[1]); names = sys.argv[2].split()[1:]; vals = [int(v) for v in sys.argv[3].split()[1:]]
vals += [0] * (len(names) - len(vals))  # callgrind drops trailing zero counts
d = dict(zip(names, vals))
line = f"ops {ops}  Ir {d['Ir']}  Ir/op {d['Ir']/ops:.1f}"
if 'D1mr' in d: line += f"  D1 misses/op {(d['D1mr']+d['D1mw'])/ops:.2f} (D1mr {d['D1mr']/ops:.2f}, D1mw {d['D1mw']/ops:.2f})"
print(line)
PY
echo "callgrind output: $out/cg.out"
