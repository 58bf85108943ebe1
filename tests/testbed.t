#!/usr/bin/env bash
# The emulated cluster, end to end (TAP): 8 nodes on etc/demo (2 leaves x 4 nodes under one
# spine, 200 us per link one way) with real Slurm, munge, PMIx and Open MPI.
#   - RTT (minimum of >= 50 UDP probes) within 15% of 4 x 200 us on a leaf, 8 x 200 us across;
#   - degrading node3's access link by +100% while running raises exactly the RTTs through it;
#   - srun -N8 hostname, srun -N2 --mpi=pmix env, mpirun with a rankfile inside sbatch;
#   - down leaves no namespace, TAP, process or /etc/hosts line behind, and can run twice.
# Bounded: every command has a timeout and a watchdog ends the whole test after 8 minutes;
# the testbed is torn down on every exit path.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO/tests/testbed/lib.sh"

FABRIC=$REPO/etc/demo/topology.conf
PARAMS=$REPO/etc/demo/params.yaml
LINK_US=200
TOL=0.15
SAMPLES=60
PORT=7979
export SLURM_CONF=$TB_CONF

tb_tap_begin 17 "make testbed" "$TB_FABEMU" "$TB_UDPING"

# ---- up -----------------------------------------------------------------------------------------
tb_test_up testbed-t 8 "$FABRIC" "$PARAMS" "up brings 8 nodes, slurmctld and 8 slurmds up"
pid_before=$(awk '$1 == "fabemu" { print $2 }' "$TB_STATE/pids")
timeout 60 "$TB_DIR/up" "$FABRIC" "$PARAMS" > "$work/up2.out" 2>&1
rc=$?
pid_after=$(awk '$1 == "fabemu" { print $2 }' "$TB_STATE/pids")
grep -q "export SLURM_CONF=$TB_CONF" "$work/up2.out" && [ "$pid_before" = "$pid_after" ]
ok $(( rc | $? )) "up again is idempotent: prints the usage, keeps the running testbed"

mapfile -t nodes < <("$TB_FABEMU" --list-nodes --fabric "$FABRIC")
addr_of() {   # node name -> address
  local i
  for i in "${!nodes[@]}"; do [ "${nodes[$i]}" = "$1" ] && tb_node_addr "$i"; done
}
for nd in "${nodes[@]}"; do
  "$TB_NODE_EXEC" "$nd" "$TB_UDPING" server --port $PORT --timeout 300 9>&- &
done

# rtt SRC DST -> "min median" in microseconds (empty on failure)
rtt() {
  "$TB_NODE_EXEC" "$1" timeout 30 "$TB_UDPING" client "$(addr_of "$2")" --port $PORT \
    -c $SAMPLES -i 1000 --wait-ms 100 --warmup 3 |
    awk '{ for (i = 1; i < NF; i++) v[$i] = $(i + 1); if (v["received"] >= 50) print v["min_us"], v["median_us"] }'
}
within() {    # GOT WANT -> status 0 if |GOT - WANT| <= TOL * WANT
  awk -v g="$1" -v w="$2" -v t=$TOL 'BEGIN { exit !(g != "" && g >= w * (1 - t) && g <= w * (1 + t)) }'
}
leaf_of() { [ "${1#node}" -le 4 ] && echo leaf1 || echo leaf2; }
# Expected RTT for a pair: links on the path x 2 directions x 200 us, plus the degraded access
# link's extra delay once per direction.
expect() {    # A B EXTRA_NODE EXTRA_US
  local hops=4
  [ "$(leaf_of "$1")" = "$(leaf_of "$2")" ] || hops=8
  local us=$((hops * LINK_US))
  if [ "$1" = "$3" ] || [ "$2" = "$3" ]; then us=$((us + 2 * $4)); fi
  echo $us
}

# ---- RTT on the healthy fabric ------------------------------------------------------------------
check_pairs() {   # LABEL EXTRA_NODE EXTRA_US PAIRS...  -> status, diag table
  local label=$1 xnode=$2 xus=$3 bad=0 a b m
  shift 3
  for pair in "$@"; do
    a=${pair%-*} b=${pair#*-}
    read -r m med <<< "$(rtt "$a" "$b")"
    want=$(expect "$a" "$b" "$xnode" "$xus")
    if within "$m" "$want"; then verdict=ok; else verdict=OUT; bad=1; fi
    printf '%s %s-%s: want %s us, min %s us, median %s us %s\n' "$label" "$a" "$b" "$want" \
      "${m:-?}" "${med:-?}" "$verdict" | diag
  done
  return $bad
}
check_pairs healthy "" 0 node1-node2 node3-node4 node5-node8
ok $? "RTT on one leaf = 4 x ${LINK_US} us within 15% (min of $SAMPLES probes)"
check_pairs healthy "" 0 node1-node5 node4-node8 node2-node7
ok $? "RTT across leaves = 8 x ${LINK_US} us within 15%"

# ---- degrade node3's access link while running ------------------------------------------------
all_pairs=()
for ((i = 0; i < ${#nodes[@]}; i++)); do
  for ((j = i + 1; j < ${#nodes[@]}; j++)); do all_pairs+=("${nodes[$i]}-${nodes[$j]}"); done
done
"$TB_DIR/fabctl" inject degrade:node3:+100% > "$work/inject.out" 2>&1
ok $? "fabctl inject degrade:node3:+100% while running"
through=() others=()
for p in "${all_pairs[@]}"; do
  case "-$p-" in *-node3-*) through+=("$p") ;; *) others+=("$p") ;; esac
done
check_pairs degraded node3 $LINK_US "${through[@]}"
ok $? "every RTT through node3's link rose by 2 x ${LINK_US} us (${#through[@]} pairs, within 15%)"
check_pairs degraded node3 $LINK_US "${others[@]}"
ok $? "every other RTT is unchanged (${#others[@]} pairs, within 15%)"
"$TB_DIR/fabctl" clear > /dev/null 2>&1
check_pairs cleared "" 0 node3-node4 node3-node6
ok $? "fabctl clear restores node3's link"

# ---- Slurm, PMIx, Open MPI ----------------------------------------------------------------------
timeout 60 srun -N8 hostname > "$work/hostname.out" 2> "$work/hostname.err"
rc=$?
got=$(sort -V "$work/hostname.out" | tr '\n' ' ')
[ $rc -eq 0 ] && [ "$got" = "node1 node2 node3 node4 node5 node6 node7 node8 " ]
ok $? "srun -N8 hostname runs on node1..node8"
[ "$got" = "node1 node2 node3 node4 node5 node6 node7 node8 " ] || { echo "got: $got"; diag < "$work/hostname.err"; } | diag

timeout 60 srun -N2 --mpi=pmix env > "$work/pmix.out" 2> "$work/pmix.err"
rc=$?
ranks=$(grep -E '^PMIX_RANK=' "$work/pmix.out" | sort | tr '\n' ' ')
nodeids=$(grep -E '^SLURM_NODEID=' "$work/pmix.out" | sort | tr '\n' ' ')
[ $rc -eq 0 ] && [ "$ranks" = "PMIX_RANK=0 PMIX_RANK=1 " ] && [ "$nodeids" = "SLURM_NODEID=0 SLURM_NODEID=1 " ]
ok $? "srun -N2 --mpi=pmix env: PMIx ranks 0 and 1 on two nodes"
[ $rc -eq 0 ] || diag < "$work/pmix.err"

# The rankfile puts ranks in reverse node order and alternates cores, so a launcher that ignored
# it could not match by chance.
jobdir=$TB_STATE/jobs/testbed-t.$$
mkdir -p "$jobdir"
cat > "$jobdir/rankfile" <<'EOF'
rank 0=node4 slot=1
rank 1=node3 slot=0
rank 2=node2 slot=1
rank 3=node1 slot=0
EOF
cat > "$jobdir/job.sh" <<EOF
#!/bin/bash
export $TB_OMPI_ENV
exec mpirun -np 4 --rankfile rankfile --report-bindings \
  sh -c 'echo "rank=\$OMPI_COMM_WORLD_RANK node=\$(hostname)"'
EOF
(cd "$jobdir" && tb_sbatch_wait 150 -N4 -w 'node[1-4]' -t 2 -o "$jobdir/out.txt" job.sh) \
  > "$work/sbatch.out" 2>&1
rc=$?
placed=0
for spec in "0 node4 1" "1 node3 0" "2 node2 1" "3 node1 0"; do
  read -r r nd core <<< "$spec"
  grep -qE "^\[$nd:[0-9]+\] MCW rank $r bound to socket 0\[core $core\[hwt 0\]\]" "$jobdir/out.txt" 2>/dev/null &&
    grep -qx "rank=$r node=$nd" "$jobdir/out.txt" || placed=1
done
ok $(( rc | placed )) "sbatch: mpirun --rankfile across 4 nodes, --report-bindings shows the requested node and core"
[ $((rc | placed)) -eq 0 ] || { cat "$work/sbatch.out" "$jobdir/out.txt" 2>/dev/null | diag; }
grep 'MCW rank' "$jobdir/out.txt" 2>/dev/null | sort -k4n | diag
rm -rf "$jobdir"

# ---- down -----------------------------------------------------------------------------------------
cp "$TB_STATE/pids" "$work/pids"
timeout 120 "$TB_DIR/down" > "$work/down.out" 2>&1
ok $? "down"
left=$(tb_namespaces | tr '\n' ' ')
[ -z "$left" ]
ok $? "down leaves no namespace ${left:+(left: $left)}"
left=$(tb_taps | tr '\n' ' ')
[ -z "$left" ]
ok $? "down leaves no TAP device ${left:+(left: $left)}"
alive=""
while read -r name pid st; do
  tb_pid_alive "$pid" "$st" && alive="$alive $name:$pid"
done < "$work/pids"
[ -z "$alive" ]
ok $? "down leaves none of the testbed's processes ${alive:+(alive:$alive)}"
! grep -qF "$TB_HOSTS_MARK" "$TB_HOSTS"
ok $? "down leaves no /etc/hosts line"
timeout 60 "$TB_DIR/down" > "$work/down2.out" 2>&1
ok $? "down is safe to run twice"
tap_end
