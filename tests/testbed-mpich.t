#!/usr/bin/env bash
# MPICH (Debian's, Hydra) end to end on the emulated cluster (TAP): sbatch --topo-aware with a
# policy that has mpi: {hydra: true}, the SPANK plugin in plugstack.conf, and a plain
#   mpiexec.mpich -n 4 where
# (no -f, no -bind-to: HYDRA_HOST_FILE and HYDRA_BINDING from the plugin) on 2 nodes x 2 ranks.
#   - compact, 2 ranks per node: every rank runs on the host the rankfile names and on exactly
#     the CPUs hints.yaml gives it;
#   - spread: MPICH is told nothing, and TOPOSCOPE_PLACEMENT_REASON says why: in a Slurm job
#     mpiexec starts a proxy per host-file line with srun -N LINES, line k on the job's k-th
#     node, so the 4 one-rank lines of alternating ranks cannot be followed; the job's
#     hydra-hosts forced on mpiexec fails, as that says; and the same mpiexec, untold, runs
#     its ranks unbound and a node's ranks together (so the compact job's binding and hosts
#     were the plugin's doing, not Hydra's defaults);
#   - no node drains. The .mpich names throughout: Open MPI is the default alternative.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO/tests/testbed/lib.sh"

FABRIC=$REPO/etc/demo/topology.conf
PARAMS=$REPO/etc/demo/params.yaml
PLUGIN=$TB_BUILD/lib/spank_toposcope.so
export SLURM_CONF=$TB_CONF

tb_tap_begin 16 "make; mpich (mpiexec.mpich, mpicc.mpich)" "$TB_FABEMU" "$PLUGIN" "$TB_PROLOG" \
  /usr/bin/mpiexec.mpich /usr/bin/mpicc.mpich

# Everything slurmd runs or reads lives in the state dir (each slurmd has a private /tmp).
D=$TB_STATE/jobs/mpich-t.$$
mkdir -p "$D/bin" "$D/lib" "$D/policies" "$D/out"
cp "$TB_PROLOG" "$D/bin/"
cp "$PLUGIN" "$D/lib/"
mpicc.mpich -O1 -o "$D/bin/where" "$REPO/tests/data/mpi/where.c" 2> "$D/cc.err"
ok $? "mpicc.mpich builds tests/data/mpi/where.c"
diag < "$D/cc.err"
printf 'name: hydra-compact\nplacement: {kind: compact, ranks_per_node: 2}\nmpi: {hydra: true}\n' \
  > "$D/policies/hydra-compact.yaml"
printf 'name: hydra-spread\nplacement: {kind: spread}\nmpi: {hydra: true}\n' > "$D/policies/hydra-spread.yaml"
printf 'budget_ms: 1500\nspool: %s\nprolog: %s\npolicy_dir: %s\n' "$D/spool/%n" \
  "$D/bin/toposcope-prolog" "$D/policies" > "$D/toposcope.yaml"
export TESTBED_PLUGSTACK="optional $D/lib/spank_toposcope.so conf=$D/toposcope.yaml mode=opt-in"
tb_test_up mpich-t 12 "$FABRIC" "$PARAMS" "up: 8 nodes on etc/demo with the plugin"
trap 'kill "$tb_watchdog" 2>/dev/null; timeout 120 "$TB_DIR/down" >/dev/null 2>&1; rm -rf "$work" "$D"' EXIT

no_drain() { ! sinfo -h -N -o '%N %t' | has -E 'drain|drng|down|fail'; }
# MPICH's ch4:ucx over the testbed's eth0 between nodes, shared memory within one
MPICH_ENV="export UCX_NET_DEVICES=eth0 UCX_TLS=tcp,sm,self"

# job POLICY: sbatch -N2 --ntasks-per-node=2 --topo-aware=POLICY running mpiexec.mpich -n 4 where
# (after it, once more with the job's hydra-hosts forced on it, into forced.txt and forced.rc);
# the job's environment, its rankfile, hints.yaml and hydra-hosts are copied to $D/out/POLICY.
job() {
  local J=$D/out/$1
  mkdir -p "$J"
  cat > "$J/job.sh" <<JOB
#!/bin/bash
$MPICH_ENV
env | grep -E '^(TOPOSCOPE_|HYDRA_|I_MPI_|OMPI_MCA_rmaps|PRTE_MCA)' | sort > $J/batch.env
cp "\$TOPOSCOPE_RANKFILE" "\$TOPOSCOPE_HINTS" "\$TOPOSCOPE_DIR/hydra-hosts" $J/
timeout 60 mpiexec.mpich -n 4 $D/bin/where > $J/ranks.txt || exit 1
HYDRA_HOST_FILE=\$TOPOSCOPE_DIR/hydra-hosts timeout 20 mpiexec.mpich -n 4 $D/bin/where > $J/forced.txt 2>&1
echo \$? > $J/forced.rc
exit 0
JOB
  (cd "$J" && tb_sbatch_wait 180 -N2 --ntasks-per-node=2 --topo-aware="$1" -t 3 -o "$J/out.txt" \
    job.sh) > "$J/sbatch.out" 2>&1
}
# "R HOST" per rank from the rankfile, and what the program printed
want_hosts() { sed 's/^rank \([0-9]*\)=\([^ ]*\) .*/\1 \2/' "$1/rankfile" | sort -n; }
ran() { sed -n 's/^rank=\([0-9]*\) host=\([^ ]*\) cpus=\(.*\)$/\1 \2 \3/p' "$1" | sort -n; }
# "R CPU,CPU" per rank from hints.yaml (ranges spelled out), whose slots are the rankfile's
want_cpus() {
  awk -v what=cpus -f "$REPO/tests/hints_expect.awk" "$1/hints.yaml" | sed 's/rank=\([0-9]*\) cpus=/\1 /' |
    awk '{ n = split($2, part, ","); out = ""
           for (i = 1; i <= n; i++) if (split(part[i], ab, "-") == 2) { for (c = ab[1]; c <= ab[2]; c++) out = out "," c }
                                    else out = out "," part[i]
           print $1, substr(out, 2) }' | sort -n
}
slots_agree() {   # the rankfile's slot of every rank is hints.yaml's
  diff <(sed 's/^rank \([0-9]*\)=[^ ]* slot=\(.*\)$/\1 \2/' "$1/rankfile" | sort -n) \
       <(sed -n 's/^  - {rank: \([0-9]*\), node: "[^"]*", slot: "\([^"]*\)".*/\1 \2/p' "$1/hints.yaml" | sort -n) > /dev/null
}

# ---- compact, 2 ranks per node: host file and binding ----
C=$D/out/hydra-compact
job hydra-compact
rc=$?
ok $rc "sbatch -N2 --topo-aware=hydra-compact, plain mpiexec.mpich -n 4: the job ends well"
[ $rc -eq 0 ] || head -30 "$C/sbatch.out" "$C/out.txt" 2>/dev/null | diag
dir=$(sed -n 's/^TOPOSCOPE_DIR=//p' "$C/batch.env")
[ -n "$dir" ] && grep -qx "HYDRA_HOST_FILE=$dir/hydra-hosts" "$C/batch.env" &&
  grep -qx 'TOPOSCOPE_STATUS=measured' "$C/batch.env" && ! grep -q '^I_MPI_\|^OMPI_MCA\|^PRTE_MCA' "$C/batch.env"
ok $? "the batch script has HYDRA_HOST_FILE in the job's spool, status measured, no Intel MPI or Open MPI variable"
diag < "$C/batch.env"
hosts=$(want_hosts "$C" | awk '{ n[$2]++; if (!($2 in seen)) { seen[$2] = 1; order[k++] = $2 } }
                               END { for (i = 0; i < k; i++) printf "%s:%d\n", order[i], n[order[i]] }')
[ -n "$hosts" ] && [ "$(cat "$C/hydra-hosts")" = "$hosts" ] && [ "$(wc -l < "$C/hydra-hosts")" = 2 ]
ok $? "hydra-hosts: one HOST:2 line per node, in the rankfile's order ($(paste -sd' ' "$C/hydra-hosts" 2>/dev/null))"
binding=$(want_cpus "$C" | awk 'NR <= 2 { gsub(",", "+", $2); out = out (NR > 1 ? "," : "") $2 } END { print "user:" out }')
grep -qx "HYDRA_BINDING=$binding" "$C/batch.env"
ok $? "HYDRA_BINDING=$binding: the CPUs of each node's first and second rank (alike on both nodes)"
ran "$C/ranks.txt" > "$C/ran.txt"
[ "$(wc -l < "$C/ran.txt")" = 4 ]
ok $? "mpiexec.mpich ran 4 ranks"
diff <(cut -d' ' -f1,2 "$C/ran.txt") <(want_hosts "$C") > "$C/hosts.diff"
ok $? "every rank ran on the host the rankfile names"
paste -d' ' <(cut -d' ' -f1,2 "$C/ran.txt") <(cut -d' ' -f3 "$C/ran.txt") | sed 's/^/rank /' | diag
slots_agree "$C" && diff <(cut -d' ' -f1,3 "$C/ran.txt") <(want_cpus "$C") > "$C/cpus.diff"
ok $? "every rank ran on exactly the CPUs of its rankfile slot (hints.yaml): $(cut -d' ' -f3 "$C/ran.txt" | paste -sd' ')"
diag < "$C/cpus.diff"

# ---- spread: what srun cannot start, MPICH is not told ----
S=$D/out/hydra-spread
job hydra-spread
rc=$?
ok $rc "sbatch -N2 --topo-aware=hydra-spread, plain mpiexec.mpich -n 4: the job ends well"
[ $rc -eq 0 ] || head -30 "$S/sbatch.out" "$S/out.txt" 2>/dev/null | diag
[ "$(want_hosts "$S" | cut -d' ' -f2 | sed -n 1,2p | sort -u | wc -l)" = 2 ] && [ "$(wc -l < "$S/hydra-hosts")" = 4 ]
ok $? "spread alternates the nodes: hydra-hosts has a line per rank ($(paste -sd' ' "$S/hydra-hosts" 2>/dev/null))"
! grep -q '^HYDRA_' "$S/batch.env" &&
  grep -q "^TOPOSCOPE_PLACEMENT_REASON=.*MPICH's variables left out: srun starts host-file line 3 on the job's node 3 in Slurm's order (none)" "$S/batch.env"
ok $? "spread: no HYDRA_HOST_FILE nor HYDRA_BINDING, and TOPOSCOPE_PLACEMENT_REASON says why"
grep '^TOPOSCOPE_PLACEMENT_REASON' "$S/batch.env" | diag
[ "$(cat "$S/forced.rc" 2>/dev/null)" != 0 ] && ! grep -q '^rank=' "$S/forced.txt"
ok $? "spread: mpiexec with the 4-line hydra-hosts forced on it fails under Slurm (exit $(cat "$S/forced.rc" 2>/dev/null))"
grep -v '^rank=' "$S/forced.txt" 2>/dev/null | head -5 | diag
ran "$S/ranks.txt" > "$S/ran.txt"
all_cpus=$(cut -d' ' -f3 "$S/ran.txt" | sort -u)
# unbound: each rank on every CPU its node's processes have (tb_node_cpus), not a slot's
[ "$(wc -l < "$S/ran.txt")" = 4 ] && [ "$all_cpus" = "$(tb_node_cpus)" ] &&
  [ "$(cut -d' ' -f2 "$S/ran.txt" | sed -n 1,2p | sort -u | wc -l)" = 1 ]
ok $? "spread, MPICH untold: its own defaults, every rank unbound on its node's CPUs $(tb_node_cpus) ($all_cpus), ranks 0 and 1 on one node (unlike the rankfile)"
sed 's/^/rank /' "$S/ran.txt" | diag

no_drain; ok $? "no node drained"
timeout 120 "$TB_DIR/down" > "$work/down.out" 2>&1
ok $? "down"
tap_end
