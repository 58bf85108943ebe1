#!/usr/bin/env bash
# Link anomalies in simulation (issue 8): the 1024-node fat tree (p=16), ethernet, one hardware
# draw (fabric seed 1); a baseline pooled from 5 healthy runs (run seeds 1001..1005); then RUNS
# runs each (default 100, run seeds 1..RUNS): healthy, one access link degraded by +30%, one
# switch uplink degraded by +30% (the degraded link changes with the seed: a node, or a leaf or
# pod switch, picked from the fabric by the seed). Thresholds: bench/anomaly-ethernet.yaml.
# The detector never sees the truth; the bench compares its anomalies.yaml with the injection.
# Prints a markdown table; exits 1 when a target is missed (degraded link flagged and ranked
# first in >= 95% of runs; healthy runs clean in >= 99%).
#   bench/anomaly.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${TOPOSCOPE_BUILD:-build}/bin/toposcope
runs=${1:-100}
jobs=${BENCH_JOBS:-2}
work=bench/out/anomaly
policy=bench/anomaly-ethernet.yaml
rm -rf "$work"
mkdir -p "$work/base"
[ -x "$bin" ] || { echo "anomaly.sh: $bin is missing (make)" >&2; exit 1; }

"$bin" gen --fat-tree 16 --seed 7 > "$work/fabric.conf"
sim() { "$bin" sim --fabric "$work/fabric.conf" --profile ethernet --fabric-seed 1 "$@" > /dev/null; }
for s in 1001 1002 1003 1004 1005; do sim --seed $s --out "$work/base/run$s"; done
mapfile -t nodes < <(awk -F'"' '/kind: node/ {print $2}' "$work/base/run1001/truth.yaml" | sort)
mapfile -t switches < <(awk -F'"' '/kind: switch/ && !/parent: null/ {print $2}' "$work/base/run1001/truth.yaml" | sort)

# case seed -> the link degraded in that run (- for healthy)
target() {
    case $1 in
        healthy) echo - ;;
        access) echo "${nodes[$(( ($2 * 7919) % ${#nodes[@]} ))]}" ;;
        uplink) echo "${switches[$(( ($2 * 31) % ${#switches[@]} ))]}" ;;
    esac
}
for c in healthy access uplink; do
    for s in $(seq 1 "$runs"); do
        t=$(target $c $s)
        echo "$c $s $t"
    done
done > "$work/plan"
run_one() {
    local c=$1 s=$2 t=$3
    [ "$t" = - ] && t=
    "$bin" sim --fabric "$work/fabric.conf" --profile ethernet --fabric-seed 1 --seed "$s" \
        --baseline "$work/base" --policy "$policy" ${t:+--inject degrade:$t:+30%} \
        --out "$work/$c-$s" > "$work/$c-$s.log" 2>&1 || { echo "anomaly.sh: $c seed $s failed" >&2; cat "$work/$c-$s.log" >&2; return 1; }
}
export -f run_one
export bin work policy
xargs -P "$jobs" -L 1 bash -c 'run_one "$@"' _ < "$work/plan"

median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) {print "-"; exit} if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
first_link() { awk -F'"' '/^  - \{link:/ {print $2; exit}' "$1"; }
nflags() { grep -c '^  - {link:' "$1" || true; }
# the target's entry: score and excess_pct
target_field() { awk -F'"' -v t="$2" '$2==t' "$1" | grep -o "$3: [-0-9.]*" | awk '{print $2}'; }

echo "| case | runs | degraded link flagged | ranked first | runs flagging another link | median flags per run | target score (median) | target excess_pct (median) |"
echo "|---|--:|--:|--:|--:|--:|--:|--:|"
fail=0
while read -r c; do
    n=0; found=0; first=0; other=0; flags=(); scores=(); pcts=()
    while read -r cc s t; do
        [ "$cc" = "$c" ] || continue
        f="$work/$c-$s/anomalies.yaml"
        n=$((n + 1))
        k=$(nflags "$f"); flags+=("$k")
        if [ "$t" != - ]; then
            if grep -q "^  - {link: \"$t\"" "$f"; then
                found=$((found + 1))
                scores+=("$(target_field "$f" "$t" score)"); pcts+=("$(target_field "$f" "$t" excess_pct)")
            fi
            [ "$(first_link "$f")" = "$t" ] && first=$((first + 1))
            others=$(awk -F'"' -v t="$t" '/^  - \{link:/ && $2 != t' "$f" | wc -l)
        else
            others=$k
        fi
        [ "$others" -gt 0 ] && other=$((other + 1))
    done < "$work/plan"
    fl=$(printf '%s\n' "${flags[@]}" | median)
    if [ "$c" = healthy ]; then
        printf '| %s | %d | - | - | %d | %s | - | - |\n' "$c" "$n" "$other" "$fl"
        [ $(( (n - other) * 100 )) -ge $(( 99 * n )) ] || fail=1
    else
        printf '| %s +30%% | %d | %d | %d | %d | %s | %s | %s |\n' "$c" "$n" "$found" "$first" "$other" "$fl" \
            "$(printf '%s\n' "${scores[@]}" | median)" "$(printf '%s\n' "${pcts[@]}" | median)"
        [ $(( first * 100 )) -ge $(( 95 * n )) ] || fail=1
    fi
done <<< $'healthy\naccess\nuplink'
exit $fail
