#!/usr/bin/env bash
# toposcope sim and gen end to end: outputs, accuracy of the baselines on a 128-node 3-level
# tree under the ethernet profile, the budget, and clear errors for bad input.
set -u
cd "$(dirname "$0")/.."
bin=${TOPOSCOPE_BUILD:-build}/bin/toposcope
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/tap.sh
field() { awk -v k="$1:" '$1==k {print $2}' "$2"; }

"$bin" --help > "$tmp/help" 2>&1; ok $? "toposcope --help"
grep -q "sim" "$tmp/help"; ok $? "--help lists the sim command"
"$bin" sim --help > "$tmp/simhelp" 2>&1; ok $? "toposcope sim --help"
for opt in --fabric --params --profile --seed --fabric-seed --plan-seed --budget-ms --method --inject --out \
           --level-step-ns; do
    grep -q -- "$opt" "$tmp/simhelp"; ok $? "sim --help documents $opt"
done

"$bin" gen --fat-tree 8 --seed 3 > "$tmp/ft8.conf"; ok $? "gen writes a 128-node fat tree"
nodes=$(grep -o 'Nodes=[^ ]*' "$tmp/ft8.conf" | wc -l)
[ "$nodes" -eq 32 ]; ok $? "32 leaf switches in the generated fabric ($nodes)"

# The Done-when bar of issue A: both baselines recover the exact tree, several seeds.
for method in allpairs shirai; do
    exact=0
    for seed in 1 2 3 4 5; do
        "$bin" sim --fabric "$tmp/ft8.conf" --profile ideal-ethernet --method $method --seed $seed --fabric-seed $seed \
            --out "$tmp/$method-$seed" > "$tmp/log" 2>&1 || cat "$tmp/log"
        [ "$(field tree_exact "$tmp/$method-$seed/metrics.yaml")" = true ] && exact=$((exact+1))
    done
    [ $exact -eq 5 ]; ok $? "$method recovers the exact 128-node tree (ethernet) in $exact of 5 seeds"
done

out="$tmp/allpairs-1"
for f in topology.conf tree.yaml truth.yaml metrics.yaml; do
    [ -s "$out/$f" ]; ok $? "sim writes $f"
done
for k in nodes probes samples rounds sim_time_s cpu_time_s peak_rss_mb leaf_groups_exact tree_exact \
         leaf_ari shared_link_fp shared_link_fn budget_exceeded partial; do
    [ -n "$(field $k "$out/metrics.yaml")" ]; ok $? "metrics.yaml has $k"
done
[ "$(field probes "$out/metrics.yaml")" -eq 8128 ]; ok $? "allpairs measures all 128*127/2 pairs"
[ "$(field rounds "$out/metrics.yaml")" -eq 127 ]; ok $? "in Bufe's T(n) = ceil(n/2) + T(ceil(n/2)) = 127 rounds"
# the inferred topology.conf is valid input again, and describes the same tree
"$bin" sim --fabric "$out/topology.conf" --profile ideal-ethernet --method allpairs --out "$tmp/again" > "$tmp/log" 2>&1
ok $? "the inferred topology.conf parses as a fabric"

# --plan-seed varies fast's planning (robustness checks over plans, bench/run.sh); 0 is the
# plan a real job of that size makes. Same noise and hardware, three plans: all exact, the
# default reproduced, and the plans differ (the probe counts are not all the same).
for ps in default 0 4 9; do
    "$bin" sim --fabric "$tmp/ft8.conf" --profile ideal-ethernet --seed 2 --fabric-seed 2 --no-links \
        $([ $ps = default ] || echo --plan-seed $ps) --out "$tmp/plan-$ps" > "$tmp/log" 2>&1 || cat "$tmp/log"
done
[ "$(field probes "$tmp/plan-default/metrics.yaml")" = "$(field probes "$tmp/plan-0/metrics.yaml")" ] &&
    [ "$(field plan_seed "$tmp/plan-9/metrics.yaml")" = 9 ]
ok $? "--plan-seed 0 is the default plan, and metrics.yaml records the plan seed"
[ "$(cat "$tmp"/plan-{0,4,9}/metrics.yaml | awk '$1 == "tree_exact:" && $2 == "true"' | wc -l)" = 3 ] &&
    [ "$(cat "$tmp"/plan-{0,4,9}/metrics.yaml | awk '$1 == "probes:" { print $2 }' | sort -u | wc -l)" -gt 1 ]
ok $? "fast, plan seeds 0, 4, 9: exact each time, with different plans (probes $(cat "$tmp"/plan-{0,4,9}/metrics.yaml | awk '$1 == "probes:" { printf "%s ", $2 }'))"

# A site's least level step (toposcope.yaml level_step_ns): 16 nodes on one switch under UDP over
# IPoIB, seeds 2-4, are partial with the built-in 400 ns (at 48 samples per pair no level under
# ~2.7 us could be excluded) and measured, still exact, once the site says its levels add at least
# 3200 ns; metrics.yaml records the setting. Out of range: a clear error.
"$bin" gen --regular 16 > "$tmp/flat16.conf"
flat_ok=0
for seed in 2 3 4; do
    for site in built-in 3200; do
        "$bin" sim --fabric "$tmp/flat16.conf" --profile ipoib-udp --seed $seed --fabric-seed $seed --no-links \
            $([ $site = built-in ] || echo --level-step-ns $site) --out "$tmp/flat-$site" > "$tmp/log" 2>&1 || cat "$tmp/log"
    done
    [ "$(field status "$tmp/flat-built-in/metrics.yaml")" = partial ] &&
        [ "$(field status "$tmp/flat-3200/metrics.yaml")" = measured ] &&
        [ "$(field tree_exact "$tmp/flat-3200/metrics.yaml")" = true ] &&
        [ "$(field level_step_ns "$tmp/flat-3200/metrics.yaml")" = 3200 ] &&
        [ -z "$(field level_step_ns "$tmp/flat-built-in/metrics.yaml")" ] && flat_ok=$((flat_ok+1))
done
[ $flat_ok = 3 ]; ok $? "one switch, ipoib-udp: partial with the built-in least step, measured and exact with --level-step-ns 3200 ($flat_ok of 3 seeds)"
"$bin" sim --fabric "$tmp/flat16.conf" --level-step-ns 20 --out "$tmp/bad" > "$tmp/log" 2>&1
[ $? = 2 ] && grep -q "level-step-ns wants nanoseconds, 50 to 10000000, not '20'" "$tmp/log"
ok $? "--level-step-ns 20 refused: $(cat "$tmp/log")"

# A budget is never overrun: the result is flagged partial instead.
"$bin" sim --fabric "$tmp/ft8.conf" --profile ideal-ethernet --method allpairs --budget-ms 5 --out "$tmp/budget" > "$tmp/log" 2>&1
ok $? "a 5 ms budget still produces a result"
[ "$(field partial "$tmp/budget/metrics.yaml")" = true ]; ok $? "flagged partial"
[ "$(field budget_exceeded "$tmp/budget/metrics.yaml")" = false ]; ok $? "budget not exceeded"
awk '$1=="sim_time_s:" {exit !($2 <= 0.005)}' "$tmp/budget/metrics.yaml"; ok $? "virtual time within 5 ms"

# A job's allocation (--nodes): only those nodes and the switches above them are simulated.
job=$(awk -F'"' '/kind: node/ && ++n % 16 == 1 {print $2}' "$tmp/allpairs-1/truth.yaml" | head -6 | paste -sd, -)
"$bin" sim --fabric "$tmp/ft8.conf" --nodes "$job" --profile rdma --no-links --out "$tmp/job" > "$tmp/log" 2>&1
[ $? = 0 ] && [ "$(field nodes "$tmp/job/metrics.yaml")" = 6 ] &&
    [ "$(grep -c 'kind: node' "$tmp/job/truth.yaml")" = 6 ]
ok $? "--nodes $job: 6 nodes simulated, the truth their fabric alone"
"$bin" sim --fabric "$tmp/ft8.conf" --nodes "${job%%,*},nosuch" --out "$tmp/x" > "$tmp/err" 2>&1
[ $? = 2 ] && grep -q "nodes: nosuch is no node of $tmp/ft8.conf" "$tmp/err"
ok $? "--nodes naming no node of the fabric exits with status 2, naming it ($(cat "$tmp/err"))"
"$bin" sim --fabric "$tmp/ft8.conf" --nodes "n[0001" --out "$tmp/x" > "$tmp/err" 2>&1
[ $? = 2 ] && grep -q "nodes 'n\[0001': column" "$tmp/err"
ok $? "--nodes with a broken hostlist exits with status 2 ($(cat "$tmp/err"))"

# Faults reach the simulation: a dead node is reported unmeasured.
victim=$(grep -o 'Nodes=n\[[0-9]*' "$tmp/ft8.conf" | head -1 | sed 's/Nodes=n\[/n/')
"$bin" sim --fabric "$tmp/ft8.conf" --profile ideal-ethernet --method allpairs --inject "dead:$victim" --out "$tmp/dead" > "$tmp/log" 2>&1
ok $? "a run with a dead node completes"
grep -q "unmeasured_nodes: \[\"$victim\"\]" "$tmp/dead/metrics.yaml"; ok $? "the dead node $victim is reported unmeasured"

# Bad input: exit status 2 and a message naming the file and line.
"$bin" sim --fabric tests/data/topo/bad-unknown-switch.conf --out "$tmp/x" > "$tmp/err" 2>&1
[ $? -eq 2 ]; ok $? "a broken topology.conf exits with status 2"
grep -q "bad-unknown-switch.conf:[0-9]*:" "$tmp/err"; ok $? "and names FILE:LINE ($(head -1 "$tmp/err"))"
"$bin" sim --fabric "$tmp/missing.conf" --out "$tmp/x" > "$tmp/err" 2>&1
[ $? -eq 2 ]; ok $? "a missing fabric file exits with status 2"
grep -q "missing.conf" "$tmp/err"; ok $? "and names the file"
"$bin" sim --fabric "$tmp/ft8.conf" --inject "degrade:nosuch:+30%" --out "$tmp/x" > "$tmp/err" 2>&1
[ $? -eq 2 ]; ok $? "a fault naming an unknown link exits with status 2"
grep -q "nosuch" "$tmp/err"; ok $? "and names it"
"$bin" sim --fabric "$tmp/ft8.conf" --inject "melt:n1" --out "$tmp/x" > "$tmp/err" 2>&1
[ $? -eq 2 ]; ok $? "an unknown fault kind exits with status 2"
"$bin" sim --fabric "$tmp/ft8.conf" --method bogus --out "$tmp/x" > "$tmp/err" 2>&1
[ $? -eq 2 ]; ok $? "an unknown method exits with status 2"
"$bin" sim --fabric "$tmp/ft8.conf" --profile token-ring --out "$tmp/x" > "$tmp/err" 2>&1
[ $? -eq 2 ]; ok $? "an unknown profile exits with status 2"
"$bin" sim --fabric "$tmp/ft8.conf" --params tests/data/params/bad_unknown_key.yaml --out "$tmp/x" > "$tmp/err" 2>&1
rc=$?
[ $rc -eq 2 ]; ok $? "a broken params file exits with status 2"
grep -q "bad_unknown_key.yaml:[0-9]*:[0-9]*:" "$tmp/err"; ok $? "and names FILE:LINE:COLUMN ($(head -1 "$tmp/err"))"
"$bin" sim --fabric "$tmp/ft8.conf" --seed -3 --out "$tmp/x" > "$tmp/err" 2>&1
[ $? -eq 2 ]; ok $? "a negative seed is refused"

tap_end
