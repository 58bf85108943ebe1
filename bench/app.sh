#!/usr/bin/env bash
# bench/app.sh — make bench-app: does an MPI application nobody here wrote run faster with
# --topo-aware?
#
# HPC Challenge (Debian's hpcc; its communication tests: naturally ordered ring bandwidth and
# latency, PingPong) with one rank per node on the 8-node payoff fabrics (etc/payoff: two leaves
# of four under one spine, 100 us per link, 200 Mbit/s per node, leaf uplinks oversubscribed 4:1:
# etc/payoff/bench-app.yaml says why this rate),
# in the same sbatch job run without and with --topo-aware=compact, the two alternating:
#   (a) alternating.conf: node names alternate between the leaves, Slurm's order crosses the
#       spine at every step; compact's rankfile keeps ring neighbours on a leaf;
#   (b) by-leaf.conf: names follow the leaves, Slurm's order is already right; --topo-aware
#       must cost nothing.
# Plus the hints example's two-level broadcast against MPI_Bcast on the --topo-aware jobs' hints.
# Prints one markdown table: medians over JOBS jobs per case (default 5), the ratio, and the
# prolog time paid (status.yaml's leader_ms: rendezvous, measurement, placement).
#   JOBS=5 bench/app.sh        (as root; about 4 minutes per job pair; every job's files stay in
#                               $TB_STATE/bench-app until the next run)
#   FABRICS=by-leaf bench/app.sh  (some of the cases: their tables in $TB_STATE/bench-app/tables.md,
#                               the results files left as they are)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO/tests/testbed/lib.sh"
tb_require_root
JOBS=${JOBS:-5}
BCAST_BYTES=${BCAST_BYTES:-4000000}
PARAMS=${PARAMS:-$REPO/etc/payoff/bench-app.yaml}
ALL_FABRICS="alternating by-leaf"
FABRICS=${FABRICS:-$ALL_FABRICS}
for f in "$TB_FABEMU" "$TB_BUILD/lib/spank_toposcope.so" "$TB_BUILD/bin/toposcope-prolog" \
         "$TB_BUILD/bin/twolevel_bcast"; do
  [ -x "$f" ] || tb_die "$f is missing: run 'make' (twolevel_bcast needs mpicc)"
done
command -v hpcc > /dev/null || tb_die "hpcc is missing: run 'make deps'"
export SLURM_CONF=$TB_CONF

tb_session_lock 900
# Outside /tmp (every slurmd has its own); kept after the run for a look at any job's output,
# replaced by the next run.
# REPORT_ONLY=1 prints the tables of the last run again without running anything.
D=$TB_STATE/bench-app
[ "${REPORT_ONLY:-0}" = 1 ] || rm -rf "$D"
mkdir -p "$D"
chmod 755 "$D"
trap 'timeout 120 "$TB_DIR/down" > /dev/null 2>&1' EXIT
trap 'exit 1' TERM INT
mkdir -p "$D/bin" "$D/policies" "$D/spool"
cp "$TB_BUILD/lib/spank_toposcope.so" "$TB_BUILD/bin/toposcope-prolog" "$TB_BUILD/bin/twolevel_bcast" "$D/bin/"
cp "$REPO"/policies/*.yaml "$D/policies/"
export TESTBED_PLUGSTACK="optional $D/bin/spank_toposcope.so mode=opt-in budget_ms=2500 spool=$D/spool/%n prolog=$D/bin/toposcope-prolog policy_dir=$D/policies"
# Jumbo frames: a sixth of the frames for the emulator to forward at the same rate.
export TESTBED_MTU=9000
# The testbed runs the emulator on the last CPU and the nodes on the first (tests/testbed/up):
# left to the scheduler, the emulator shared the ranks' CPU for whole jobs at a time, and hpcc's
# ring latency came out at 280 or 500 us per job, with and without --topo-aware alike (ring
# bandwidth +-15 %).

# The job: hpcc in a directory of its own (it writes hpccoutf.txt beside hpccinf.txt), then,
# in --topo-aware jobs, the two broadcasts. Every mpirun is plain: the plugin's environment
# alone tells it the rankfile. One rank per node, ranks yield when idle: 8 busy-polling ranks
# on 2 CPUs would measure the CPUs, not the network. Every rank is bound to one core in both
# runs (the rankfile binds, so the plain run binds too): the testbed's nodes share the
# machine's two cores, and ranks bound to one of them leave the other to the fabric emulator
# and the TCP stacks, which alone makes hpcc's rings twice as fast here. Binding both ways
# leaves the order of the ranks as the only difference.
# Socket buffers of 64 KiB in both runs, one to two bandwidth-delay products of these paths:
# with the kernel's megabyte buffers hpcc's ring scattered +-13 % from job to job for one
# placement (doc/testbed.md, "hpcc's ring and socket buffers", says why and what was ruled out).
# The size follows PARAMS' rate and delays: at another rate, scale it with the rate.
cat > "$D/job.sh" <<JOB
#!/bin/bash
export $TB_OMPI_ENV OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_hwloc_base_binding_policy=core
export OMPI_MCA_btl_tcp_sndbuf=65536 OMPI_MCA_btl_tcp_rcvbuf=65536
run=\$1
mkdir -p "\$run" && cd "\$run" && cp "$REPO/bench/app/hpccinf.txt" .
[ -z "\${TOPOSCOPE_DIR:-}" ] || cp "\$TOPOSCOPE_DIR/status.yaml" "\$TOPOSCOPE_DIR/rankfile" . 2>/dev/null
mpirun -np 8 --report-bindings hpcc > hpcc.log 2>&1
if [ "\${TOPOSCOPE_PLACEMENT:-}" = placed ]; then
  mpirun -np 8 $D/bin/twolevel_bcast leaf 42 $BCAST_BYTES > bcast.log 2>&1
fi
JOB
chmod 755 "$D/job.sh"

value() {   # KEY FILE: hpcc's summary value
  sed -n "s/^$1=//p" "$2" | head -1
}
# The hosts of ranks 0, 1, ... as mpirun --report-bindings printed them: "node1 node3 ...".
rank_order() {   # HPCC-LOG
  sed -n 's/^\[\([^:]*\):[0-9]*\] MCW rank \([0-9]*\) .*/\2 \1/p' "$1" | sort -n | awk '{ printf "%s%s", (NR > 1 ? " " : ""), $2 }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

run_case() {   # FABRIC-NAME: JOBS job pairs; leaves $D/FABRIC/{plain,topo}-N
  local name=$1 i mode args
  timeout 180 "$TB_DIR/up" "$REPO/etc/payoff/$name.conf" "$PARAMS" > "$D/up-$name.out" 2>&1 ||
    { cat "$D/up-$name.out" >&2; tb_die "the testbed did not come up on $name.conf"; }
  for ((i = 1; i <= JOBS; i++)); do
    # alternate which goes first, so a drift of the machine's load favours neither
    for mode in $([ $((i % 2)) = 1 ] && echo plain topo || echo topo plain); do
      args=()
      [ "$mode" = plain ] || args=(--topo-aware=compact)
      (cd "$D" && tb_sbatch_wait 900 -N8 --ntasks-per-node=1 -t 15 "${args[@]}" \
         -o "$D/$name-$mode-$i.out" job.sh "$D/$name/$mode-$i") > /dev/null 2>&1 ||
        echo "bench-app: $name $mode job $i failed (see $D/$name-$mode-$i.out)" >&2
    done
  done
  timeout 120 "$TB_DIR/down" > /dev/null 2>&1 || true
}

# The jobs of pair i (without and with, run back to back) share the machine's state of the
# moment, so the ratio within each pair cancels what drifts between pairs: its median over the
# pairs, and the interval of two of its order statistics that holds the median ratio with at
# least 90 % confidence whatever their distribution (binomial: with 5 pairs the lowest and the
# highest, 93.8 %). "Within 5 %" is shown only when that interval lies within 0.95-1.05.
paired() {   # NAME KEY BETTER: "median (lo-hi, conf %)" of the pairs' ratios
  local name=$1 key=$2 better=$3 i p t
  for ((i = 1; i <= JOBS; i++)); do
    p=$(value "$key" "$D/$name/plain-$i/hpccoutf.txt" 2>/dev/null) || continue
    t=$(value "$key" "$D/$name/topo-$i/hpccoutf.txt" 2>/dev/null) || continue
    [ -n "$p" ] && [ -n "$t" ] && awk -v p="$p" -v t="$t" -v b="$better" 'BEGIN { print (b == "high") ? t / p : p / t }'
  done | sort -g | awk '{ r[NR] = $1 } END {
    n = NR
    if (n == 0) { print "-"; exit }
    # the largest k whose order statistics r[k], r[n+1-k] cover the median with >= 90 %:
    # 1 - 2 P(Binomial(n, 1/2) < k)
    k = 0; below = 0; term = 0.5 ^ n
    for (j = 0; 2 * (below + term) <= 0.10 && j < n / 2; j++) { below += term; term = term * (n - j) / (j + 1); k = j + 1 }
    med = n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
    if (k == 0) printf "%.2fx (too few pairs for an interval)", med
    else printf "%.2fx (%.2f-%.2f, %.1f %%)", med, r[k], r[n + 1 - k], 100 * (1 - 2 * below) }'
}

# One row: the case, a metric, its median without and with, the ratio (better / worse way
# round: above 1 when --topo-aware is better), the pairs' ratio, how many jobs gave the values.
range() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.4g-%.4g", lo, hi }'; }
row() {   # NAME LABEL KEY BETTER(high|low)
  local name=$1 label=$2 key=$3 better=$4 plain topo n
  values() { for f in "$D/$name"/$1-*/hpccoutf.txt; do value "$key" "$f"; done 2>/dev/null; }
  plain=$(values plain | median)
  topo=$(values topo | median)
  n="$(ls "$D/$name"/plain-*/hpccoutf.txt 2>/dev/null | wc -l)/$(ls "$D/$name"/topo-*/hpccoutf.txt 2>/dev/null | wc -l)"
  awk -v c="$name" -v l="$label" -v p="$plain" -v t="$topo" -v b="$better" -v n="$n" \
      -v rp="$(values plain | range)" -v rt="$(values topo | range)" -v pr="$(paired "$name" "$key" "$better")" 'BEGIN {
    r = (b == "high") ? t / p : p / t
    printf "| %s | %s | %.4g | %.4g | %.2fx | %s | %s | %s | %s |\n", c, l, p, t, r, pr, rp, rt, n }'
}

if [ "${REPORT_ONLY:-0}" != 1 ]; then
  echo "$(date -u +%Y-%m-%d) on commit $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')" > "$D/measured"
  for name in $FABRICS; do run_case "$name"; done
fi

tables() {
echo "## Application benchmark (make bench-app)"
echo
echo "HPC Challenge (Debian's hpcc $(dpkg-query -W -f='${Version}' hpcc 2>/dev/null)), 8 ranks, one per node, on the emulated"
echo "cluster (etc/payoff/$(basename "$PARAMS"): 2 leaves of 4 nodes, $(sed -n 's/^link_latency_us: *//p' "$PARAMS") us per link, $(sed -n 's/^bandwidth_mbps: *//p' "$PARAMS") Mbit/s per node, leaf uplinks 4:1,"
echo "jumbo frames), in sbatch jobs with a plain \`mpirun -np 8\`, without and with \`--topo-aware=compact\`;"
echo "$JOBS jobs per case, medians. Ratio > 1: --topo-aware is better. Measured $(cat "$D/measured" 2>/dev/null || echo '?'),"
echo "$(nproc) cores, $(uname -r). Ratio within pairs: job i without and job i with ran back to back; the"
echo "median of the pairs' ratios, and the interval between two of them that holds the median ratio with"
echo "the confidence shown, whatever their distribution (order statistics): \"within 5 %\" needs it inside 0.95-1.05."
echo
echo "| fabric | metric | without | with --topo-aware=compact | ratio of medians | ratio within pairs: median (interval, confidence) | range without | range with | jobs (without/with) |"
echo "|---|---|---|---|---|---|---|---|---|"
for name in $FABRICS; do
  row "$name" "ring bandwidth, natural order (GB/s)" NaturallyOrderedRingBandwidth_GBytes high
  row "$name" "ring latency, natural order (us)" NaturallyOrderedRingLatency_usec low
  row "$name" "ring bandwidth, random order (GB/s)" RandomlyOrderedRingBandwidth_GBytes high
  row "$name" "PingPong bandwidth, average (GB/s)" AvgPingPongBandwidth_GBytes high
  row "$name" "PingPong latency, average (us)" AvgPingPongLatency_usec low
done
echo
echo "| fabric | ranks 0-7 ran on, without | with --topo-aware=compact |"
echo "|---|---|---|"
for name in $FABRICS; do
  echo "| $name | $(rank_order "$D/$name/plain-1/hpcc.log") | $(rank_order "$D/$name/topo-1/hpcc.log") |"
done
echo
echo "| fabric | prolog time paid (leader_ms, median) | status measured | two-level broadcast of ${BCAST_BYTES} B (ms, median) | MPI_Bcast (ms, median) | ratio |"
echo "|---|---|---|---|---|---|"
for name in $FABRICS; do
  lms=$(for f in "$D/$name"/topo-*/status.yaml; do sed -n 's/^leader_ms: //p' "$f"; done 2>/dev/null | median)
  measured=$(grep -l '^status: measured' "$D/$name"/topo-*/status.yaml 2>/dev/null | wc -l)
  two=$(for f in "$D/$name"/topo-*/bcast.log; do sed -n 's/.*two-level \([0-9.]*\) ms.*/\1/p' "$f"; done 2>/dev/null | median)
  flat=$(for f in "$D/$name"/topo-*/bcast.log; do sed -n 's/.*MPI_Bcast \([0-9.]*\) ms.*/\1/p' "$f"; done 2>/dev/null | median)
  awk -v c="$name" -v l="$lms" -v m="$measured" -v j="$JOBS" -v t="$two" -v f="$flat" 'BEGIN {
    printf "| %s | %s ms | %d of %d | %s | %s | %.2fx |\n", c, l, m, j, t, f, f / t }'
done
}
# The results files hold every case: a run of some of them (FABRICS) leaves them as they are,
# else its tables would stand for the whole benchmark (one by-leaf run took the alternating
# case's rows out of bench/RESULTS.md that way).
if [ "$FABRICS" != "$ALL_FABRICS" ]; then
  tables | tee "$D/tables.md"
  echo "bench-app: FABRICS=\"$FABRICS\" is not every case (\"$ALL_FABRICS\"): bench/RESULTS.md and" \
       "bench/app/RESULTS.md left as they are; these tables are in $D/tables.md" >&2
  exit 0
fi
mkdir -p "$REPO/bench/app"
tables | tee "$REPO/bench/app/RESULTS.md"
# bench/RESULTS.md ends with this section (bench/run.sh appends the file above): replace it.
if [ -f "$REPO/bench/RESULTS.md" ]; then
  awk '/^## Application benchmark \(make bench-app\)/ { exit } { print }' "$REPO/bench/RESULTS.md" > "$D/results.md"
  { cat "$D/results.md"; cat "$REPO/bench/app/RESULTS.md"; } > "$REPO/bench/RESULTS.md"
fi
