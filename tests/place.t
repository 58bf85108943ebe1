#!/usr/bin/env bash
# toposcope place end to end: every output of every shipped policy, --hwloc-dir with a partial
# node, multi-core ranks, the rankfile checked against the hwloc XML, and refusals that write
# nothing (exit status 2, FILE:LINE:COLUMN in the message).
set -u
cd "$(dirname "$0")/.."
bin=${TOPOSCOPE_BUILD:-build}/bin/toposcope
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. tests/tap.sh

tree=tests/data/place/tree.yaml          # 8 nodes, inferred by toposcope sim on etc/demo
xml=tests/data/hwloc/2pack-2numa-8core-ht.xml

"$bin" --help | grep -q "place"; ok $? "toposcope --help lists place"
"$bin" place --help > "$tmp/help"; ok $? "place --help"
for opt in --tree --hwloc-xml --hwloc-dir --cpuset --policy --ranks --cpus-per-rank --out --env-rank; do
    grep -q -- "$opt" "$tmp/help"; ok $? "place --help documents $opt"
done

# Every shipped policy writes its files; measure-only no placement.
for policy in compact spread block; do
    "$bin" place --tree $tree --hwloc-xml $xml --policy $policy --ranks 40 --out "$tmp/$policy" --no-svg > "$tmp/log" 2>&1
    ok $? "place --policy $policy, 40 ranks"
    for f in rankfile hostfile machinefile hints.yaml hints.env topology.conf tree.txt tree.dot; do
        [ -s "$tmp/$policy/$f" ]; ok $? "$policy writes $f"
    done
    [ "$(wc -l < "$tmp/$policy/rankfile")" -eq 40 ]; ok $? "$policy: 40 rankfile lines"
    [ "$(wc -l < "$tmp/$policy/hostfile")" -eq 40 ]; ok $? "$policy: 40 hostfile lines"
    [ "$(awk -F: '{s += $2} END {print s}' "$tmp/$policy/machinefile")" -eq 40 ]; ok $? "$policy: machinefile counts add up to 40"
    ls -a "$tmp/$policy" | grep -q '\.tmp\.' && bad=1 || bad=0
    ok $bad "$policy leaves no temporary file"
done
# rankfile against hostfile: same host per rank
paste -d' ' <(sed 's/^rank \([0-9]*\)=\([^ ]*\) .*/\1 \2/' "$tmp/spread/rankfile") "$tmp/spread/hostfile" |
    awk '$2 != $3 {bad = 1} END {exit bad}'
ok $? "spread: hostfile line r names rankfile rank r's host"
[ "$(sed -n 1,2p "$tmp/spread/hostfile" | sort -u | wc -l)" -eq 2 ]; ok $? "spread: ranks 0 and 1 on different nodes"
[ "$(sed -n 1,32p "$tmp/compact/hostfile" | sort -u)" = node1 ]; ok $? "compact: ranks 0-31 all on node1"
grep -q "^rank 16=node1 slot=1:0$" "$tmp/compact/rankfile"; ok $? "compact: rank 16 opens package 1"
grep -q "OMPI_MCA_rmaps_rank_file_path=$(cd "$tmp/compact" && pwd -P)/rankfile" "$tmp/compact/hints.env"
ok $? "compact exports the rankfile to Open MPI through hints.env"
! grep -q '^PRTE_MCA' "$tmp/compact/hints.env"
ok $? "and not PRRTE's mapping policy (Open MPI 5.0's mpirun exits 251 on it)"
grep -qx "LSB_AFFINITY_HOSTFILE=$(cd "$tmp/compact" && pwd -P)/lsf-affinity" "$tmp/compact/hints.env" &&
  [ "$(sed 's/^rank [0-9]*=//; s/ slot=.*//' "$tmp/compact/rankfile")" = "$(cut -d' ' -f1 "$tmp/compact/lsf-affinity")" ] &&
  [ "$(wc -l < "$tmp/compact/lsf-affinity")" = "$(wc -l < "$tmp/compact/rankfile")" ]
ok $? "and Open MPI 5 its LSF affinity file: a 'HOST CPUS' line per rank, the rankfile's hosts in rank order"
[ ! -e "$tmp/compact/hydra-hosts" ] && ! grep -q '^HYDRA_\|^I_MPI_' "$tmp/compact/hints.env"
ok $? "compact (hydra, intel_mpi off): no Hydra host file, no MPICH or Intel MPI variable"

# MPICH and Intel MPI when a policy asks: 16 ranks, 2 per node, on 8 nodes of 2-PU cores.
printf 'placement: {kind: compact, ranks_per_node: 2}\nmpi: {hydra: true, intel_mpi: true}\n' > "$tmp/hydra.yaml"
"$bin" place --tree $tree --hwloc-xml $xml --policy "$tmp/hydra.yaml" --ranks 16 --out "$tmp/hydra" --no-svg > "$tmp/log" 2>&1
ok $? "place with mpi: {hydra: true, intel_mpi: true}"
[ "$(paste -sd' ' "$tmp/hydra/hydra-hosts")" = "node1:2 node2:2 node3:2 node4:2 node5:2 node6:2 node7:2 node8:2" ]
ok $? "hydra-hosts: HOST:2 per node, in rank order"
hydra_dir=$(cd "$tmp/hydra" && pwd -P)
grep -qx "HYDRA_HOST_FILE=$hydra_dir/hydra-hosts" "$tmp/hydra/hints.env" &&
  grep -qx 'HYDRA_BINDING=user:0+1,2+3' "$tmp/hydra/hints.env" &&
  grep -qx "I_MPI_HYDRA_HOST_FILE=$hydra_dir/hostfile" "$tmp/hydra/hints.env" && grep -qx 'I_MPI_PERHOST=2' "$tmp/hydra/hints.env"
ok $? "hints.env: HYDRA_HOST_FILE, HYDRA_BINDING (both PUs of each core), I_MPI_HYDRA_HOST_FILE, I_MPI_PERHOST"
! grep -q '^I_MPI_PIN_PROCESSOR_LIST' "$tmp/hydra/hints.env" && grep -q 'note: I_MPI_PIN_PROCESSOR_LIST left out: rank 0 has CPUs 0+1' "$tmp/log"
ok $? "no Intel pin list for two-PU ranks, and a note on stderr says why"

"$bin" place --tree $tree --hwloc-xml $xml --policy measure-only --out "$tmp/mo" --no-svg > "$tmp/log" 2>&1
ok $? "place --policy measure-only"
[ ! -e "$tmp/mo/rankfile" ] && [ ! -e "$tmp/mo/hostfile" ] && [ -s "$tmp/mo/hints.yaml" ]
ok $? "measure-only writes hints but no rankfile or hostfile"
cp -r "$tmp/compact" "$tmp/again"
"$bin" place --tree $tree --hwloc-xml $xml --policy measure-only --out "$tmp/again" --no-svg > "$tmp/log" 2>&1
[ ! -e "$tmp/again/rankfile" ]; ok $? "measure-only over an older placement removes its rankfile"

# Several cores per rank: every rankfile core exists on that node's XML, none twice.
"$bin" place --tree $tree --hwloc-xml $xml --policy compact --cpus-per-rank 4 --out "$tmp/c4" --no-svg > "$tmp/log" 2>&1
ok $? "--cpus-per-rank 4"
[ "$(wc -l < "$tmp/c4/rankfile")" -eq 64 ]; ok $? "fills 8 nodes x 8 ranks by default"
grep -q "^rank 0=node1 slot=0:0-3$" "$tmp/c4/rankfile"; ok $? "rank 0 slot=0:0-3"
awk '{ split($3, s, "="); n = split(s[2], items, ",");
       for (i = 1; i <= n; i++) { split(items[i], pc, ":"); split(pc[2], r, "-"); hi = r[2] == "" ? r[1] : r[2];
         for (c = r[1]; c <= hi; c++) { k = $2 ":" pc[1] ":" c; if (k in seen || pc[1] > 1 || c > 15) bad = 1; seen[k] = 1 } } }
     END { exit bad }' "$tmp/c4/rankfile"
ok $? "every rankfile core exists (2 packages x 16 cores) and is used once"

# --hwloc-dir: one XML per node, one of them a partial allocation.
mkdir "$tmp/hw"
for i in 1 2 3 4 5 6 7 8; do cp $xml "$tmp/hw/node$i.xml"; done
cp tests/data/hwloc/partial-2pack.xml "$tmp/hw/node3.xml"
"$bin" place --tree $tree --hwloc-dir "$tmp/hw" --policy compact --out "$tmp/dir" --no-svg > "$tmp/log" 2>&1
ok $? "--hwloc-dir with a partial node"
grep -q "^node3:8$" "$tmp/dir/machinefile"; ok $? "the partial node offers its 8 allowed cores"
grep "=node3 " "$tmp/dir/rankfile" | awk '{print $3}' | tr '\n' ' ' | grep -qx "slot=0:0 slot=0:1 slot=0:2 slot=0:3 slot=1:0 slot=1:1 slot=1:2 slot=1:3 "
ok $? "node3's ranks get exactly its allowed cores"
rm "$tmp/hw/node5.xml"
"$bin" place --tree $tree --hwloc-dir "$tmp/hw" --policy compact --out "$tmp/dir2" > "$tmp/err" 2>&1
[ $? -eq 2 ] && grep -q "node5" "$tmp/err" && [ ! -e "$tmp/dir2" ]
ok $? "a node without its XML: status 2, named, nothing written ($(head -c 120 "$tmp/err"))"

# A topology.conf works as the tree as well.
"$bin" place --tree etc/demo/topology.conf --hwloc-xml tests/data/hwloc/1pack-4core.xml --policy spread --ranks 16 --out "$tmp/conf" --no-svg > "$tmp/log" 2>&1
ok $? "--tree topology.conf"
[ "$(sort -u "$tmp/conf/hostfile" | wc -l)" -eq 8 ]; ok $? "spread puts 16 ranks on all 8 nodes"
sed -n 1,2p "$tmp/conf/hostfile" | tr '\n' ' ' | grep -qx "node1 node5 "; ok $? "alternating leaf switches (node1, node5)"

# Graphviz, when there.
if command -v dot > /dev/null; then
    "$bin" place --tree $tree --hwloc-xml tests/data/hwloc/1pack-4core.xml --policy compact --out "$tmp/svg" > "$tmp/log" 2>&1
    grep -q "<svg" "$tmp/svg/tree.svg"; ok $? "tree.svg drawn by dot"
else
    ok 0 "dot is not installed: tree.svg is not expected"
fi

# Refusals write nothing and exit 2.
check_refusal() {   # DESCRIPTION PATTERN ARGS...
    local what=$1 pattern=$2
    shift 2
    rm -rf "$tmp/no"
    "$bin" place "$@" --out "$tmp/no" > "$tmp/err" 2>&1
    local rc=$?
    [ $rc -eq 2 ] && grep -q -- "$pattern" "$tmp/err" && [ ! -e "$tmp/no" ]
    ok $? "$what: status 2, '$pattern', no output ($(head -c 160 "$tmp/err"))"
}
check_refusal "a policy with an unknown key" "bad-unknown-key.yaml:3:3: unknown key 'pakc'" \
    --tree $tree --hwloc-xml $xml --policy tests/data/policy/bad-unknown-key.yaml
check_refusal "a policy with a wrong type" "bad-cpus-type.yaml:3:18: 'cpus_per_rank' must be an integer from 1 to 4096" \
    --tree $tree --hwloc-xml $xml --policy tests/data/policy/bad-cpus-type.yaml
check_refusal "an unknown policy name" "no policy named 'tight'" --tree $tree --hwloc-xml $xml --policy tight
check_refusal "a broken tree" "bad-empty.yaml:1:1: a tree file is a mapping" --tree tests/data/policy/bad-empty.yaml --hwloc-xml $xml --policy compact
check_refusal "too many ranks" "do not fit" --tree $tree --hwloc-xml $xml --policy compact --ranks 257
check_refusal "a broken hwloc XML" "not-xml.xml" --tree $tree --hwloc-xml tests/data/hwloc/not-xml.xml --policy compact
check_refusal "a CPU list matching no core" "none of the 32 cores" --tree $tree --hwloc-xml $xml --cpuset 200-300 --policy compact
check_refusal "--ranks 0" "--ranks must be" --tree $tree --hwloc-xml $xml --policy compact --ranks 0
check_refusal "both hwloc options" "not both" --tree $tree --hwloc-xml $xml --hwloc-dir "$tmp/hw" --policy compact
tap_end
