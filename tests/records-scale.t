#!/usr/bin/env bash
# Records that scale: a records directory of 100 000 records (small ones, written here by a
# script in a few seconds). toposcope report reads them all in at most 10 s and rebuilds the flag
# index; the epilog's drain check, on that index, decides within its 5 s budget and counts only
# the jobs inside the policy's window; with the index gone, the epilog rebuilds what its budget
# allows and still ends within it. A 9 MB record naming 140 000 distinct links is reported in
# bounded time and memory. The report's bound is on its CPU time (user + system), which other
# tests running beside this one do not stretch; the epilog's is its own budget, in wall time,
# which it keeps by itself. The bounds are far above what this takes (report ~3 s of CPU, drain
# check ~0.1 s, rebuild ~2 s): they catch a return to reading every record per anomaly (19 s for
# 500 records) or to memory per link id (2.6 GB), not a busy machine.
set -u
cd "$(dirname "$0")/.."
build=${TOPOSCOPE_BUILD:-build}
bin=$build/bin/toposcope
epilog=$build/bin/toposcope-epilog
records=${RECORDS:-100000}
# in memory where there is a tmpfs: 100 000 files are 400 MB to write back to a disk, whose
# flushing would be timed with the report (it is the code's time that is bounded here)
shm=/dev/shm; [ -d $shm ] && [ -w $shm ] || shm=${TMPDIR:-/tmp}
tmp=$(mktemp -d "$shm/records-scale.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. tests/tap.sh

now=$(date +%s)
ms() { date +%s%N | cut -c1-13; }
# cpu_ms FILE: the user + system milliseconds bash's `time` wrote to FILE (TIMEFORMAT below)
TIMEFORMAT='%3U %3S'
cpu_ms() { awk '{ printf "%d", ($1 + $2) * 1000 }' "$1"; }

# job-J.yaml for J = 1..RECORDS, 30 s apart and ending now, each on 4 of 1024 nodes with their
# access links measured; one in 50 flags a node slow. "hot" did not answer in the 10th and 20th
# newest jobs and in every 1000th job older than a day (outside any 24 h window).
start=$(ms)
python3 - "$tmp/rec" "$records" "$now" <<'PY'
import os, sys
d, n, now = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(d)
head = 'toposcope_record: 1\njob: "%d"\nuser: "u"\nuid: 1000\ntime: %d\nstatus: "measured"\nnodes: "%s"\n' \
       'tree: {switches: 1, depth: 1, leaf_groups: ["%s"]}\nlinks:\n'
link = '  - {link: "%s", kind: access, est_us: 2.0, lo_us: 1.9, hi_us: 2.1, samples: 96}\n'
for i in range(1, n + 1):
    base = (i * 4) % 1024 + 1
    nodes = ["n%04d" % (base + k) for k in range(4)]
    hl = "n[%04d-%04d]" % (base, base + 3)
    t = now - (n - i) * 30
    an = []
    if i % 50 == 0:
        an.append('  - {link: "%s", kind: access, reason: slow, expected_us: 2.0, observed_us: 3.0, '
                  'excess_pct: 50.0, excess_us: 1.0, score: 9.0}\n' % nodes[1])
    if i in (n - 10, n - 20) or (i % 1000 == 0 and now - t > 86400):
        an.append('  - {link: "hot", kind: access, reason: unreachable, score: 1000}\n')
    with open("%s/job-%d.yaml" % (d, i), "w") as f:
        f.write(head % (i, t, hl, hl) + "".join(link % x for x in nodes) +
                ("anomalies:\n" + "".join(an) if an else "anomalies: []\n"))
PY
[ "$(ls "$tmp/rec" | wc -l)" -eq "$records" ]; ok $? "$records records written ($(( $(ms) - start )) ms)"

start=$(ms)
{ time "$bin" report --records "$tmp/rec" --rebuild-index --format json > "$tmp/r.json" 2> "$tmp/r.err"; } 2> "$tmp/r.time"
rc=$?
wall=$(( $(ms) - start )) took=$(cpu_ms "$tmp/r.time")
echo "# report --rebuild-index on $records records: $took ms of CPU, $wall ms wall"
[ $rc -eq 0 ] && python3 -c "
import json; d = json.load(open('$tmp/r.json')); assert d['records'] == $records and d['skipped'] == 0, d['records']
assert d['suspects'][0]['link'] == 'hot', d['suspects'][0]"
ok $? "the report reads all $records records and ranks the silent node first (exit $rc)"
[ $took -le 10000 ]; ok $? "in at most 10 s of CPU ($took ms)"
gen=$(ls "$tmp/rec/.index" | grep '^flags\.' | sort -t. -k2 -n | tail -1)
[ -n "$gen" ] && grep -q '^since 0$' "$tmp/rec/.index/$gen" &&
  [ "$(grep -c '^flag hot ' "$tmp/rec/.index/$gen")" -eq $(( 2 + (records - 2880) / 1000 )) ]
ok $? "--rebuild-index wrote the whole index ($gen): every record in it, hot's flags of the last year"
diag < "$tmp/r.err"

# the drain check on the index: hot silent again, a third job in 24 h
cat > "$tmp/scontrol" <<EOS
#!/bin/sh
echo "\$*" >> "$tmp/scontrol.log"
EOS
chmod +x "$tmp/scontrol"
printf 'placement:\n  kind: measure-only\ndrain:\n  jobs: 3\n  hours: 24\n' > "$tmp/drain.yaml"
silent_job() {   # JOB NODE [epilog options]: a measured job whose status says NODE did not answer
    local job=$1 node=$2; shift 2
    mkdir -p "$tmp/spool/$job"
    printf 'job: %s\nstatus: measured\nunreachable: ["%s"]\n' "$job" "$node" > "$tmp/spool/$job/status.yaml"
    "$epilog" --job "$job" --nodes 'n[0001-0004]' --self n0001 --spool "$tmp/spool" --records "$tmp/rec" \
        --scontrol "$tmp/scontrol" --policy "$tmp/drain.yaml" --budget-ms 5000 --log-stderr "$@"
}
start=$(ms)
silent_job 200001 hot 2> "$tmp/e1.log"; rc=$?
took=$(( $(ms) - start ))
echo "# epilog with a drain check on $records records: $took ms"
[ $rc -eq 0 ] && [ -f "$tmp/rec/job-200001.yaml" ] && [ $took -lt 5000 ]
ok $? "the epilog's drain check ends within its 5000 ms budget ($took ms, exit $rc)"
grep -q '^update NodeName=hot State=DRAIN Reason=toposcope: node did not answer in 3 jobs within 24 h (last: job 200001)$' "$tmp/scontrol.log"
ok $? "it drains hot for its 3 jobs in 24 h, its older flags left out of the window"
diag < "$tmp/e1.log"

# no index: the next flagged epilog rebuilds what 40% of its budget allows, newest first
rm -rf "$tmp/rec/.index"
start=$(ms)
silent_job 200002 cold 2> "$tmp/e2.log"; rc=$?
took=$(( $(ms) - start ))
echo "# epilog rebuilding the index from $records records: $took ms"
[ $rc -eq 0 ] && [ -f "$tmp/rec/job-200002.yaml" ] && [ $took -lt 5000 ] &&
  grep -q "job=200002 flag index rebuilt from [0-9]* records" "$tmp/e2.log" &&
  [ -n "$(ls "$tmp/rec/.index" | grep '^flags\.')" ]
ok $? "with the index gone, the epilog rebuilds it and still ends within its budget ($took ms)"
diag < "$tmp/e2.log"

# one record of 9 MB naming 140 000 distinct links, half of them flagged: bounded time and memory
mkdir "$tmp/big"
python3 - "$tmp/big/job-9.yaml" <<'PY'
import sys
n = 70000
with open(sys.argv[1], "w") as out:
    out.write('toposcope_record: 1\njob: "9"\ntime: 1763700000\nlinks:\n')
    for i in range(n):
        out.write('- {link: "{%d nodes x%07d..y%07d}", kind: uplink, est_us: 2.0}\n' % (i % 100 + 2, i, i))
    out.write('anomalies:\n')
    for i in range(n):
        out.write('- {link: "{%d nodes a%07d..b%07d}", kind: uplink, reason: slow, score: 9.0}\n' % (i % 100 + 2, i, i))
PY
size=$(stat -c %s "$tmp/big/job-9.yaml")
{ time bash -c 'ulimit -v 1000000 && exec "$@"' _ "$bin" report --records "$tmp/big" --format json \
      > "$tmp/big.json" 2> "$tmp/big.err"; } 2> "$tmp/big.time"
rc=$?
took=$(cpu_ms "$tmp/big.time")
echo "# report on one $size-byte record: $took ms of CPU"
[ $rc -eq 0 ] && python3 -c "
import json; d = json.load(open('$tmp/big.json')); assert len(d['suspects']) == 70000, len(d['suspects'])"
ok $? "a $size-byte record of 140 000 links is reported within 1 GB of address space (exit $rc)"
diag < "$tmp/big.err"
[ $took -le 10000 ]; ok $? "in at most 10 s of CPU ($took ms)"

tap_end
