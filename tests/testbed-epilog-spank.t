#!/usr/bin/env bash
# The epilog recorder behind the SPANK plugin on the emulated cluster (etc/demo: 8 nodes, 2
# leaves of 4, 200 us links): sbatch --topo-aware jobs, whose job_prolog runs the node agents and
# whose job_epilog runs toposcope-epilog (toposcope.yaml: records, epilog). Three healthy jobs
# build the baseline (toposcope report --update-baseline writes it beside the records directory,
# where the epilog looks by default); fabctl slows node3 by +100% between jobs:
#   - the next --topo-aware job's record names node3;
#   - toposcope report over the 10 jobs ranks node3 first;
#   - after `clear`, a new job's record no longer names node3;
#   - no spool directory is left.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO/tests/testbed/lib.sh"

FABRIC=$REPO/etc/demo/topology.conf
PARAMS=$REPO/etc/demo/params.yaml
PLUGIN=$TB_BUILD/lib/spank_toposcope.so
EPILOG=$TB_BUILD/bin/toposcope-epilog
TOPOSCOPE=$TB_BUILD/bin/toposcope
export SLURM_CONF=$TB_CONF

tb_tap_begin 12 "make" "$TB_FABEMU" "$PLUGIN" "$TB_PROLOG" "$EPILOG" "$TOPOSCOPE"

# Outside /tmp (every slurmd has its own): binaries, policy, records, spool
D=$TB_STATE/jobs/epilog-spank.$$
mkdir -p "$D/bin" "$D/lib" "$D/policies" "$D/records" "$D/out"
cp "$TB_PROLOG" "$EPILOG" "$D/bin/"
cp "$PLUGIN" "$D/lib/"
# Thresholds for this testbed: 200 us links, a few us of run-to-run scatter on two shared CPUs
printf 'placement:\n  kind: measure-only\nanomaly:\n  threshold_pct: 25\n  threshold_us: 40\n' > "$D/policies/links.yaml"
# the shipped measure-only too: policy_dir is where every NAME is looked up, and sbatch refuses
# a name it does not hold
cp "$REPO/policies/measure-only.yaml" "$D/policies/"
printf 'budget_ms: 2500\nspool: %s\nrecords: %s\nprolog: %s\nepilog: %s\npolicy_dir: %s\n' "$D/spool/%n" \
  "$D/records" "$D/bin/toposcope-prolog" "$D/bin/toposcope-epilog" "$D/policies" > "$D/toposcope.yaml"
export TESTBED_PLUGSTACK="optional $D/lib/spank_toposcope.so conf=$D/toposcope.yaml mode=opt-in"
tb_test_up epilog-spank 6 "$FABRIC" "$PARAMS" "up: 8 nodes on etc/demo with the plugin"
trap 'kill "$tb_watchdog" 2>/dev/null; timeout 120 "$TB_DIR/down" >/dev/null 2>&1; rm -rf "$work" "$D"' EXIT

jobid_of() { sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p' "$1"; }
# job NAME: sbatch --topo-aware=links on all 8 nodes, waited for; prints the job id
job() {
  (cd "$D/out" && tb_sbatch_wait 120 -N8 --topo-aware=links -t 2 -o "$D/out/$1.out" \
    --wrap true) > "$D/out/$1.sbatch" 2>&1
  jobid_of "$D/out/$1.sbatch"
}
record() { echo "$D/records/job-$1.yaml"; }
anomalies() { awk '/^anomalies:/ {a = 1} a && /link:/' "$(record "$1")"; }

healthy=()
for i in 1 2 3; do healthy+=("$(job h$i)"); done
n=0
for j in "${healthy[@]}"; do [ -n "$j" ] && grep -q '^  - {link: "node3", kind: access, est_us: [0-9]' "$(record "$j")" && n=$((n + 1)); done
[ $n -eq 3 ]; ok $? "three --topo-aware jobs: the plugin's epilog wrote a record with the link estimates for each ($n)"
[ $n -eq 3 ] || { cat "$D/out/h1.sbatch" "$(record "${healthy[0]}")" 2>&1 | head -30 | diag; }
"$TOPOSCOPE" report --records "$D/records" --update-baseline "$D/baseline.yaml" > "$work/r0" 2>&1
grep -q '{link: "node3", kind: access, .*count: 3}' "$D/baseline.yaml"
ok $? "report --update-baseline writes the baseline beside the records"

tb_ctl inject degrade:node3:+100% > /dev/null
ok $? "fabctl: node3's access link degraded by +100% between jobs"
slow=()
for i in 1 2 3 4 5 6 7; do slow+=("$(job s$i)"); done
anomalies "${slow[0]}" | has 'link: "node3", kind: access, reason: slow'
ok $? "the next --topo-aware job's record names node3 (job ${slow[0]})"
anomalies "${slow[0]}" | diag
named=0
for j in "${slow[@]}"; do anomalies "$j" | has '"node3"' && named=$((named + 1)); done
[ $named -ge 6 ]; ok $? "node3 named in $named of the 7 degraded jobs' records"
"$TOPOSCOPE" report --records "$D/records" > "$work/r1" 2>&1
first=$(awk '$1 == "1" {print $2}' "$work/r1")
[ "$first" = node3 ] && grep -q "^toposcope report: 10 records read, 0 skipped" "$work/r1"
ok $? "toposcope report over the 10 jobs ranks node3 first ($first)"
diag < "$work/r1"

tb_ctl clear > /dev/null
after=$(job c1)
[ -n "$after" ] && [ -f "$(record "$after")" ] && ! anomalies "$after" | has '"node3"'
ok $? "after clear, a new job's record no longer names node3 (job $after)"
anomalies "$after" | diag
left=$(find "$D/spool" -mindepth 2 -maxdepth 2 2>/dev/null | wc -l)
[ "$left" -eq 0 ]; ok $? "no job spool directory left on any node ($left)"
# (.index, the flag index the flagged jobs keep beside the records, stays: it is no temporary file)
[ "$(ls -A "$D/records" "$D/records/.index" 2>/dev/null | grep -c '^\.tmp-')" -eq 0 ]
ok $? "no temporary file left in the records directory or its flag index"

# ---- a user squats the agents' ports on the leader's node ----
# As nobody on node1 (the first node of every job's hostlist, so every job's leader), a process
# binds every UDP port it can of the agents' range and of the old unprivileged one (47000-47999).
# Three jobs under the shipped measure-only policy: the default range is privileged, so the
# squatter gets none of it, every job is measured, no node is recorded unreachable, none drains.
cp "$REPO"/policies/*.yaml "$D/policies/"
cat > "$work/squat.py" <<'EOF'
import socket, sys, time
lo, hi, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
got = []
for port in range(lo, hi + 1):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind(('0.0.0.0', port)); got.append(s)
    except OSError:
        s.close()
print(len(got), flush=True)
time.sleep(hold)
EOF
squatters=()
unsquat() {   # end every squatter and wait until it has, so that its ports are free again
  kill "${squatters[@]}" 2>/dev/null
  wait "${squatters[@]}" 2>/dev/null
  squatters=()
}
squat() {   # LO HI SECONDS OUT: nobody binds LO..HI on node1 in the background; OUT gets the count
  "$TB_NODE_EXEC" node1 setpriv --reuid=65534 --regid=65534 --clear-groups \
    /usr/bin/python3 - "$1" "$2" "$3" < "$work/squat.py" > "$4" 9>&- &
  squatters+=($!)
  tb_wait_for 10 test -s "$4"
}
unreachable_named() {   # JOB...: how many of the jobs' records name a node unreachable
  local j n=0
  for j in "$@"; do grep -q 'unreachable' "$(record "$j")" 2>/dev/null && n=$((n + 1)); done
  echo $n
}
mo_job() {   # NAME: like job, under the shipped measure-only policy
  (cd "$D/out" && tb_sbatch_wait 120 -N8 --topo-aware=measure-only -t 2 -o "$D/out/$1.out" \
    --wrap true) > "$D/out/$1.sbatch" 2>&1
  jobid_of "$D/out/$1.sbatch"
}
no_drain() { ! SLURM_CONF=$TB_CONF sinfo -h -N -o '%N %t' | has -E 'drain|drng|down|fail'; }
squat 900 999 60 "$work/squat-priv.n"
squat 47000 47999 60 "$work/squat-old.n"
sq=()
for i in 1 2 3; do sq+=("$(mo_job q$i)"); done
unsquat
measured=0
for j in "${sq[@]}"; do grep -Eq '^status: "?measured' "$(record "$j")" 2>/dev/null && measured=$((measured + 1)); done
[ "$(cat "$work/squat-priv.n")" = 0 ] && [ "$measured" -eq 3 ] && [ "$(unreachable_named "${sq[@]}")" -eq 0 ] && no_drain
ok $? "ports squatted by nobody on node1 (got $(cat "$work/squat-priv.n") of 900-999, $(cat "$work/squat-old.n") of 47000-47999): 3 measure-only jobs measured ($measured), none names a node unreachable, no node drained"

# A site that chose an unprivileged range (port_base 47000, port_span 10), and a user who binds
# all of it on node1: every leader fails to listen, so each job loses its measurement (status
# fallback, the job runs) but that is never evidence against the other nodes: no record names
# a node unreachable, none drains.
cp "$D/toposcope.yaml" "$work/toposcope.yaml.saved"
printf 'port_base: 47000\nport_span: 10\n' >> "$D/toposcope.yaml"
squat 47000 47009 60 "$work/squat-site.n"
sf=()
for i in 1 2 3; do sf+=("$(mo_job f$i)"); done
unsquat
cp "$work/toposcope.yaml.saved" "$D/toposcope.yaml"
fellback=0
for j in "${sf[@]}"; do grep -Eq '^status: "?fallback' "$(record "$j")" 2>/dev/null && fellback=$((fellback + 1)); done
[ "$(cat "$work/squat-site.n")" = 10 ] && [ "$fellback" -eq 3 ] && [ "$(unreachable_named "${sf[@]}")" -eq 0 ] && no_drain
ok $? "an unprivileged range squatted on node1 ($(cat "$work/squat-site.n") of 10 ports): 3 jobs fell back ($fellback), none names a node unreachable, no node drained"
[ "$fellback" -eq 3 ] || for j in "${sf[@]}"; do head -20 "$(record "$j")"; done 2>&1 | diag
tap_end
