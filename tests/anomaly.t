#!/usr/bin/env bash
# toposcope sim --baseline: a baseline from earlier runs, anomalies.yaml most severe first. On the
# 128-node fat tree (p=8, ethernet, one hardware draw): a node's access link and a switch uplink,
# each slowed by +30%, are flagged and ranked first over several seeds; healthy runs flag
# nothing; a broken baseline is refused naming FILE:LINE. The 1024-node, 100-seed version of this
# is bench/anomaly.sh.
set -u
cd "$(dirname "$0")/.."
bin=${TOPOSCOPE_BUILD:-build}/bin/toposcope
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/tap.sh
policy=bench/anomaly-ethernet.yaml
first_link() { awk -F'"' '/^  - \{link:/ {print $2; exit}' "$1"; }
nflags() { grep -c '^  - {link:' "$1"; }

"$bin" gen --fat-tree 8 --seed 3 > "$tmp/ft8.conf"
sim() { "$bin" sim --fabric "$tmp/ft8.conf" --profile ideal-ethernet --fabric-seed 2 "$@" > "$tmp/log" 2>&1 || cat "$tmp/log"; }
for s in 101 102 103 104 105; do sim --seed $s --out "$tmp/base/run$s"; done
[ -f "$tmp/base/run105/links.yaml" ]; ok $? "five baseline runs"

# node and switch names from the truth of a run (the test knows what it injected, the
# detector does not)
node=$(awk -F'"' '/kind: node/ {print $2}' "$tmp/base/run101/truth.yaml" | sort | sed -n 17p)
leaf=$(awk -F'"' '/kind: switch/ && /leaf/ {print $2}' "$tmp/base/run101/truth.yaml" | sort | sed -n 5p)
pod=$(awk -F'"' '/kind: switch/ && /pod/ {print $2}' "$tmp/base/run101/truth.yaml" | sort | sed -n 3p)

# A +30% uplink on this small tree is measured by ~10 pairs, so a run misses it now and then
# (leaf01-3: 24 of 30 seeds on the code before, 15 of 20 here); the check is a rate over 20
# seeds, not luck on 5. The 95% target is held by bench/anomaly.sh on 1024 nodes.
for link in "$node" "$leaf" "$pod"; do
    hits=0
    for s in $(seq 1 20); do
        sim --seed $s --baseline "$tmp/base" --policy $policy --inject "degrade:$link:+30%" --out "$tmp/d-$link-$s"
        [ "$(first_link "$tmp/d-$link-$s/anomalies.yaml")" = "$link" ] && hits=$((hits+1))
    done
    [ $hits -ge 14 ]; ok $? "$link +30%: flagged and ranked first in $hits of 20 seeds (>= 14)"
done
grep -q "expected_us: .*observed_us: .*excess_pct: .*score:" "$tmp/d-$node-1/anomalies.yaml"
ok $? "an anomaly says expected_us, observed_us, excess_pct, score"

clean=0
for s in 1 2 3 4 5 6 7 8; do
    sim --seed $s --baseline "$tmp/base" --policy $policy --out "$tmp/h-$s"
    [ "$(nflags "$tmp/h-$s/anomalies.yaml")" -eq 0 ] && clean=$((clean+1))
done
[ $clean -eq 8 ]; ok $? "healthy runs flag nothing ($clean of 8 clean)"
grep -q "^anomaly_links_checked: [1-9]" "$tmp/h-1/metrics.yaml"; ok $? "metrics.yaml counts the links compared"

# the default policy has no floor (0%, 0 us): significance against the baseline's own spread
# alone flags a +30% access-link change on ethernet (~0.75 us), and nothing in a healthy run
sim --seed 1 --baseline "$tmp/base" --inject "degrade:$node:+30%" --out "$tmp/default"
[ "$(first_link "$tmp/default/anomalies.yaml")" = "$node" ]; ok $? "the default thresholds (0%, 0 us) flag +0.75 us, first"
sim --seed 2 --baseline "$tmp/base" --out "$tmp/default-healthy"
[ "$(nflags "$tmp/default-healthy/anomalies.yaml")" -eq 0 ]; ok $? "and flag nothing in a healthy run"

# a dead node is an anomaly of its access link, above any slow link
sim --seed 1 --baseline "$tmp/base" --policy $policy --inject "dead:$node" --out "$tmp/dead"
grep -q "link: \"$node\", kind: access, reason: unreachable" "$tmp/dead/anomalies.yaml"; ok $? "a dead node is reported unreachable"

# 20% loss on a link: its pairs answer far less often than the job's other links' pairs. A
# rate over 20 seeds, not one seed's luck: a run now and then measures too few of the link's
# pairs for the loss to be significant (28 and 29 of 30 seeds, the code before and after 8
# rounds a batch; one seed, 3, was the whole test and fell on the miss).
for link in "$node" "$leaf"; do
    hits=0
    for s in $(seq 1 20); do
        sim --seed $s --baseline "$tmp/base" --policy $policy --inject "loss:$link:20%" --out "$tmp/loss-$link"
        # nodes the loss kept out of discovery altogether are reported unreachable, above it
        grep '^  - {link:' "$tmp/loss-$link/anomalies.yaml" | grep -v 'reason: unreachable' | head -1 |
          grep -q "link: \"$link\", .*reason: loss, .*loss_pct: [0-9]" && hits=$((hits+1))
    done
    [ $hits -ge 16 ]; ok $? "$link with 20% loss: the first link reported, reason loss, in $hits of 20 seeds (>= 16)"
done

# A run whose tree has switches left unresolved marks them in tree.yaml, and the links at them,
# which may span hidden switches, are not held against the baseline. UDP over IPoIB on 16 pods
# of 4 leaves of 2 nodes (a child of 2 is below what discovery tells from chance: each pod
# stands as a star, and the additive method's check of that flat tree grouped some pods and
# left others out, so how the pods group under the top switch is in doubt: that switch alone is
# unresolved, the links of the pods' nodes compared, not the pods' uplinks; on the fat tree
# above, whose leaves of 4 the partition look resolves now, it left most pods' leaves
# unresolved before):
# this run's IPoIB latencies are far from the baseline's, yet no link at an unresolved switch is
# flagged; the links of the resolved part are compared and, the profiles differing, flagged.
"$bin" gen --regular 16,4,2 --seed 3 > "$tmp/pairs.conf"
for s in 101 102 103; do
    sim --fabric "$tmp/pairs.conf" --seed $s --out "$tmp/base-pairs/run$s"
done
sim --fabric "$tmp/pairs.conf" --profile ipoib-udp --seed 3 --baseline "$tmp/base-pairs" \
    --out "$tmp/unresolved"
marked=$(awk -F'"' '/unresolved: true/ {printf "%s\"%s\"", n++ ? ", " : "", $2}' "$tmp/unresolved/tree.yaml")
[ -n "$marked" ] && grep -qxF "ambiguous_switches: [$marked]" "$tmp/unresolved/metrics.yaml"
ok $? "unresolved switches marked in tree.yaml: [$marked], as metrics.yaml lists them"
checked=$(sed -n 's/^anomaly_links_checked: //p' "$tmp/unresolved/metrics.yaml")
links=$(grep -c '^  - {link:' "$tmp/unresolved/links.yaml")
# a link at an unresolved switch: its own vertex or its parent marked
at_unresolved=$(awk -F'"' 'FNR == NR { if (/unresolved: true/) u[$2] = 1; if (/parent: "/) up[$2] = $4; next }
    /^  - \{link:/ && (u[$2] || u[up[$2]]) { print $2 }' "$tmp/unresolved/tree.yaml" "$tmp/unresolved/anomalies.yaml")
[ "${checked:-0}" -gt 0 ] && [ "$checked" -lt "$links" ] && [ -z "$at_unresolved" ]
ok $? "the links at them are not compared: $checked of $links compared, $(nflags "$tmp/unresolved/anomalies.yaml") flags, none at an unresolved switch${at_unresolved:+ (flagged: $at_unresolved)}"

# a baseline file (as toposcope report --update-baseline writes) and its errors
printf 'toposcope_baseline: 1\nlinks:\n  - {link: "%s", kind: access, median_us: 1.0, mad_us: 0.01, se_us: 0.01, count: 5}\n' "$node" > "$tmp/b.yaml"
sim --seed 1 --baseline "$tmp/b.yaml" --policy $policy --out "$tmp/file"
[ "$(first_link "$tmp/file/anomalies.yaml")" = "$node" ]; ok $? "a baseline file is read (a link far above a 1 us baseline is flagged)"
printf 'toposcope_baseline: 1\nlinks:\n  - {link: "a", kind: access, median_us: 1.0, mad_us: 0.01, se_us: 0.01, count: 5}\n  - {link: "a", kind: access, median_us: 1.0, mad_us: 0.01, se_us: 0.01, count: 5}\n' > "$tmp/dup.yaml"
"$bin" sim --fabric "$tmp/ft8.conf" --baseline "$tmp/dup.yaml" --out "$tmp/x" 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "dup.yaml:4:.*listed twice" "$tmp/err"; ok $? "a duplicate link is refused with FILE:LINE (exit $rc: $(cat "$tmp/err"))"
printf 'links: []\n' > "$tmp/nover.yaml"
"$bin" sim --fabric "$tmp/ft8.conf" --baseline "$tmp/nover.yaml" --out "$tmp/x" 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "toposcope_baseline" "$tmp/err"; ok $? "a file without the version is refused (exit $rc)"
mkdir -p "$tmp/empty"
"$bin" sim --fabric "$tmp/ft8.conf" --baseline "$tmp/empty" --out "$tmp/x" 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "no earlier run" "$tmp/err"; ok $? "a directory without runs is refused (exit $rc)"

tap_end
