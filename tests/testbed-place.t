#!/usr/bin/env bash
# toposcope place against real Open MPI on the emulated cluster (TAP): 8 nodes on etc/demo, this
# machine's hwloc tree for each, 16 ranks with the spread, compact and block policies; mpirun
# inside an sbatch job takes each rankfile, and --report-bindings shows every rank on the node
# and core the rankfile asked for (multi-core slots: tests/testbed-hints.t). Bounded like
# tests/testbed.t: timeouts, a watchdog, down on every exit.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO/tests/testbed/lib.sh"

FABRIC=$REPO/etc/demo/topology.conf
PARAMS=$REPO/etc/demo/params.yaml
BIN=$TB_BUILD/bin/toposcope
export SLURM_CONF=$TB_CONF

tb_tap_begin 9 "make" "$TB_FABEMU" "$TB_UDPING" "$BIN"

tb_test_up place-t 7 "$FABRIC" "$PARAMS" "up brings the 8-node testbed up"

# The job directory must be visible to every node: the state dir is outside /tmp.
jobdir=$TB_STATE/jobs/place-t.$$
mkdir -p "$jobdir"

# PLACEMENT: run toposcope place, then mpirun with its rankfile in one sbatch job; compare.
check_policy() {   # POLICY
  local policy=$1 out=$jobdir/$1
  "$BIN" place --tree "$FABRIC" --policy "$policy" --ranks 16 --out "$out" --no-svg > "$work/place.out" 2>&1
  local placed=$?
  ok $placed "toposcope place --policy $policy: 16 ranks on 8 nodes of this machine's cores"
  [ $placed -eq 0 ] || diag < "$work/place.out"
  cat > "$out/job.sh" <<EOF
#!/bin/bash
export $TB_OMPI_ENV
exec mpirun -np 16 --rankfile rankfile --report-bindings \
  sh -c 'echo "rank=\$OMPI_COMM_WORLD_RANK node=\$(hostname)"'
EOF
  (cd "$out" && tb_sbatch_wait 150 -N8 --ntasks-per-node=2 -t 2 -o "$out/out.txt" job.sh) > "$work/sbatch.out" 2>&1
  local rc=$? bad=0
  # every rankfile line: "rank R=HOST slot=0:C" -> bound to socket 0[core C[hwt 0]] on HOST
  while read -r _ spec slotspec; do
    local r=${spec%%=*} host=${spec#*=} core=${slotspec##*:}
    grep -qE "^\[$host:[0-9]+\] MCW rank $r bound to socket 0\[core $core\[hwt 0\]\]" "$out/out.txt" 2>/dev/null &&
      grep -qx "rank=$r node=$host" "$out/out.txt" || { bad=1; echo "rank $r: wanted $host core $core"; }
  done < "$out/rankfile" > "$work/mismatch.txt"
  ok $((rc | bad)) "mpirun --rankfile ($policy): all 16 ranks run on the node and core the rankfile names"
  [ $((rc | bad)) -eq 0 ] || { cat "$work/sbatch.out" "$work/mismatch.txt" "$out/out.txt" 2>/dev/null | head -40 | diag; }
}
check_policy spread
check_policy compact
check_policy block
# spread alternates the two leaf switches: ranks 0 and 1 on different leaves of etc/demo
sed -n 1,2p "$jobdir/spread/hostfile" | tr '\n' ' ' | has -x "node1 node5 "
ok $? "spread puts ranks 0 and 1 under different leaf switches (node1, node5)"
rm -rf "$jobdir"

timeout 120 "$TB_DIR/down" > "$work/down.out" 2>&1
ok $? "down"
tap_end
