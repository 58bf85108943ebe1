#!/usr/bin/env bash
# toposcope report --format prometheus and the epilog's node_exporter textfile
# (--prometheus-dir), checked against the text exposition format by tests/promtext.awk (a strict
# checker: Debian 12 ships promtool only inside the prometheus server; promtool is used too when
# it is installed). Records written here cover every status, prolog durations and a link id
# that needs escaping; the epilog's file is the report's, byte for byte.
set -u
cd "$(dirname "$0")/.."
. tests/tap.sh
tap_cli_env
check() { awk -f tests/promtext.awk "$1" > "$tmp/check.out" 2>&1 && [ "$(tail -c1 "$1" | od -An -c | tr -d ' ')" = '\n' ]; }

# the checker itself refuses what the format forbids (else a pass below would say nothing)
printf '# HELP toposcope_a x\n# TYPE toposcope_a counter\ntoposcope_a 1\n' > "$tmp/bad1"
printf '# HELP toposcope_b_total x\n# TYPE toposcope_b_total counter\ntoposcope_b_total{l="a\\q"} 1\n' > "$tmp/bad2"
printf 'toposcope_c 1\n' > "$tmp/bad3"
printf '# HELP toposcope_d x\n# TYPE toposcope_d gauge\n# TYPE toposcope_d gauge\ntoposcope_d 1\n' > "$tmp/bad4"
printf '# HELP toposcope_e x\n# TYPE toposcope_e gauge\ntoposcope_e{l="1"} 1\n# HELP toposcope_f x\n# TYPE toposcope_f gauge\ntoposcope_f 2\ntoposcope_e{l="2"} 1\n' > "$tmp/bad5"
printf '# HELP toposcope_g x\n# TYPE toposcope_g gauge\ntoposcope_g 1.2.3\n' > "$tmp/bad6"
printf '# HELP toposcope_h x\n# TYPE toposcope_h gauge\ntoposcope_h{l="1",l="2"} 1\n' > "$tmp/bad7"
printf '# HELP toposcope_i x\n# TYPE toposcope_i summary\ntoposcope_i 1\n' > "$tmp/bad8"
refused=0
for f in 1 2 3 4 5 6 7 8; do check "$tmp/bad$f" || refused=$((refused + 1)); done
[ $refused -eq 8 ]; ok $? "the checker refuses a counter without _total, a bad escape, no TYPE, two TYPEs, interleaved families, a bad float, a label twice, a summary sample without quantile ($refused of 8)"

mkdir -p "$tmp/rec"
record() {   # JOB STATUS PROLOG_S|- ANOMALIES...
    local job=$1 status=$2 prolog=$3; shift 3
    { printf 'toposcope_record: 1\njob: "%s"\nuser: "u"\nuid: 1000\ntime: %s\nstatus: "%s"\n' "$job" $((1763700000 + job)) "$status"
      [ "$prolog" != - ] && printf 'prolog_s: %s\n' "$prolog"
      printf 'nodes: "n[1-8]"\ntree: {switches: 3, depth: 2, leaf_groups: ["n[1-4]", "n[5-8]"]}\n'
      printf 'links:\n  - {link: "leaf1", kind: uplink, est_us: 2.0, lo_us: 1.9, hi_us: 2.1, samples: 30}\n'
      printf '  - {link: "n1", kind: access, est_us: 8.0, lo_us: 7.9, hi_us: 8.1, samples: 30}\n'
      if [ $# -eq 0 ]; then printf 'anomalies: []\n'; else printf 'anomalies:\n'; printf '%s\n' "$@"; fi
    } > "$tmp/rec/job-$job.yaml"
}
slow='  - {link: "leaf1", kind: uplink, reason: slow, expected_us: 2.0, observed_us: 10.0, excess_pct: 400.0, excess_us: 8.0, score: 60.0}'
odd='  - {link: "odd\"name\\x", kind: access, reason: slow, expected_us: 8.0, observed_us: 14.0, excess_pct: 75.0, excess_us: 6.0, score: 40.0}'
silent='  - {link: "n7", kind: access, reason: unreachable, score: 1000.0}'
record 1 measured 1.5 "$slow"
record 2 measured 2.5 "$slow" "$odd"
record 3 partial 0.5 "$slow" "$silent"
record 4 fallback -
record 5 missing -
printf 'not a record\n' > "$tmp/rec/notes.txt"

"$bin" report --records "$tmp/rec" --format prometheus > "$tmp/r.prom" 2> "$tmp/err"; ok $? "--format prometheus"

check "$tmp/r.prom"; ok $? "the output passes the exposition-format check"; diag < "$tmp/check.out"
if command -v promtool > /dev/null; then
    promtool check metrics < "$tmp/r.prom" > "$tmp/promtool.out" 2>&1; ok $? "promtool check metrics"; diag < "$tmp/promtool.out"
fi
has() { grep -qxF "$1" "$tmp/r.prom"; }
has 'toposcope_records 5' && has 'toposcope_records_skipped 1'; ok $? "records read and files skipped"
has 'toposcope_measurements_total{status="measured"} 2' && has 'toposcope_measurements_total{status="partial"} 1' &&
  has 'toposcope_measurements_total{status="failed"} 2'
ok $? "measurements by status: fallback and a missing status count as failed"
has 'toposcope_prolog_duration_seconds{quantile="0.5"} 1.5' && has 'toposcope_prolog_duration_seconds{quantile="0.99"} 2.5' &&
  has 'toposcope_prolog_duration_seconds_sum 4.5' && has 'toposcope_prolog_duration_seconds_count 3'
ok $? "the prolog's duration as a summary in seconds, over the records that carry it"
has 'toposcope_link_flags_total{link="leaf1",kind="uplink"} 3' && has 'toposcope_link_seen_total{link="leaf1",kind="uplink"} 5'
ok $? "per-link flag and seen counters"
has 'toposcope_link_excess_seconds{link="leaf1",kind="uplink"} 8e-06'; ok $? "excess in seconds (8 us)"
has 'toposcope_link_flags_total{link="odd\"name\\x",kind="access"} 1'; ok $? "a label value with a quote and a backslash, escaped"
has 'toposcope_link_unreachable_total{link="n7",kind="access"} 1' && ! grep -q 'toposcope_link_excess_seconds{link="n7"' "$tmp/r.prom"
ok $? "a silent node: counted unreachable, no excess sample"
grep -q '^# TYPE toposcope_prolog_duration_seconds summary$' "$tmp/r.prom" &&
  grep -q '^# TYPE toposcope_link_excess_seconds gauge$' "$tmp/r.prom"
ok $? "the prolog's duration is a summary, the excess a gauge"
"$bin" report --records "$tmp/rec" --format prometheus 2> /dev/null | cmp -s - "$tmp/r.prom"; ok $? "same records, same bytes"
"$bin" report --records "$tmp/rec" --format prometheus --top 1 2> /dev/null | grep -c '^toposcope_link_flags_total' | grep -qx 1
ok $? "--top 1: one link's series"
"$bin" report --records "$tmp/rec" --format prom 2> "$tmp/err"; [ $? -eq 2 ] && grep -q "table, yaml, json or prometheus" "$tmp/err"
ok $? "a bad --format names the formats"

# the epilog: a simulated job's record, then the textfile over the whole directory
"$bin" gen --regular 2,4 > "$tmp/f.conf"
"$bin" sim --fabric "$tmp/f.conf" --profile ideal-ethernet --seed 1 --out "$tmp/sim" > /dev/null
mkdir -p "$tmp/spool/77" "$tmp/prom"
cp "$tmp/sim/tree.yaml" "$tmp/sim/links.yaml" "$tmp/spool/77/"
printf 'job: 77\nstatus: measured\nunreachable: []\nleader_ms: 812.5\n' > "$tmp/spool/77/status.yaml"
nodes=$(awk -F'"' '/kind: node/ {print $2}' "$tmp/sim/truth.yaml" | sort | paste -sd, -)
"$epilog" --job 77 --nodes "$nodes" --self "${nodes%%,*}" --spool "$tmp/spool" --records "$tmp/rec" \
    --no-actions --prometheus-dir "$tmp/prom" 2> "$tmp/e.log"; rc=$?
[ $rc -eq 0 ] && [ -s "$tmp/prom/toposcope.prom" ]; ok $? "the epilog writes DIR/toposcope.prom (exit $rc)"
grep -q '^prolog_s: 0.812' "$tmp/rec/job-77.yaml"; ok $? "the record keeps the prolog's duration (status.yaml's leader_ms)"
check "$tmp/prom/toposcope.prom"; ok $? "the textfile passes the exposition-format check"; diag < "$tmp/check.out"
"$bin" report --records "$tmp/rec" --format prometheus 2> /dev/null | cmp -s - "$tmp/prom/toposcope.prom"
ok $? "and is what toposcope report --format prometheus prints"
grep -qxF 'toposcope_prolog_duration_seconds_count 4' "$tmp/prom/toposcope.prom"; ok $? "with the new job's prolog time"
[ -z "$(ls -A "$tmp/prom" | grep -v '^toposcope.prom$')" ]; ok $? "no temporary file left in the textfile directory"
mkdir -p "$tmp/spool/78"
cp "$tmp/sim/tree.yaml" "$tmp/sim/links.yaml" "$tmp/spool/78/"
"$epilog" --job 78 --nodes "$nodes" --self "${nodes%%,*}" --spool "$tmp/spool" --records "$tmp/rec" \
    --no-actions --log-stderr --prometheus-dir "$tmp/nope" 2> "$tmp/e.log"; rc=$?
[ $rc -eq 0 ] && [ -s "$tmp/rec/job-78.yaml" ] && grep -q "job=78 $tmp/nope/toposcope.prom not refreshed: $tmp/nope: No such file" "$tmp/e.log"
ok $? "a missing textfile directory is logged; the record is written, exit 0 ($rc)"

tap_end
