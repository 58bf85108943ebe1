#!/usr/bin/env bash
# toposcope probe — the node agents as a job step — on the emulated cluster (TAP), and the
# prolog-mode agents on the fabrics tests/testbed-agents.t does not bring up:
#   - 16 nodes on 2 levels (tests/data/agents/fabric16-2level.conf) and 16 on 3 levels
#     (tests/data/agents/fabric16.conf); on each, inside one sbatch job,
#     `srun --mpi=pmix -N16 --ntasks-per-node=1 toposcope probe --out DIR` and the same on
#     node[1-8] (two nodes on each leaf: 8 nodes on 2, then on 3 levels). Every step ends
#     well, its ranks within the budget + 200 ms, rank 0 writes DIR with status measured, mode
#     step, the exact tree of the fabric and per-link estimates within 10% of the emulator's
#     delays (an access link's truth adds a quarter of the stacks' round-trip overhead, as in
#     testbed-agents.t);
#   - on the 2-level fabric the same step as an unprivileged user (sbatch --uid nobody): the
#     MUNGE credentials are the user's, and it measures as well;
#   - prolog mode (toposcope-prolog in every namespace at once): 16 nodes on 2 levels and
#     8 nodes (node[1-8]) on 3 levels, exact and within 10%;
#   - toposcope probe without --out, or outside a PMIx job: exit 2, saying how to run it;
#   - 16 nodes on 3 levels at 12 us per link (a real network's signal-to-noise), three steps
#     with a 3 s budget: in time, never a wrong tree reported measured, a partial one true.
# On 3 levels the 8-node step runs --method allpairs, the others the default (fast).
# The 10% bounds and how often they fail a working job (0 of 110 jobs, measured with
# tests/testbed/accuracy): check_result in tests/testbed/agents.sh.
# Bounded: timeouts, a watchdog, down on every exit.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO/tests/testbed/lib.sh"
. "$REPO/tests/testbed/agents.sh"

BIN=$TB_BUILD/bin/toposcope
PROBE=$TB_BUILD/bin/toposcope-probe
PROLOG=$TB_PROLOG
TREECMP=$TB_BUILD/bin/toposcope-treecmp
PARAMS=$REPO/etc/demo/params.yaml
BUDGET=5000 GRACE=200
PLAN=43
export SLURM_CONF=$TB_CONF

tb_tap_begin $PLAN "make" "$TB_FABEMU" "$TB_UDPING" "$BIN" "$PROBE" "$PROLOG" "$TREECMP"

# Same-leaf pairs, all at once: node[1,5,9,13] share a leaf in both fabrics, and so on; the
# load of 16 agents, and of 8 (node[1-8]).
PAIRS="node1:node5 node9:node13 node2:node6 node10:node14 node3:node7 node11:node15 node4:node8 node12:node16"
PAIRS8="node1:node5 node2:node6 node3:node7 node4:node8"

# probe_steps TAG SBATCH-ARGS -- STEP...: one sbatch -N16 job (script and output in
# $jobdir/TAG/) that runs each STEP ("NAME NODELIST [PROBE-ARGS...]") one after the other;
# step NAME writes $jobdir/NAME/ and records "exit wall-ms" in $jobdir/NAME.rc.
probe_steps() {
  local tag=$1
  shift
  local sb=() step
  while [ "$1" != -- ]; do sb+=("$1"); shift; done
  shift
  {
    echo '#!/bin/bash'
    echo 'step() { local name=$1 nodes=$2 n s; shift 2; n=$(scontrol show hostnames "$nodes" | wc -l)'
    echo "  echo \"\$nodes \$*\" > $jobdir/\$name.step"
    echo '  s=$(date +%s%N)'
    echo "  srun --mpi=pmix -N\$n -w \$nodes --ntasks-per-node=1 $jobdir/bin/toposcope probe --out $jobdir/\$name \\"
    echo "    --budget-ms $BUDGET -v \"\$@\" > $jobdir/\$name.out 2>&1"
    echo "  echo \"\$? \$(( (\$(date +%s%N) - s) / 1000000 ))\" > $jobdir/\$name.rc; }"
    for step in "$@"; do echo "step $step"; done
  } > "$work/job.sh"
  mkdir -p "$jobdir/$tag"
  install -m 0755 "$work/job.sh" "$jobdir/$tag/job.sh"
  # a job as another user (--uid U) writes its output there
  local i
  for ((i = 0; i + 1 < ${#sb[@]}; i++)); do [ "${sb[i]}" = --uid ] && chown "${sb[i + 1]}" "$jobdir/$tag"; done
  (cd "$jobdir/$tag" && tb_sbatch_wait 150 -N16 -t 3 "${sb[@]}" -o "$jobdir/$tag/job.txt" job.sh) \
    > "$work/sbatch.out" 2>&1
}

# step_slowest NAME DIR: the ms after start at which the step's slowest agent wrote its spool
step_slowest() {
  sed -n 's/.* wrote the spool \([0-9.]*\) ms after start/\1/p; s/.*leader_ms: //p' "$jobdir/$1.out" "$2/status.yaml" 2>/dev/null |
    sort -n | tail -1
}

# check_step NAME FABRIC LABEL [SBATCH-ARGS...]: the step ended well, its ranks in time, rank
# 0's files. A step whose links are past the bound (links_past) is measured once more, the
# same step as NAME.2 of a new job (SBATCH-ARGS), held to the same bounds, and named.
check_step() {
  local name=$1 fabric=$2 label=$3
  shift 3
  if links_past "$jobdir/$name" "$fabric"; then
    echo "# $label: step $name had a link past the bound (load $(loadavg)); measuring again as $name.2"
    probe_steps "$name.2-job" "$@" -- "$name.2 $(cat "$jobdir/$name.step")"
    host_after ${HOST_PAIRS:-$PAIRS}
    name=$name.2
  fi
  local rc ms d=$jobdir/$name
  read -r rc ms < "$jobdir/$name.rc" 2>/dev/null || { rc=x; ms=x; }
  local slow
  slow=$(step_slowest "$name" "$d")
  [ "$rc" = 0 ] && [ "$(field "$d/status.yaml" status)" = measured ] && [ "$(field "$d/status.yaml" mode)" = step ] &&
    awk -v s="${slow:-1e9}" -v b=$((BUDGET + GRACE)) 'BEGIN { exit !(s <= b) }'
  local r=$?
  ok $r "$label: srun ends well (exit $rc, $ms ms with the launch), status measured, mode step, the slowest agent done after ${slow:-?} ms"
  [ $r -eq 0 ] && timings "$d/status.yaml" "$label"
  [ $r -eq 0 ] || { tail -20 "$jobdir/$name.out" | diag; [ -f "$d/status.yaml" ] && diag < "$d/status.yaml"; }
  check_result "$d" "$fabric" "$label"
}

# after_steps: host_us (16 nodes) and h8 (node[1-8]) bracketed around the job just run
after_steps() {
  local h16=$host_us
  host_after $PAIRS
  h16=$host_us
  host_us=$h8
  host_after $PAIRS8
  h8=$host_us
  host_us=$h16
}

# ---- 16 nodes, 2 levels -------------------------------------------------------------------------
FABRIC=$REPO/tests/data/agents/fabric16-2level.conf
tb_test_up testbed-probe 8 "$FABRIC" "$PARAMS" "up: 16 nodes on 2 levels (tests/data/agents/fabric16-2level.conf)"
N16=$("$TB_FABEMU" --list-nodes --fabric "$FABRIC" | paste -sd,)
N8=node1,node2,node3,node4,node5,node6,node7,node8
# everything the nodes run or write lives in the state dir: each slurmd has a private /tmp
jobdir=$TB_STATE/jobs/probe-t.$$
mkdir -p "$jobdir/bin"
cp "$BIN" "$PROBE" "$jobdir/bin/"
trap 'kill "$tb_watchdog" 2>/dev/null; timeout 120 "$TB_DIR/down" >/dev/null 2>&1; rm -rf "$work" "$jobdir"' EXIT

"$BIN" probe > "$work/o.out" 2>&1
[ $? -eq 2 ] && grep -q -- '--out DIR is required' "$work/o.out"
ok $? "toposcope probe without --out: exit 2, says so"
"$BIN" probe --out "$work/none" > "$work/o.out" 2>&1
[ $? -eq 2 ] && grep -q 'srun --mpi=pmix' "$work/o.out" && [ ! -e "$work/none" ]
ok $? "toposcope probe outside a PMIx job: exit 2, says how to run it: $(head -1 "$work/o.out")"

host_us=$(host_overhead 7500 $PAIRS)
h8=$(host_overhead 7520 $PAIRS8)
[ -n "$host_us" ] && [ -n "$h8" ]
ok $? "the nodes' stacks add ${host_us:-?} us to a round trip (8 same-leaf pairs at once; 4 pairs: ${h8:-?} us)"

probe_steps two -- "p16 node[1-16]" "p8 node[1-8]"
ok $? "sbatch -N16: two probe steps on 2 levels"
after_steps
diag < "$work/sbatch.out"
check_step p16 "$FABRIC" "probe, 16 nodes, 2 levels"
host_us=$h8 HOST_PAIRS=$PAIRS8 check_step p8 "$FABRIC" "probe, 8 nodes, 2 levels"
d=$jobdir/p16
[ "$(stat -c '%a' "$d"/tree.yaml "$d"/topology.conf "$d"/links.yaml "$d"/pairs.yaml "$d"/status.yaml | sort -u)" = 640 ] &&
  [ "$(ls "$d" | wc -l)" -eq 5 ]
ok $? "probe: rank 0 wrote the five files (the leader's pairs.yaml too), 0640, nothing else"

# as a user: the job's uid makes and checks the credentials, and owns the files
install -d -o nobody -g nogroup -m 0755 "$jobdir/user"
probe_steps user --uid nobody --gid nogroup -- "user/p16 node[1-16]"
host_after $PAIRS
ok $? "sbatch --uid nobody: a probe step as an unprivileged user"
check_step user/p16 "$FABRIC" "probe as nobody, 16 nodes" --uid nobody --gid nogroup
[ "$(stat -c '%U' "$jobdir/user/p16/tree.yaml")" = nobody ] && [ "$(field "$jobdir/user/p16/status.yaml" job_uid)" = "$(id -u nobody)" ]
ok $? "probe as nobody: the files are the user's, status.yaml names its uid"

# a task that reaches the fence late (rank 1 starts 6 s after the others): PMIX_TIMEOUT is only
# a request to Slurm's PMIx server, and a lookup of a rank that has not published waits for it:
# every task bounds the exchange itself and gives up in time, saying why; rank 0 leaves the
# fallback result (the step's nodes from SLURM_STEP_NODELIST, in hostlist order) all the same
mkdir -p "$jobdir/late"
cat > "$jobdir/late/job.sh" <<JOB
#!/bin/bash
srun --mpi=pmix -N4 -w node[1-4] --ntasks-per-node=1 bash -c '
  [ "\$SLURM_PROCID" = 1 ] && sleep 6
  s=\$(date +%s%N)
  $jobdir/bin/toposcope probe --out $jobdir/late/out --budget-ms 1500 -v 2> $jobdir/late/err.\$SLURM_PROCID
  echo "\$SLURM_PROCID \$? \$(( (\$(date +%s%N) - s) / 1000000 ))" >> $jobdir/late/rc'
JOB
(cd "$jobdir/late" && tb_sbatch_wait 120 -N4 -w 'node[1-4]' -t 2 -o "$jobdir/late/job.txt" job.sh) > "$work/sbatch.out" 2>&1
late_rc=$?
awk -v b=$((1500 + GRACE)) '$1 != 1 && ($2 != 1 || $3 > b) { bad = 1 } $1 != 1 { n++ } END { exit bad || n != 3 }' "$jobdir/late/rc" &&
  grep -q 'the PMIx exchange (fence and lookups) did not complete within 1.5 s' "$jobdir/late/err.0" &&
  [ "$(field "$jobdir/late/out/status.yaml" status)" = fallback ] &&
  field "$jobdir/late/out/status.yaml" reason | has '^the tasks never met: the PMIx exchange' &&
  grep -q 'SwitchName=fallback Nodes=node\[1-4\]' "$jobdir/late/out/topology.conf" &&
  [ -s "$jobdir/late/out/tree.yaml" ] && [ ! -e "$jobdir/late/out/links.yaml" ]
ok $? "a task 6 s late: the other three give up within 1500 + $GRACE ms, exit 1; rank 0 wrote the fallback, node[1-4] in hostlist order (sbatch exit $late_rc; task, exit, ms: $(sort -n "$jobdir/late/rc" 2>/dev/null | tr '\n' ' ')): $(head -c 120 "$jobdir/late/err.0" 2>/dev/null | tail -1)"

# the stacks' overhead drifts with the machine's other load: measured again just before
h=$(host_overhead 7700 $PAIRS)
[ -n "$h" ] && host_us=$h
tb_agents_launch 601 $BUDGET "$N16"
tb_agents_wait
host_before=$host_us
host_after $PAIRS
all_within 601 $BUDGET "$N16" > "$work/w.out"
ok $? "prolog mode, 16 nodes, 2 levels: every agent finished within $BUDGET + $GRACE ms (slowest $(slowest 601 "$N16") ms)"
diag < "$work/w.out"
ok "$(statuses 601 "$N16" | grep -vc ':measured$')" "prolog mode, 16 nodes, 2 levels: status measured on every node"
job=601
if links_past "$(tb_agent_spool 601 node1)" "$FABRIC"; then
  echo "# prolog mode, 16 nodes: job 601 had a link past the bound (load $(loadavg)); measuring again as job 602"
  host_us=$host_before
  tb_agents_launch 602 $BUDGET "$N16"
  tb_agents_wait
  host_after $PAIRS
  job=602
fi
check_exact $job "$N16" "$FABRIC" "prolog mode, 16 nodes, 2 levels"
timings "$(tb_agent_spool $job node1)/status.yaml" "prolog mode, 16 nodes, 2 levels"

# ---- 16 nodes, 3 levels -------------------------------------------------------------------------
FABRIC=$REPO/tests/data/agents/fabric16.conf
timeout 180 "$TB_DIR/up" "$FABRIC" "$PARAMS" > "$work/up16.out" 2>&1
rc=$?
ok $rc "up: 16 nodes on 3 levels (tests/data/agents/fabric16.conf)"
[ $rc -eq 0 ] || { diag < "$work/up16.out"; echo "Bail out! the testbed did not come up"; exit 1; }
host_us=$(host_overhead 7600 $PAIRS)
h8=$(host_overhead 7620 $PAIRS8)
[ -n "$host_us" ] && [ -n "$h8" ]
ok $? "3 levels: the nodes' stacks add ${host_us:-?} us to a round trip (4 pairs: ${h8:-?} us)"

probe_steps three -- "q16 node[1-16]" "q8 node[1-8] --method allpairs"
ok $? "sbatch -N16: two probe steps on 3 levels"
after_steps
diag < "$work/sbatch.out"
check_step q16 "$FABRIC" "probe, 16 nodes, 3 levels"
host_us=$h8 HOST_PAIRS=$PAIRS8 check_step q8 "$FABRIC" "probe, 8 nodes, 3 levels"

h=$(host_overhead 7800 $PAIRS8)
[ -n "$h" ] && host_us=$h
tb_agents_launch 611 $BUDGET "$N8"
tb_agents_wait
host_before=$host_us
host_after $PAIRS8
all_within 611 $BUDGET "$N8" > "$work/w.out"
ok $? "prolog mode, 8 nodes, 3 levels: every agent finished within $BUDGET + $GRACE ms (slowest $(slowest 611 "$N8") ms)"
diag < "$work/w.out"
# node[1-8] hang two to a leaf: each pod's four nodes are two children of two nodes, too few
# pairs for fast's gap test to tell from chance (doc/design.md), so fast leaves the pods
# unresolved and the additive method's tree stands there, reported partial with that reason;
# the tree itself must be exact (check_exact below)
s1=$(field "$(tb_agent_spool 611 node1)/status.yaml" status)
r1=$(field "$(tb_agent_spool 611 node1)/status.yaml" reason)
[ "$(statuses 611 "$N8" | grep -vc ":$s1\$")" -eq 0 ] &&
  { [ "$s1" = measured ] || { [ "$s1" = partial ] && [[ "$r1" == *unresolved* ]]; }; }
ok $? "prolog mode, 8 nodes, 3 levels: one status on every node, measured or partial for an unresolved switch ($s1${r1:+: $r1})"
# The links' bounds here come from this case's own spread (tests/testbed/accuracy with
# ACCURACY_NODES=node1,...,node8 on fabric16, 120 prolog-mode jobs back to back on a 2-core
# guest without a cpuidle driver, 2026-11-30): a link of these 8 nodes is measured by few
# pairs, and the worst uplink error per job had a median of 4-5 %, a 90th percentile of
# 8-9.5 % and a largest of 14.1 %; 4 of 120 jobs were past 10 % (one CI run failed on two jobs
# in a row at 13 %). The worst access error: largest 9.4 %. At 20 % and 15 % the tail's
# slope (the share past a bound halving every 2 points) puts one job past either below 0.2 %,
# and a check fails only when a second job is past too.
export UPLINK_TOL=0.20 ACCESS_TOL=0.15
job=611
if links_past "$(tb_agent_spool 611 node1)" "$FABRIC"; then
  echo "# prolog mode, 8 nodes, 3 levels: job 611 had a link past the bound (load $(loadavg)); measuring again as job 612"
  host_us=$host_before
  tb_agents_launch 612 $BUDGET "$N8"
  tb_agents_wait
  host_after $PAIRS8
  job=612
fi
check_exact $job "$N8" "$FABRIC" "prolog mode, 8 nodes, 3 levels"
timings "$(tb_agent_spool $job node1)/status.yaml" "prolog mode, 8 nodes, 3 levels"
unset UPLINK_TOL ACCESS_TOL

# ---- 16 nodes, 3 levels, 12 us per link: real networks' signal-to-noise -------------------------
# The step as a user runs it, at the low signal-to-noise of tests/testbed-agents.t (a level step
# of 48 us against the stacks' jitter of tens of us), with a 3 s budget: three probe steps in
# one job. Each ends well within the budget and never reports a wrong tree as measured: the
# tree is exact and measured, or the status is partial with the reason and the tree is true,
# exact or coarser (no split the fabric lacks: a guess's splits are tested, doc/design.md). A step's PMIx
# rendezvous takes ~0.6 s of its budget; in 1 of 12 steps (4 runs of this test) the budget ran
# out before the plan was complete (partial, the tree not exact). At least one step of three
# must find the exact tree (all three missing it: ~0.1 % at that rate). On 2026-11-28, on a
# machine half as fast, 0 of 3 steps were exact in 6 of 7 runs until two changes: the tasks
# read only the PMIx entries they need (the rendezvous 0.15-0.4 s instead of 1.0-1.3 s) and
# the testbed turns Linux's autogroup off (`up`: each job task is a session, and its own
# scheduling group on the nodes' one CPU); then 3 of 3 in both runs since.
PARAMS=$REPO/tests/data/agents/lowsnr-params.yaml
timeout 180 "$TB_DIR/up" "$FABRIC" "$PARAMS" > "$work/up16low.out" 2>&1
rc=$?
ok $rc "up: 16 nodes on 3 levels at 12 us per link (tests/data/agents/lowsnr-params.yaml)"
[ $rc -eq 0 ] || { diag < "$work/up16low.out"; echo "Bail out! the testbed did not come up"; exit 1; }
host_us=$(host_overhead 7900 $PAIRS)
BUDGET=3000
probe_steps low -- "l1 node[1-16]" "l2 node[1-16]" "l3 node[1-16]"
ok $? "sbatch -N16: three probe steps at 12 us per link, --budget-ms $BUDGET"
nexact=0
for name in l1 l2 l3; do
  d=$jobdir/$name
  read -r rc ms < "$jobdir/$name.rc" 2>/dev/null || { rc=x; ms=x; }
  slow=$(step_slowest "$name" "$d")
  st=$(field "$d/status.yaml" status)
  compare "$d" "$FABRIC" > "$work/low.$name" 2>&1
  e=$(awk '/^tree_exact:/ {print $2}' "$work/low.$name")
  [ "$e" = true ] && nexact=$((nexact + 1))
  [ "$rc" = 0 ] && awk -v s="${slow:-1e9}" -v b=$((BUDGET + GRACE)) 'BEGIN { exit !(s <= b) }' &&
    { { [ "$e" = true ] && [ "$st" = measured ]; } ||
      { [ "$st" = partial ] && [ -n "$(field "$d/status.yaml" reason)" ] &&
        ! grep -q 'extra split' "$work/low.$name"; }; }
  ok $? "probe at 12 us per link, step $name: exit $rc, the slowest agent done after ${slow:-?} ms, status $st$( \
    [ "$st" = measured ] || echo " ($(field "$d/status.yaml" reason))"), tree exact: ${e:-?}"
  [ "$e" = true ] || { tail -20 "$jobdir/$name.out" | diag; diag < "$work/low.$name"; }
done
[ $nexact -ge 1 ]
ok $? "probe at 12 us per link: the tree exact in $nexact of 3 steps (at least 1)"

tap_end
