#!/usr/bin/env bash
# Slurm's own topology from toposcope's measurements, on the emulated cluster (TAP): 16 nodes on
# 3 levels whose names alternate between the leaves (tests/data/agents/fabric16.conf), so that
# Slurm's node order is no leaf's.
#   - two jobs (the prolog in every node's namespace at once, then the epilog on every node,
#     as tests/testbed-epilog.t runs them, without --topology: the records name what was
#     measured) write their records;
#   - toposcope report --write-topology writes topology.conf from those records, only with the
#     nodes Slurm knows (--nodes);
#   - the testbed comes up with that file as Slurm's topology.conf (TopologyPlugin=topology/tree):
#     slurmctld accepts it (scontrol show topology lists its switches);
#   - srun -N4 --switches=1 then lands inside one measured leaf: four nodes that no contiguous
#     range of names holds.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO/tests/testbed/lib.sh"

EPILOG=$TB_BUILD/bin/toposcope-epilog
TOPOSCOPE=$TB_BUILD/bin/toposcope
FABRIC=$REPO/tests/data/agents/fabric16.conf
PARAMS=$REPO/etc/demo/params.yaml
BUDGET=5000
export SLURM_CONF=$TB_CONF

tb_tap_begin 5 "make" "$TB_FABEMU" "$TB_PROLOG" "$EPILOG" "$TOPOSCOPE"
tb_test_up testbed-topology 6 "$FABRIC" "$PARAMS" "up: 16 nodes on 3 levels, names alternating between the leaves"
N16=$("$TB_FABEMU" --list-nodes --fabric "$FABRIC" | paste -sd,)
mkdir -p "$work/rec"
printf 'placement:\n  kind: measure-only\n' > "$work/policy.yaml"

job() {   # JOB: the prolog on every node at once, then the epilog on every node (leader node1)
  local job=$1 nd
  tb_agents_launch "$job" $BUDGET "$N16"
  tb_agents_wait
  for nd in ${N16//,/ }; do
    "$TB_NODE_EXEC" "$nd" "$EPILOG" --job "$job" --nodes "$N16" --self "$nd" --uid 0 \
      --spool "$work/$job/$nd" --records "$work/rec" --policy "$work/policy.yaml" \
      --no-actions --log-stderr >> "$work/epilog-$job.log" 2>&1 9>&-
  done
}
for j in 651 652; do job $j; done
[ "$(ls "$work/rec" | grep -c '^job-65[12]\.yaml$')" -eq 2 ]
ok $? "two jobs recorded"

"$TOPOSCOPE" report --records "$work/rec" --write-topology "$work/measured.conf" --nodes "node[1-16]" \
  > "$work/report.out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -q '^SwitchName=' "$work/measured.conf"
ok $? "toposcope report --write-topology wrote topology.conf from the records (exit $rc)"
diag < "$work/measured.conf"

# the measured file as the testbed's topology.conf: the emulator builds the same delays from it
# (the same tree under other switch names) and slurmctld reads it with topology/tree
timeout 120 "$TB_DIR/down" > /dev/null 2>&1
timeout 180 "$TB_DIR/up" "$work/measured.conf" "$PARAMS" > "$work/up2.out" 2>&1
rc=$?
scontrol show topology > "$work/topology.out" 2>&1
sw=$(grep -c '^SwitchName=' "$work/measured.conf")
[ $rc -eq 0 ] && [ "$(grep -c 'SwitchName=' "$work/topology.out")" -eq "$sw" ]
ok $? "slurmctld accepts the written topology.conf: scontrol show topology lists its $sw switches"
[ $rc -eq 0 ] || tail -20 "$work/up2.out" | diag

# (--switches=1 with a wait of 0 would let Slurm place the job anywhere once the wait is over;
# the default wait is long, and all 16 nodes are idle: one leaf is free at once)
timeout 60 srun -N4 --switches=1 -t 1 --chdir=/ hostname > "$work/srun.out" 2> "$work/srun.err"
rc=$?
hosts=$(sort -u "$work/srun.out" | paste -sd' ')
leaf=$(for h in $hosts; do awk -v h="$h" '$1 ~ /^SwitchName=/ && $2 ~ /^Nodes=/ {
  sub("SwitchName=", "", $1); sub("Nodes=", "", $2); print $1, $2 }' "$work/measured.conf" |
  while read -r name nodes; do
    scontrol show hostnames "$nodes" 2>/dev/null | has -x "$h" && echo "$name"
  done; done | sort -u)
[ $rc -eq 0 ] && [ "$(echo "$hosts" | wc -w)" -eq 4 ] && [ "$(echo "$leaf" | grep -c .)" -eq 1 ]
ok $? "srun -N4 --switches=1 lands inside one measured leaf ($hosts: ${leaf:-?})"
[ $rc -eq 0 ] || diag < "$work/srun.err"
tap_end
