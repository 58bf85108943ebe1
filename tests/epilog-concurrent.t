#!/usr/bin/env bash
# 16 epilogs writing at once into one records directory, 200 records each (and all 16 once
# under the same job id, as a requeued job would): every record present, whole and parseable,
# no temporary file left. The writers share no lock: each record is written aside, fsynced and
# linked under a name no other record holds.
set -u
cd "$(dirname "$0")/.."
build=${TOPOSCOPE_BUILD:-build}
bin=$build/bin/toposcope
epilog=$build/bin/toposcope-epilog
writers=${WRITERS:-16} per=${PER_WRITER:-200}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/tap.sh

"$bin" gen --fat-tree 4 --seed 1 > "$tmp/ft4.conf"
"$bin" sim --fabric "$tmp/ft4.conf" --profile ideal-ethernet --seed 1 --out "$tmp/sim" > /dev/null
mkdir -p "$tmp/rec"
writer() {
    local w=$1 i job
    for i in $(seq 0 "$per"); do
        job=$(( i == per ? 77 : w * 100000 + i ))
        mkdir -p "$tmp/spool$w/$job"
        cp "$tmp/sim/tree.yaml" "$tmp/sim/links.yaml" "$tmp/spool$w/$job/"
        printf 'status: measured\nunreachable: []\n' > "$tmp/spool$w/$job/status.yaml"
        "$epilog" --job $job --nodes 'n[0001-0016]' --self n0001 --spool "$tmp/spool$w" \
            --records "$tmp/rec" --user "writer$w" --no-actions || echo "writer $w job $job failed"
    done
}
start=$(date +%s%N)
for w in $(seq 1 "$writers"); do writer $w > "$tmp/w$w.log" 2>&1 & done
wait
secs=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
echo "# $writers writers x $((per + 1)) records in ${secs} s"
! grep -h . "$tmp"/w*.log | head -5 | grep . ; ok $? "no epilog failed"
want=$(( writers * (per + 1) ))
got=$(ls "$tmp/rec" | grep -c '^job-.*\.yaml$')
[ "$got" -eq "$want" ]; ok $? "$got of $want records present"
missing=0
for w in $(seq 1 "$writers"); do
    for i in $(seq 0 $((per - 1))); do
        [ -f "$tmp/rec/job-$(( w * 100000 + i )).yaml" ] || missing=$((missing+1))
    done
done
[ $missing -eq 0 ]; ok $? "every writer's every job has its record ($missing missing)"
[ "$(ls "$tmp/rec" | grep -c '^job-77\(\.[0-9]*\)\?\.yaml$')" -eq "$writers" ]; ok $? "the same job id from $writers writers: $writers records, none replaced"
"$bin" report --records "$tmp/rec" --format json > "$tmp/r.json" 2> "$tmp/r.err"
python3 -c "import json; d=json.load(open('$tmp/r.json')); assert d['records']==$want and d['skipped']==0, d" 2>&1
ok $? "the report parses all $want records, skips none"
[ ! -s "$tmp/r.err" ]; ok $? "no warning"
[ "$(ls -A "$tmp/rec" | grep -c '^\.')" -eq 0 ]; ok $? "no temporary file left, no flag index (nothing flagged)"
users=$(grep -h '^user:' "$tmp/rec"/job-77*.yaml | sort -u | wc -l)
[ "$users" -eq "$writers" ]; ok $? "each job-77 record is its own writer's ($users distinct)"

# the same writers at once, each job naming a node of its writer's as not answering: every
# job's flag reaches the flag index, which they all publish into without a lock
flagged=${FLAGGED_PER_WRITER:-15}
flag_writer() {
    local w=$1 i job
    for i in $(seq 1 "$flagged"); do
        job=$(( 900000 + w * 1000 + i ))
        mkdir -p "$tmp/spool$w/$job"
        cp "$tmp/sim/tree.yaml" "$tmp/sim/links.yaml" "$tmp/spool$w/$job/"
        printf 'status: measured\nunreachable: ["silent%02d"]\n' $w > "$tmp/spool$w/$job/status.yaml"
        "$epilog" --job $job --nodes 'n[0001-0016]' --self n0001 --spool "$tmp/spool$w" \
            --records "$tmp/rec" --no-actions 2> "$tmp/f$w-$i.err" || echo "writer $w job $job failed"
        grep -v "excess=unreachable" "$tmp/f$w-$i.err"
    done
}
for w in $(seq 1 "$writers"); do flag_writer $w > "$tmp/fw$w.log" 2>&1 & done
wait
! grep -h . "$tmp"/fw*.log | head -5 | grep . ; ok $? "no flagged epilog failed or complained"
gen=$(ls "$tmp/rec/.index" | grep '^flags\.' | sort -t. -k2 -n | tail -1)
short=0
for w in $(seq 1 "$writers"); do
    n=$(grep -c "^flag silent$(printf %02d $w) " "$tmp/rec/.index/$gen")
    [ "$n" -eq "$flagged" ] || { short=$((short+1)); echo "silent$(printf %02d $w): $n of $flagged flags"; }
done > "$tmp/short"
[ $short -eq 0 ]; ok $? "$writers writers x $flagged flagged jobs: every flag in the index ($gen)"
diag < "$tmp/short"
[ "$(ls -A "$tmp/rec" "$tmp/rec/.index" | grep -c '^\.tmp-')" -eq 0 ]; ok $? "no temporary file left beside the index"

tap_end
