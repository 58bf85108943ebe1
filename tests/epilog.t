#!/usr/bin/env bash
# toposcope-epilog and toposcope report end to end on simulated jobs: the prolog's spool files
# come from `toposcope sim` on a 128-node fat tree (what the node agents write is the same
# ts_measure_write output). Records, baseline rebuilt from them, a degraded leaf uplink named
# in every job's record and ranked first by the report, syslog lines, AdminComment and drain
# through scontrol (a stand-in that logs its arguments), the spool removed, topology.conf
# mismatches, inferred topology, formats, the picture, and broken files skipped by name.
set -u
cd "$(dirname "$0")/.."
. tests/tap.sh
tap_cli_env
policy=bench/anomaly-ethernet.yaml

"$bin" gen --fat-tree 8 --seed 3 > "$tmp/ft8.conf"
"$bin" sim --fabric "$tmp/ft8.conf" --profile ideal-ethernet --fabric-seed 2 --seed 1 --out "$tmp/probe" > /dev/null
nodes=$(awk -F'"' '/kind: node/ {print $2}' "$tmp/probe/truth.yaml" | sort)
hostlist="n[0001-0128]"
leader=n0001
leaf=$(awk -F'"' '/kind: switch/ && /leaf/ {print $2}' "$tmp/probe/truth.yaml" | sort | sed -n 7p)
victim=$(echo "$nodes" | sed -n 77p)      # silent in one job
slow=$(echo "$nodes" | sed -n 33p)        # slow in the drain jobs
mkdir -p "$tmp/rec" "$tmp/spool"
# a stand-in scontrol: logs its arguments; `show node N` prints the reason in $tmp/reason-N, if any
cat > "$tmp/scontrol" <<EOS
#!/bin/sh
echo "\$*" >> "$tmp/scontrol.log"
if [ "\$1" = show ] && [ "\$2" = node ]; then
    echo "NodeName=\$3 Arch=x86_64 CoresPerSocket=1"
    echo "   State=IDLE ThreadsPerCore=1"
    [ -f "$tmp/reason-\$3" ] && echo "   Reason=\$(cat "$tmp/reason-\$3") [root@2026-11-20T10:00:00]"
fi
exit 0
EOS
chmod +x "$tmp/scontrol"

# job JOB SEED [INJECT...]: the prolog's files for a job on all 128 nodes, as sim measures them
spool_job() {
    local job=$1 seed=$2; shift 2
    "$bin" sim --fabric "$tmp/ft8.conf" --profile ideal-ethernet --fabric-seed 2 --seed "$seed" "$@" --out "$tmp/sim-$job" > /dev/null || return 1
    mkdir -p "$tmp/spool/$job"
    cp "$tmp/sim-$job/tree.yaml" "$tmp/sim-$job/links.yaml" "$tmp/spool/$job/"
    printf 'job: %s\nstatus: measured\nunreachable: []\n' "$job" > "$tmp/spool/$job/status.yaml"
}
# (a budget far above the default 5 s: make check runs this beside the package build and the
# CPU-heavy unit tests, and an epilog cut by its budget records less than these checks want;
# the budget's own behaviour has tests of its own below, which pass theirs after this one)
run_epilog() {   # JOB [options]
    local job=$1; shift
    "$epilog" --job "$job" --nodes "$hostlist" --self $leader --uid 0 --spool "$tmp/spool" \
        --records "$tmp/rec" --scontrol "$tmp/scontrol" --log-stderr --budget-ms 60000 "$@"
}

# five healthy jobs without a baseline: records with estimates, nothing flagged
for j in 101 102 103 104 105; do spool_job $j $j; run_epilog $j --topology "$tmp/ft8.conf" 2>> "$tmp/e0.log"; done
[ "$(ls "$tmp/rec" | wc -l)" -eq 5 ]; ok $? "five records written"
[ ! -e "$tmp/spool/101" ]; ok $? "the leader removed the job's spool directory after its record"
grep -q '^toposcope_record: 1' "$tmp/rec/job-101.yaml" && grep -q '^user: "root"' "$tmp/rec/job-101.yaml" &&
  grep -q '^nodes: "n\[0001-0128\]"' "$tmp/rec/job-101.yaml" && grep -q 'leaf_groups: \["' "$tmp/rec/job-101.yaml"
ok $? "a record holds job, user, nodes and the leaf groups"
grep -q "{link: \"$leaf\", kind: uplink, est_us:" "$tmp/rec/job-101.yaml"; ok $? "uplinks are named by the admin's switches (--topology)"
grep -q '^anomalies: \[\]' "$tmp/rec/job-105.yaml"; ok $? "no baseline, no slow link"

"$bin" report --records "$tmp/rec" --update-baseline "$tmp/baseline.yaml" > "$tmp/r0" 2>&1; ok $? "report --update-baseline"
links=$(grep -c '^  - {link:' "$tmp/baseline.yaml")
[ "$links" -ge 150 ] && grep -q "{link: \"$leaf\", kind: uplink, .*count: 5}" "$tmp/baseline.yaml"
ok $? "the baseline has every link, each from 5 jobs ($links links)"

# a non-leader node only removes its own spool
spool_job 199 199
"$epilog" --job 199 --nodes "$hostlist" --self n0002 --spool "$tmp/spool" --records "$tmp/rec" --baseline "$tmp/baseline.yaml"
[ ! -e "$tmp/rec/job-199.yaml" ] && [ ! -e "$tmp/spool/199" ]; ok $? "another node writes no record and removes its spool"

# ten jobs with the leaf uplink slowed by 50%, one also with a silent node. (These check what the
# epilog and the report do with a slow link, not how small an excess shows: the bench measures
# that. At 30% the link's score sat at 5-8 against the policy's 5, and the baseline of five
# healthy jobs moved every job's score together: with the jobs' seeds shifted, 10 of 10 jobs
# named the link in 11 of 20 shifts, as few as 6 in two. At 50%, 20 of 20 shifts, before and
# after the second look of 2026-11-30.)
for j in $(seq 201 210); do
    extra=(); [ $j = 210 ] && extra=(--inject "dead:$victim")
    spool_job $j $j --inject "degrade:$leaf:+50%" "${extra[@]}"
    [ $j = 210 ] && sed -i "s/^unreachable: \[\]/unreachable: [\"$victim\"]/" "$tmp/spool/$j/status.yaml"
    run_epilog $j --baseline "$tmp/baseline.yaml" --policy "$policy" --topology "$tmp/ft8.conf" 2>> "$tmp/e1.log"
done
named=0
for j in $(seq 201 210); do
    awk '/^anomalies:/ {a=1} a && /link:/' "$tmp/rec/job-$j.yaml" | grep -q "link: \"$leaf\", kind: uplink, reason: slow" && named=$((named+1))
done
[ $named -eq 10 ]; ok $? "every degraded job's record names $leaf ($named of 10)"
grep -q "expected_us: .*observed_us: .*excess_pct: .*score:" "$tmp/rec/job-201.yaml"; ok $? "an anomaly carries expected, observed, excess and score"
lines=$(grep -c "^toposcope\[[0-9]*\]: job=20[0-9] link=$leaf excess=+[0-9.]*%" "$tmp/e1.log")
[ "$lines" -ge 9 ]; ok $? "one syslog line per anomaly: toposcope[pid]: job=... link=... excess=... ($lines)"
grep -q "job=210 link=$victim excess=unreachable" "$tmp/e1.log"; ok $? "the silent node is logged"
[ ! -s "$tmp/scontrol.log" ]; ok $? "no scontrol without --admin-comment or a drain rule"

# the leader itself failed (status fallback lists every node): the record keeps the status and
# blames no node; a missing status.yaml blames none either
spool_job 220 220
{ printf 'job: 220\nstatus: fallback\nreason: "only 1 of 128 agents joined before the rendezvous ended"\n'
  printf 'unreachable: ['; echo "$nodes" | sed 's/.*/"&"/' | paste -sd, | tr -d '\n'; printf ']\n'; } > "$tmp/spool/220/status.yaml"
run_epilog 220 --baseline "$tmp/baseline.yaml" --policy "$policy" --topology "$tmp/ft8.conf" 2> "$tmp/e220.log"
grep -q '^status: "fallback"' "$tmp/rec/job-220.yaml" && ! grep -q 'reason: unreachable' "$tmp/rec/job-220.yaml"
ok $? "status fallback: recorded as fallback, no node unreachable"
grep -q "job=220 measurement status=fallback (only 1 of 128 agents joined" "$tmp/e220.log" && ! grep -q "excess=unreachable" "$tmp/e220.log"
ok $? "status fallback: logged with its reason, no unreachable line"
spool_job 221 221
rm "$tmp/spool/221/status.yaml"
run_epilog 221 --baseline "$tmp/baseline.yaml" --policy "$policy" --topology "$tmp/ft8.conf" 2>/dev/null
grep -q '^status: "missing"' "$tmp/rec/job-221.yaml" && ! grep -q 'reason: unreachable' "$tmp/rec/job-221.yaml"
ok $? "no status.yaml: recorded as missing, no node unreachable"
rm -f "$tmp/rec/job-220.yaml" "$tmp/rec/job-221.yaml"

"$bin" report --records "$tmp/rec" --topology "$tmp/ft8.conf" > "$tmp/r1" 2> "$tmp/r1.err"; ok $? "report"
first=$(awk '$1 == "1" {print $2}' "$tmp/r1")
[ "$first" = "$leaf" ]; ok $? "report ranks the degraded uplink first ($first)"
awk '$1 == "1"' "$tmp/r1" | grep -q " 10/15 "; ok $? "with 10 of the 15 jobs flagging it"
grep -q "nodes whose measured leaf switch differs from topology.conf: 0" "$tmp/r1"; ok $? "the measured leaves agree with topology.conf"

# --format yaml and json
"$bin" report --records "$tmp/rec" --format json > "$tmp/r.json" && python3 -c "
import json,sys; d=json.load(open('$tmp/r.json')); assert d['records']==15, d['records']; assert d['suspects'][0]['link']=='$leaf'; assert d['suspects'][0]['flagged']==10"
ok $? "--format json parses and agrees"
"$bin" report --records "$tmp/rec" --format yaml > "$tmp/r.yaml" && python3 -c "
import yaml; d=yaml.safe_load(open('$tmp/r.yaml')); assert d['suspects'][0]['link']=='$leaf'; assert d['suspects'][0]['first_seen'] <= d['suspects'][0]['last_seen']" 2> "$tmp/py.err"
ok $? "--format yaml parses and agrees $(head -c 300 "$tmp/py.err")"

# admin's topology.conf with two nodes swapped between leaves: both listed
a=$(grep -m1 "^SwitchName=$leaf " "$tmp/ft8.conf" | grep -o 'Nodes=[^ ]*' | cut -d= -f2)
"$bin" sim --fabric "$tmp/ft8.conf" --profile ideal-ethernet --method pmm --no-links --out "$tmp/pmm" > /dev/null
x=$(awk -F'"' -v l="$leaf" '/kind: node/ && $4 == l {print $2; exit}' "$tmp/pmm/truth.yaml")
other=$(awk -F'"' '/kind: switch/ && /leaf/ {print $2}' "$tmp/probe/truth.yaml" | sort | sed -n 20p)
y=$(awk -F'"' -v l="$other" '/kind: node/ && $4 == l {print $2; exit}' "$tmp/pmm/truth.yaml")
python3 - "$tmp/ft8.conf" "$x" "$y" > "$tmp/swapped.conf" <<'PY'
import re, sys
path, x, y = sys.argv[1:]
# expand, swap, write plain lists
def expand(h):
    m = re.match(r'^(\w+?)\[(.*)\]$', h)
    if not m: return h.split(',')
    out = []
    for part in m.group(2).split(','):
        if '-' in part:
            a, b = part.split('-'); w = len(a)
            out += [m.group(1) + str(i).zfill(w) for i in range(int(a), int(b) + 1)]
        else: out.append(m.group(1) + part)
    return out
for line in open(path):
    m = re.search(r'Nodes=(\S+)', line)
    if m:
        ns = [y if n == x else x if n == y else n for n in expand(m.group(1))]
        line = line.replace(m.group(0), 'Nodes=' + ','.join(ns))
    sys.stdout.write(line)
PY
"$bin" report --records "$tmp/rec" --topology "$tmp/swapped.conf" > "$tmp/r2" 2>&1
grep -q "  $x: topology.conf says $other, measured with the nodes of $leaf (15 jobs" "$tmp/r2" &&
  grep -q "  $y: topology.conf says $leaf, measured with the nodes of $other" "$tmp/r2"
ok $? "two nodes swapped in topology.conf are listed with where they were measured ($x, $y)"

"$bin" report --records "$tmp/rec" --write-topology "$tmp/inferred.conf" --nodes "$hostlist" > /dev/null 2>&1 &&
  "$bin" sim --fabric "$tmp/inferred.conf" --profile ideal-ethernet --method pmm --no-links --out "$tmp/inf" > /dev/null 2>&1
ok $? "--write-topology writes a topology.conf that toposcope reads back"
[ "$(grep -c '^SwitchName=leaf' "$tmp/inferred.conf")" -eq 32 ] &&
  grep -q "^SwitchName=leaf[0-9]* Nodes=$(echo "$a" | sed 's/\[/\\[/; s/\]/\\]/')\$" "$tmp/inferred.conf"
ok $? "32 inferred leaves of 4 nodes, $leaf's among them"

"$bin" report --records "$tmp/rec" --topology "$tmp/ft8.conf" --svg "$tmp/r.svg" > /dev/null 2>&1 &&
  grep -q "class=\"flagged\".* stroke=\"#ff0000\" stroke-width=\"8.0\"><title>$leaf: rank 1," "$tmp/r.svg"
ok $? "--svg draws the worst link red and widest"

# corrupt, truncated, foreign: named and skipped, the report still runs
cp "$tmp/rec/job-205.yaml" "$tmp/keep.yaml"
head -c 700 "$tmp/keep.yaml" > "$tmp/rec/job-900.yaml"
printf 'toposcope_record: 1\njob: "901"\ntime: 5\nlinks: [\n' > "$tmp/rec/job-901.yaml"
printf '\x00\x01binary\xff' > "$tmp/rec/core.1234"
printf 'SwitchName=s1 Nodes=a\n' > "$tmp/rec/notes.txt"
printf 'toposcope_record: 7\njob: "x"\n' > "$tmp/rec/job-902.yaml"
mkdir "$tmp/rec/subdir"
"$bin" report --records "$tmp/rec" > "$tmp/r3" 2> "$tmp/r3.err"; rc=$?
[ $rc -eq 0 ] && [ "$(awk '$1 == "1" {print $2}' "$tmp/r3")" = "$leaf" ]; ok $? "the report still runs and ranks (exit $rc)"
for f in job-900.yaml job-901.yaml core.1234 notes.txt job-902.yaml subdir; do
    grep -q "warning: skipping $tmp/rec/$f: " "$tmp/r3.err"; ok $? "$f skipped with a warning naming it"
done
grep -q "15 records read, 6 skipped" "$tmp/r3"; ok $? "15 records read, 6 skipped"
rm -rf "$tmp/rec/job-90"* "$tmp/rec/core.1234" "$tmp/rec/notes.txt" "$tmp/rec/subdir"

# without --baseline the epilog reads baseline.yaml beside the records directory (+100%: this
# checks where the baseline comes from, so the slow link must stand out in any one run)
spool_job 250 211 --inject "degrade:$leaf:+100%"
run_epilog 250 --policy "$policy" --topology "$tmp/ft8.conf" 2>/dev/null
awk '/^anomalies:/ {a=1} a && /link:/' "$tmp/rec/job-250.yaml" | grep -q "link: \"$leaf\""
ok $? "the default baseline is baseline.yaml beside the records directory"
rm -f "$tmp/rec/job-250.yaml"

# --since: records older than the window are left out
spool_job 300 300
run_epilog 300 --time $(( $(date +%s) - 10 * 86400 )) 2>/dev/null
"$bin" report --records "$tmp/rec" --since 7d --format json | python3 -c "import json,sys; assert json.load(sys.stdin)['records']==15"
ok $? "--since 7d leaves out a 10-day-old record"

# actions: AdminComment, and drain only after 3 distinct jobs within 24 h, once
printf 'placement:\n  kind: measure-only\nanomaly:\n  threshold_pct: 5\n  threshold_us: 0.3\ndrain:\n  jobs: 3\n  hours: 24\n' > "$tmp/drain.yaml"
: > "$tmp/scontrol.log"
for j in 401 402; do
    spool_job $j $j --inject "degrade:$slow:+30%"
    run_epilog $j --baseline "$tmp/baseline.yaml" --policy "$tmp/drain.yaml" --admin-comment 2>/dev/null
done
grep -q "^update JobId=401 AdminComment=toposcope: 1 slow link: $slow" "$tmp/scontrol.log"; ok $? "AdminComment set through scontrol"
! grep -q "State=DRAIN" "$tmp/scontrol.log"; ok $? "two jobs' evidence drains nothing"
spool_job 403 403 --inject "degrade:$slow:+30%"
run_epilog 403 --baseline "$tmp/baseline.yaml" --policy "$tmp/drain.yaml" 2> "$tmp/e4.log"
grep -q "^update NodeName=$slow State=DRAIN Reason=toposcope: access link slow in 3 jobs" "$tmp/scontrol.log"; ok $? "the third job drains $slow"
grep -q "job=403 link=$slow node drained" "$tmp/e4.log"; ok $? "the drain is logged"
spool_job 404 404 --inject "degrade:$slow:+30%"
run_epilog 404 --baseline "$tmp/baseline.yaml" --policy "$tmp/drain.yaml" 2> "$tmp/e5.log"
[ "$(grep -c State=DRAIN "$tmp/scontrol.log")" -eq 1 ] && grep -q "drain held back by the rate limit" "$tmp/e5.log"
ok $? "a fourth job does not drain again (rate limit)"
before=$(wc -l < "$tmp/scontrol.log")
spool_job 405 405 --inject "degrade:$slow:+30%"
run_epilog 405 --baseline "$tmp/baseline.yaml" --policy "$tmp/drain.yaml" --no-actions 2>/dev/null
[ "$(wc -l < "$tmp/scontrol.log")" -eq "$before" ] && grep -q "link: \"$slow\"" "$tmp/rec/job-405.yaml"
ok $? "--no-actions records but runs no scontrol"

# the drain check reads the flag index beside the records, which the flagged jobs wrote
gen=$(ls "$tmp/rec/.index" | grep '^flags\.' | sort -t. -k2 -n | tail -1)
[ -n "$gen" ] && [ "$(grep -c "^flag $slow [0-9]* 40[1-5] slow\$" "$tmp/rec/.index/$gen")" -eq 5 ]
ok $? "the flag index ($gen) holds the 5 jobs that flagged $slow"

# drain reasons say what was seen; a node with another tool's reason is left alone; one job's
# evidence never drains, whatever the policy says
printf 'placement:\n  kind: measure-only\ndrain:\n  jobs: 1\n  hours: 24\n' > "$tmp/drain1.yaml"
silent=$(echo "$nodes" | sed -n 90p) nhc=$(echo "$nodes" | sed -n 91p)
echo "NHC: check_fs_mount: /scratch not mounted" > "$tmp/reason-$nhc"
silent_job() {   # JOB NODE...: a measured job whose status names NODEs as not answering
    local job=$1; shift
    spool_job $job 1
    printf 'job: %s\nstatus: measured\nunreachable: [%s]\n' $job "$(printf '"%s",' "$@" | sed 's/,$//')" > "$tmp/spool/$job/status.yaml"
    run_epilog $job --policy "$tmp/drain1.yaml" --drain-per-hour 100 ${SILENT_ARGS:-} 2>> "$tmp/e6.log"
}
: > "$tmp/scontrol.log"
silent_job 601 "$silent" "$nhc"
! grep -q "State=DRAIN" "$tmp/scontrol.log"; ok $? "drain jobs: 1 still wants a second job"
silent_job 602 "$silent" "$nhc"
grep -q "^update NodeName=$silent State=DRAIN Reason=toposcope: node did not answer in 2 jobs within 24 h (last: job 602)\$" "$tmp/scontrol.log"
ok $? "a node silent in 2 jobs is drained saying so"
grep -q "^show node $nhc\$" "$tmp/scontrol.log" && ! grep -q "NodeName=$nhc State=DRAIN" "$tmp/scontrol.log" &&
  grep -q "job=602 link=$nhc flagged by 2 jobs in 24 h: not drained, the node already has a reason: NHC: check_fs_mount: /scratch not mounted\$" "$tmp/e6.log"
ok $? "a node whose reason another tool set is asked about, logged and left alone"
echo "toposcope: node did not answer in 2 jobs within 24 h (last: job 602)" > "$tmp/reason-$silent"

# marks dated in the future (a clock far ahead) neither hold a drain back nor count
ahead=$(echo "$nodes" | sed -n 92p) future=$(( $(date +%s) + 86400 ))
touch "$tmp/rec/.index/drain-$ahead-$future" "$tmp/rec/.drain-$ahead-$future"
: > "$tmp/scontrol.log"
silent_job 603 "$ahead"; silent_job 604 "$ahead"
grep -q "^update NodeName=$ahead State=DRAIN Reason=toposcope: node did not answer in 2 jobs" "$tmp/scontrol.log" &&
  grep -q "ignoring $tmp/rec/.index/drain-$ahead-$future: dated [0-9]* s in the future" "$tmp/e6.log"
ok $? "a future-dated drain mark is ignored, and said to be"

# a corrupt index is rebuilt from the records, and the stale temporary files of a stopped
# epilog go with the first rebuild (fresh ones stay: an epilog may be writing them)
touch -d '2 hours ago' "$tmp/rec/.tmp-555-1-dead"; touch "$tmp/rec/.tmp-556-1-live"
newest=$(ls "$tmp/rec/.index" | grep '^flags\.' | sort -t. -k2 -n | tail -1 | cut -d. -f2)
printf 'toposcope_flags 1\nsince 0\nflag broken\n' > "$tmp/rec/.index/flags.$((newest + 1))"
rm -f "$tmp/rec/.index/flags.$newest"
# (a budget that lets the rebuild read every record even under valgrind, tests/memcheck.t: the
# rebuild's own time bound is records-scale.t's to check)
SILENT_ARGS="--budget-ms 120000" silent_job 605 "$(echo "$nodes" | sed -n 93p)"
grep -q "job=605 flag index unusable, rebuilt from the records: $tmp/rec/.index/flags.$((newest + 1)):3: a flag is" "$tmp/e6.log" &&
  grep -q "job=605 flag index rebuilt from [0-9]* records\$" "$tmp/e6.log" &&
  [ "$(grep -c "^flag $slow " "$tmp/rec/.index/flags.$((newest + 2))")" -eq 5 ]
ok $? "a corrupt index is named, rebuilt from the records (flags.$((newest + 2)): $slow's 5 flags again)"
[ ! -e "$tmp/rec/.tmp-555-1-dead" ] && [ -e "$tmp/rec/.tmp-556-1-live" ]
ok $? "a stale temporary file is removed, a fresh one kept"
rm -f "$tmp/rec/.tmp-556-1-live" "$tmp/rec/.drain-$ahead-$future"

# bad input
"$epilog" --nodes x --self x 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q -- "--job" "$tmp/err"; ok $? "no job id: exit 2 naming --job"
# the job id names the spool directory removed and the record written: never a path
mkdir -p "$tmp/jobdot/spool" "$tmp/jobdot/rec"
for bad in . .. ../rec ._1 1/2; do
    "$epilog" --job "$bad" --nodes x --self x --spool "$tmp/jobdot/spool" --records "$tmp/jobdot/rec" 2> "$tmp/err"; rc=$?
    [ $rc -eq 2 ] && grep -q -- "--job .*wants a job id (a digit first" "$tmp/err" && [ -d "$tmp/jobdot/spool" ] &&
      [ -z "$(ls -A "$tmp/jobdot/rec")" ]
    ok $? "--job '$bad' is refused (exit $rc), nothing removed or written"
done
# a policy file that does not load costs its thresholds, never the record
spool_job 701 3
printf 'placement:\n  kind: compact\nanomaly:\n  threshold_pct: lots\n' > "$tmp/badpolicy.yaml"
run_epilog 701 --policy "$tmp/badpolicy.yaml" 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "$tmp/badpolicy.yaml:4:.*threshold_pct.*default thresholds" "$tmp/err" && [ -s "$tmp/rec/job-701.yaml" ]
ok $? "a bad --policy: exit 2 naming FILE:LINE, and the record written all the same"
# the plugin passes the time it started the epilog (--budget-from): a budget that began 10 s
# before is spent, and the epilog stops at once, writing nothing
spool_job 702 4
mkdir -p "$tmp/rec-late"
from=$(monotonic_us_ago 10000)
t0=$(date +%s%N)
run_epilog 702 --records "$tmp/rec-late" --budget-ms 5000 --budget-from "$from" 2> "$tmp/err"; rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ $rc -eq 1 ] && grep -q 'time budget exhausted' "$tmp/err" && [ ! -e "$tmp/rec-late/job-702.yaml" ] && [ $ms -lt 2000 ]
ok $? "a 5 s budget begun 10 s before (--budget-from): the epilog stops at once (exit $rc, $ms ms), no record"
run_epilog 703 --budget-from 99999999999999999 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q -- '--budget-from wants the time the budget began' "$tmp/err"
ok $? "--budget-from in the future: exit 2, says so"
"$bin" report --records "$tmp/nope" 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "$tmp/nope" "$tmp/err"; ok $? "a missing records directory: exit 2 naming it"
"$bin" report --records "$tmp/rec" --since 7x 2> "$tmp/err"; [ $? -eq 2 ]; ok $? "--since 7x is refused"
ls -a "$tmp/rec" | grep -q '^\.tmp-' ; [ $? -ne 0 ]; ok $? "no temporary file left behind"

tap_end
