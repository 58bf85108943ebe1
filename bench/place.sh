#!/usr/bin/env bash
# Placement at scale: `toposcope place` on a 1024-node fat tree (p=16) of 64-core nodes
# (tests/data/hwloc/64core.xml: 2 packages x 2 NUMA x 2 L3 x 8 cores), 65 536 ranks, each policy,
# RUNS runs each (default 7), wall time of the whole command (reading the tree and XML, placing,
# groups, LogP, writing every file; tree.svg left out: dot does not lay out 1169 vertices in
# that time). Prints a markdown table; exits 1 if a median exceeds LIMIT_MS (default 200).
#   bench/place.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${TOPOSCOPE_BUILD:-build}/bin/toposcope
runs=${1:-7}
limit=${LIMIT_MS:-200}
work=bench/out/place
mkdir -p "$work"
[ -x "$bin" ] || { echo "place.sh: $bin is missing (make)" >&2; exit 1; }

"$bin" gen --fat-tree 16 --seed 1 > "$work/fabric.conf"
# pmm copies the true tree, so tree.yaml is the exact 1024-node tree with link latencies
"$bin" sim --fabric "$work/fabric.conf" --profile ideal-ethernet --method pmm --no-links --out "$work/sim" > /dev/null
xml=tests/data/hwloc/64core.xml

echo "| policy | ranks | nodes | median ms | min ms | max ms | runs |"
echo "|---|---|---|---|---|---|---|"
over=0
for policy in compact spread block measure-only; do
    times=()
    for ((i = 0; i < runs; i++)); do
        t0=$(date +%s%N)
        "$bin" place --tree "$work/sim/tree.yaml" --hwloc-xml $xml --policy $policy \
            $([ $policy = measure-only ] || echo --ranks 65536) --no-svg --out "$work/$policy" > /dev/null 2>&1
        t1=$(date +%s%N)
        times+=($(( (t1 - t0) / 1000 )))
    done
    read -r med lo hi < <(printf '%s\n' "${times[@]}" | sort -n |
        awk '{ v[NR] = $1 } END { printf "%.1f %.1f %.1f\n", v[int((NR + 1) / 2)] / 1000, v[1] / 1000, v[NR] / 1000 }')
    ranks=$([ $policy = measure-only ] && echo 0 || wc -l < "$work/$policy/rankfile")
    echo "| $policy | $ranks | 1024 | $med | $lo | $hi | $runs |"
    awk -v m="$med" -v l="$limit" 'BEGIN { exit !(m > l) }' && over=1
done
echo
echo "limit: median <= $limit ms per run on $(nproc) CPUs ($(uname -m))"

# A rank's hints lookup (lib/place/hints_read.c ts_hints_lookup, what the MPI helper calls for every
# level): the last rank of the spread file, first lookup and 1000 more in the same process.
cc -std=c11 -D_GNU_SOURCE -O2 -Ilib -o "$work/hints_lookup" bench/hints_lookup.c \
    "${TOPOSCOPE_BUILD:-build}/lib/libtoposcope.a" -lyaml -lhwloc -lm
node=$(tail -1 "$work/spread/hostfile")
read -r _ first _ again _ reads < <("$work/hints_lookup" "$work/spread/hints.yaml" 65535 "$node" 1000)
echo
echo "hints lookup of rank 65535 ($(du -h "$work/spread/hints.yaml" | cut -f1) hints.yaml): first $first ms," \
     "then $again us per lookup over 1000 more; the file was read $reads time(s)"
exit $over
