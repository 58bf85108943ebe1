#!/usr/bin/env bash
# The hints helper for MPI programs on this machine (no testbed): hints.yaml for 8 ranks on this
# host with the hwloc tree of a 2-package machine (tests/data/hwloc), the example twolevel_bcast
# under mpirun reading the file (TOPOSCOPE_HINTS) and reading the environment `toposcope hints
# --exec` sets per rank; every rank's communicator size at every level equals its group's size
# in hints.yaml, the broadcast delivers; and the helper's refusals: an unknown level (naming the
# levels there are), no hints, hints of another job size or host, an environment of another rank.
# Also `toposcope hints` itself: the check, --rank, --exec's host check, bad files.
set -u
cd "$(dirname "$0")/.."
build=${TOPOSCOPE_BUILD:-build}
bin=$build/bin/toposcope
example=$build/bin/twolevel_bcast
. tests/tap.sh
diag() { sed 's/^/# /'; }

if ! command -v "${MPICC:-mpicc}" > /dev/null; then
  # mk/hints.mk builds the helper only where mpicc exists; tests/deps.sh installs Open MPI
  echo "1..0 # SKIP no mpicc: the MPI hints helper is not built"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
unset TOPOSCOPE_HINTS TOPOSCOPE_LEVELS TOPOSCOPE_RANK TOPOSCOPE_NODE TOPOSCOPE_NODE_INDEX SLURMD_NODENAME
host=$(hostname -s)
xml=tests/data/hwloc/2pack-2numa-8core-ht.xml
mpi() { timeout 60 mpirun --oversubscribe --bind-to none "$@"; }
# the program's "rank=R host=H level=L ..." lines without the host, against hints_expect.awk
sizes_match() {   # OUTPUT HINTS
  grep '^rank=[0-9]* host=[^ ]* level=' "$1" | sed 's/ host=[^ ]*//' | sort > "$tmp/got"
  awk -f tests/hints_expect.awk "$2" | sort > "$tmp/want"
  [ -s "$tmp/want" ] && diff "$tmp/want" "$tmp/got" > "$tmp/diff"
}

for f in "$build/lib/libtoposcope-hints.a" "$build/lib/libtoposcope-hints.so" "$example"; do
  [ -s "$f" ]; ok $? "built: ${f#$build/}"
done
nm -D --defined-only "$build/lib/libtoposcope-hints.so" | grep -q ' T toposcope_comm_split$'
ok $? "the shared library exports toposcope_comm_split"

printf 'SwitchName=sw Nodes=%s\n' "$host" > "$tmp/one.conf"
"$bin" place --tree "$tmp/one.conf" --hwloc-xml $xml --policy spread --ranks 8 --out "$tmp/p" --no-svg > "$tmp/log" 2>&1
ok $? "toposcope place: 8 ranks spread over the packages of this host"
hints=$tmp/p/hints.yaml

# --- toposcope hints ---
"$bin" --help | grep -q "^  hints "; ok $? "toposcope --help lists hints"
"$bin" hints --help > "$tmp/help"; ok $? "hints --help"
for opt in --hints --rank --node --exec; do
  grep -q -- "$opt" "$tmp/help"; ok $? "hints --help documents $opt"
done
"$bin" hints --hints "$hints" > "$tmp/sum" 2>&1
ok $? "toposcope hints checks the file"
grep -q '^  package          2 groups of 4..4 ranks$' "$tmp/sum"; ok $? "and reports 2 package groups of 4 ranks"
"$bin" hints --hints "$hints" --rank 5 > "$tmp/env5" 2>&1
grep -qx "TOPOSCOPE_RANK=5" "$tmp/env5" && grep -qx "TOPOSCOPE_GROUP_PACKAGE=1" "$tmp/env5" &&
  grep -qx "TOPOSCOPE_LEADER_PACKAGE=0" "$tmp/env5" && grep -qx "TOPOSCOPE_NODE=$host" "$tmp/env5"
ok $? "--rank 5: its environment (package group 1, not the leader)"
"$bin" hints --hints "$hints" --rank 8 > "$tmp/err" 2>&1
[ $? -eq 2 ] && grep -q "rank 8 is not in the file (8 ranks)" "$tmp/err"; ok $? "--rank 8 is refused: $(cat "$tmp/err")"
SLURMD_NODENAME=elsewhere SLURM_PROCID=2 "$bin" hints --hints "$hints" --exec true > "$tmp/err" 2>&1
[ $? -eq 1 ] && grep -q "puts rank 2 on $host, but this task runs on elsewhere (SLURMD_NODENAME)" "$tmp/err"
ok $? "--exec on another host refuses to run the program: $(cat "$tmp/err")"
SLURM_PROCID=2 "$bin" hints --hints "$hints" --exec sh -c 'echo "$TOPOSCOPE_RANK $TOPOSCOPE_GROUP_NUMA $TOPOSCOPE_HINTS"' > "$tmp/out" 2>&1
[ "$(cat "$tmp/out")" = "2 2 $hints" ]; ok $? "--exec runs it with the rank's environment (SLURM_PROCID): $(cat "$tmp/out")"
sed 's/group: \[0, 0, 0, 1,/group: [0, 0, 0, 7,/' "$hints" > "$tmp/bad.yaml"
"$bin" hints --hints "$tmp/bad.yaml" > "$tmp/err" 2>&1
[ $? -eq 2 ] && grep -q "bad.yaml:[0-9]*:[0-9]*: 'group at 'package'' must be an integer from 0 to 1, got '7'" "$tmp/err"
ok $? "a broken hints.yaml is refused with FILE:LINE:COLUMN: $(cat "$tmp/err")"

# --- mpirun, hints from the file ---
TOPOSCOPE_HINTS=$hints mpi -np 8 -x TOPOSCOPE_HINTS "$example" package 7 > "$tmp/out" 2> "$tmp/err"
ok $? "mpirun twolevel_bcast package (hints.yaml via TOPOSCOPE_HINTS)"
sizes_match "$tmp/out" "$hints"; ok $? "every rank's group, leadership and communicator size at all 7 levels match hints.yaml"
[ -s "$tmp/diff" ] && diag < "$tmp/diff"
[ "$(grep -c "^rank=[0-9]* origin=$hints$" "$tmp/out")" -eq 8 ]; ok $? "all 8 ranks read the file"
[ "$(grep -c '^rank=[0-9]* bcast=7 ok$' "$tmp/out")" -eq 8 ] &&
  grep -q "^twolevel_bcast: level package, 2 groups, 8 of 8 ranks got 7" "$tmp/out"
ok $? "the two-level broadcast (2 package leaders, then their groups) reaches all 8 ranks"

# --- mpirun, hints from the environment (what srun tasks get) ---
mpi -np 8 "$bin" hints --hints "$hints" --exec "$example" numa 9 > "$tmp/out" 2> "$tmp/err"
ok $? "mpirun toposcope hints --exec twolevel_bcast numa"
sizes_match "$tmp/out" "$hints"; ok $? "from the environment: the same groups and sizes"
[ "$(grep -c '^rank=[0-9]* origin=environment$' "$tmp/out")" -eq 8 ]; ok $? "all 8 ranks used their environment"
grep -q "^twolevel_bcast: level numa, 4 groups, 8 of 8 ranks got 9" "$tmp/out"; ok $? "the broadcast over 4 NUMA groups delivers"

# --- an environment describing rank 0 (hints.env sourced by a batch script) reaches every rank ---
# (without its OMPI_MCA_rmaps_rank_file_path: that rankfile binds to the XML's 32 cores, not these)
grep -v '^OMPI_MCA_' "$tmp/p/hints.env" > "$tmp/rank0.env"
(set -a; . "$tmp/rank0.env"; set +a; mpi -np 8 -x TOPOSCOPE_HINTS "$example" package 3) > "$tmp/out" 2> "$tmp/err"
ok $? "with rank 0's hints.env exported to every rank"
[ "$(grep -c '^rank=[0-9]* origin=environment$' "$tmp/out")" -eq 1 ] && grep -q '^rank=0 origin=environment$' "$tmp/out" &&
  [ "$(grep -c "^rank=[0-9]* origin=$hints$" "$tmp/out")" -eq 7 ]
ok $? "only rank 0 takes the environment, the others pass it over for hints.yaml"
sizes_match "$tmp/out" "$hints"; ok $? "and every group is still right"

# --- refusals ---
TOPOSCOPE_HINTS=$hints mpi -np 8 -x TOPOSCOPE_HINTS "$example" rack > "$tmp/out" 2> "$tmp/err"
[ $? -ne 0 ] && grep -q "rank 3: rack: no level 'rack' in the hints ($hints); the levels are job,leaf,node,package,numa,l3,core" "$tmp/err"
ok $? "an unknown level is refused on every rank, naming the levels there are"
mpi -np 2 "$example" > "$tmp/out" 2> "$tmp/err"
[ $? -ne 0 ] && grep -q "no hints for rank 1: TOPOSCOPE_LEVELS is not set, and TOPOSCOPE_HINTS (the hints.yaml of toposcope place, for mpirun jobs) is not set" "$tmp/err"
ok $? "no hints at all: says where it looked"
TOPOSCOPE_HINTS=$hints mpi -np 4 -x TOPOSCOPE_HINTS "$example" > "$tmp/out" 2> "$tmp/err"
[ $? -ne 0 ] && grep -q "describes 8 ranks but MPI_COMM_WORLD has 4" "$tmp/err"
ok $? "hints of another job size are refused"
TOPOSCOPE_HINTS=$tmp/nosuch.yaml mpi -np 2 -x TOPOSCOPE_HINTS "$example" > "$tmp/out" 2> "$tmp/err"
[ $? -ne 0 ] && grep -q "nosuch.yaml (TOPOSCOPE_HINTS): No such file or directory" "$tmp/err"
ok $? "a missing hints file"
printf 'SwitchName=sw Nodes=not-%s\n' "$host" > "$tmp/other.conf"
"$bin" place --tree "$tmp/other.conf" --hwloc-xml $xml --policy spread --ranks 2 --out "$tmp/o" --no-svg > "$tmp/log" 2>&1
TOPOSCOPE_HINTS=$tmp/o/hints.yaml mpi -np 2 -x TOPOSCOPE_HINTS "$example" > "$tmp/out" 2> "$tmp/err"
[ $? -ne 0 ] && grep -q "puts rank 0 on not-$host, but it runs on $host: start mpirun with the rankfile" "$tmp/err"
ok $? "hints that put the rank on another host are refused"
tap_end
