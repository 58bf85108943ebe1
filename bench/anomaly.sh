#!/usr/bin/env bash
# Link anomalies in simulation (issue 8): the 1024-node fat tree (p=16), ethernet, one hardware
# draw (fabric seed 1); a baseline pooled from 5 healthy runs (run seeds 1001..1005); then RUNS
# runs each (default 100, run seeds 1..RUNS): healthy, one access link degraded by +30%, one
# switch uplink degraded by +30% (the degraded link changes with the seed: a node, or a leaf or
# pod switch, picked from the fabric by the seed). Thresholds: bench/anomaly-ethernet.yaml.
# The detector never sees the truth; the bench compares its anomalies.yaml with the injection.
# Prints a markdown table; exits 1 when a target is missed (degraded link flagged and ranked
# first in >= 95% of runs; healthy runs clean in >= 99%).
#
# Then the realistic profiles (ethernet-udp, ipoib-udp, rdma; doc/params.md) with the shipped
# DEFAULT thresholds (no --policy): per profile a baseline of 5 healthy runs on the same
# fabric, REAL_RUNS healthy runs (their count of runs flagging anything must be 0), and the
# smallest detectable excess of an access link and of an uplink: the smallest of a ladder of
# +X us degradations (0.01 .. 20 us) flagged and ranked first in >= 95% of LADDER_SEEDS seeds
# (a size stops at its second miss of 20). Its size in % of the link's own latency (truth
# link_us) and of what the detector compares (the baseline estimate; an access link's holds a
# quarter of its host's overhead, doc/params.md).
#   bench/anomaly.sh [RUNS]
#   ANOMALY_REAL_RUNS=N   healthy runs per realistic profile (default 100)
#   ANOMALY_LADDER_SEEDS=N seeds per ladder step (default 20)
#   ANOMALY_PROFILES="ethernet-udp ipoib-udp rdma"
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

# ---- the realistic profiles with the default thresholds ----
real_runs=${ANOMALY_REAL_RUNS:-100}
ladder_seeds=${ANOMALY_LADDER_SEEDS:-20}
ladder="0.01 0.02 0.05 0.1 0.2 0.5 1 2 5 10 20"
need=$(( (95 * ladder_seeds + 99) / 100 ))      # hits wanted per step
real_one() {   # profile seed out [inject]
    "$bin" sim --fabric "$work/fabric.conf" --profile "$1" --fabric-seed 1 --seed "$2" --queries 1000 \
        --baseline "$work/$1/base" ${4:+--inject "$4"} --out "$3" > "$3.log" 2>&1 ||
        { echo "anomaly.sh: $1 seed $2 ${4:-} failed" >&2; cat "$3.log" >&2; return 1; }
}
export -f real_one
# a link's true one-way latency (truth.yaml), and the baseline's estimate of it (anomalies.yaml)
link_us() { awk -F'"' -v t="$2" '$2==t' "$1" | grep -o 'link_us: [-0-9.]*' | awk '{print $2}'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.0f", 100 * a / b; else print "-"}'; }
rrows=()
for prof in ${ANOMALY_PROFILES:-ethernet-udp ipoib-udp rdma}; do
    mkdir -p "$work/$prof/base"
    for s in 1001 1002 1003 1004 1005; do
        "$bin" sim --fabric "$work/fabric.conf" --profile "$prof" --fabric-seed 1 --seed $s --queries 1000 \
            --out "$work/$prof/base/run$s" > /dev/null
    done
    for s in $(seq 1 "$real_runs"); do echo "$prof $s $work/$prof/healthy-$s"; done |
        xargs -P "$jobs" -L 1 bash -c 'real_one "$@"' _
    flagged=0
    for s in $(seq 1 "$real_runs"); do
        [ "$(nflags "$work/$prof/healthy-$s/anomalies.yaml")" -gt 0 ] && flagged=$((flagged + 1))
    done
    [ "$flagged" -eq 0 ] || fail=1
    cells=()
    for kind in access uplink; do
        found=-; hits_at=-; lk=(); est=()
        for x in $ladder; do
            hits=0; miss=0; lk=(); est=()
            for s in $(seq 1 "$ladder_seeds"); do
                t=$(target "$kind" "$s")
                o="$work/$prof/$kind-$x-$s"
                real_one "$prof" "$s" "$o" "degrade:$t:+${x}us"
                if [ "$(first_link "$o/anomalies.yaml")" = "$t" ]; then
                    hits=$((hits + 1))
                    est+=("$(target_field "$o/anomalies.yaml" "$t" expected_us)")
                else
                    miss=$((miss + 1))
                fi
                lk+=("$(link_us "$work/$prof/base/run1001/truth.yaml" "$t")")
                [ "$miss" -gt $((ladder_seeds - need)) ] && break
            done
            if [ "$hits" -ge "$need" ]; then found=$x; hits_at="$hits/$ladder_seeds"; break; fi
        done
        if [ "$found" = - ]; then
            cells+=("> 20" "-" "-" "-")
            fail=1
        else
            cells+=("$found" "$(pct "$found" "$(printf '%s\n' "${lk[@]}" | median)")" \
                    "$(pct "$found" "$(printf '%s\n' "${est[@]}" | median)")" "$hits_at")
        fi
    done
    rrows+=("$(printf '| %s | %d/%d | %s | %s%% | %s%% | %s | %s | %s%% | %s%% | %s |' "$prof" "$flagged" "$real_runs" "${cells[@]}")")
done
echo
echo "Realistic profiles with the shipped default thresholds (0%, 0 us: 5 standard deviations of the"
echo "baseline's own spread decide), same fabric, a baseline of 5 healthy runs each. Smallest excess: the"
echo "smallest +X us of the ladder $(echo $ladder | tr ' ' ',') flagged and ranked first in >= 95% of"
echo "$ladder_seeds seeds (hits at that size), as % of the link's own one-way latency and of the baseline"
echo "estimate the detector compares (an access link's holds a quarter of its host's overhead)."
echo
echo "| profile | healthy runs flagged | access: smallest excess (us) | % of link | % of estimate | hits | uplink: smallest excess (us) | % of link | % of estimate | hits |"
echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
for r in "${rrows[@]}"; do echo "$r"; done
exit $fail
