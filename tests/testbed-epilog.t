#!/usr/bin/env bash
# The epilog recorder on the emulated cluster (etc/demo: 8 nodes, 2 leaves of 4, 200 us links).
# Without Slurm in the way (tests/testbed-epilog-spank.t does the same through sbatch
# --topo-aware and the SPANK plugin), each job is what its prolog and epilog run:
# toposcope-prolog in every node's namespace at once (tb_agents_launch, as tests/testbed-agents.t), then
# toposcope-epilog on every node. Three healthy jobs build the baseline (toposcope report
# --update-baseline); then node3's access link is slowed in the emulator (fabctl inject
# degrade:node3:+100%) between jobs:
#   - the next job's record names node3 (and its epilog logs it);
#   - toposcope report over the 10 jobs ranks node3 first;
#   - after `clear`, a new job's record no longer names node3;
#   - every node's spool directory is gone after its epilog.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO/tests/testbed/lib.sh"

EPILOG=$TB_BUILD/bin/toposcope-epilog
TOPOSCOPE=$TB_BUILD/bin/toposcope
FABRIC=$REPO/etc/demo/topology.conf
PARAMS=$REPO/etc/demo/params.yaml
BUDGET=4000

tb_tap_begin 13 "make" "$TB_FABEMU" "$TB_PROLOG" "$EPILOG" "$TOPOSCOPE"
tb_test_up testbed-epilog 6 "$FABRIC" "$PARAMS" "up: 8 nodes on etc/demo"
N8=$("$TB_FABEMU" --list-nodes --fabric "$FABRIC" | paste -sd,)
mkdir -p "$work/rec"
# Thresholds for this testbed: links of 200 us, run-to-run scatter of a few us per link on two
# shared CPUs; a link must be 25% and 40 us slower (and 5 standard deviations) to be flagged.
printf 'placement:\n  kind: measure-only\nanomaly:\n  threshold_pct: 25\n  threshold_us: 40\n' > "$work/policy.yaml"

# job JOB: the prolog on every node at once (tb_agents_launch), then the epilog on every node
# (leader node1), each with its node's spool
job() {
  local job=$1 nd
  tb_agents_launch "$job" $BUDGET "$N8"
  tb_agents_wait
  for nd in ${N8//,/ }; do
    "$TB_NODE_EXEC" "$nd" "$EPILOG" --job "$job" --nodes "$N8" --self "$nd" --uid 0 \
      --spool "$work/$job/$nd" --records "$work/rec" --topology "$FABRIC" --policy "$work/policy.yaml" \
      ${BASELINE:+--baseline "$BASELINE"} --no-actions --log-stderr >> "$work/epilog-$job.log" 2>&1 9>&-
  done
}
anomalies() { awk '/^anomalies:/ {a = 1} a && /link:/' "$work/rec/job-$1.yaml"; }

for j in 601 602 603; do job $j; done
[ -f "$work/rec/job-603.yaml" ] && [ "$(ls "$work/rec" | wc -l)" -eq 3 ]
ok $? "three healthy jobs recorded (one record per job, by its leader)"
grep -q '^  - {link: "node3", kind: access, est_us: [0-9]' "$work/rec/job-601.yaml"
ok $? "a record holds the prolog's link estimates"
[ $? -eq 0 ] || { diag < "$work/rec/job-601.yaml"; tail -5 "$work/601/node1.log" | diag; }
left=$(for j in 601 602 603; do for nd in ${N8//,/ }; do [ -e "$(tb_agent_spool $j "$nd")" ] && echo "$j/$nd"; done; done | wc -l)
[ "$left" -eq 0 ]; ok $? "every node's spool directory removed by its epilog ($left left)"
"$TOPOSCOPE" report --records "$work/rec" --update-baseline "$work/baseline.yaml" > "$work/r0" 2>&1
grep -q '{link: "node3", kind: access, .*count: 3}' "$work/baseline.yaml"
ok $? "baseline from the three jobs has node3's access link"
grep -q '{link: "leaf[12]", kind: uplink' "$work/baseline.yaml"
ok $? "and the uplink between the leaves, named by topology.conf"
diag < "$work/baseline.yaml"
BASELINE=$work/baseline.yaml

tb_ctl inject degrade:node3:+100% > /dev/null
ok $? "fabctl: node3's access link degraded by +100% between jobs"
for j in 611 612 613 614 615 616 617; do job $j; done
anomalies 611 | has 'link: "node3", kind: access, reason: slow'
ok $? "the next job's record names node3"
anomalies 611 | diag
grep -q "toposcope\[[0-9]*\]: job=611 link=node3 excess=+" "$work/epilog-611.log"
ok $? "its epilog logged toposcope[pid]: job=611 link=node3 excess=..."
named=0
for j in 611 612 613 614 615 616 617; do anomalies $j | has '"node3"' && named=$((named + 1)); done
[ $named -ge 6 ]; ok $? "node3 named in $named of the 7 degraded jobs' records"

"$TOPOSCOPE" report --records "$work/rec" --topology "$FABRIC" > "$work/r1" 2>&1
first=$(awk '$1 == "1" {print $2}' "$work/r1")
[ "$first" = node3 ]; ok $? "toposcope report over the 10 jobs ranks node3 first ($first)"
diag < "$work/r1"

tb_ctl clear > /dev/null
job 621
[ -f "$work/rec/job-621.yaml" ] && ! anomalies 621 | has '"node3"'
ok $? "after clear, a new job's record no longer names node3"
anomalies 621 | diag
grep -q "nodes whose measured leaf switch differs from topology.conf: 0" "$work/r1"
ok $? "the measured leaf groups agree with topology.conf"
tap_end
