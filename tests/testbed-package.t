#!/usr/bin/env bash
# The Debian packages on the emulated cluster (TAP): `make deb`'s toposcope,
# slurm-spank-toposcope, libtoposcope-hints0 and libtoposcope-hints-dev installed on this
# machine with dpkg -i (the testbed's slurmds share its filesystem, all but /tmp), the
# testbed's plugstack.conf holding only Debian's line `include /etc/slurm/plugstack.conf.d/*.conf`,
# so Slurm finds the plugin through the package's drop-in, in Slurm's plugin directory; the
# site's /etc/toposcope/toposcope.yaml (the package's conffile) set as an admin of nodes that
# share /var would set it (a spool per node; records and spool under the test's directory).
# Nothing of build/ is in the job's path: the plugin runs the agent and the epilog it was built
# to find (/usr/libexec/toposcope), with the packaged policies (/usr/share/toposcope); the job
# runs `toposcope hints` from /usr/bin and twolevel_bcast compiled here against the installed
# header and shared library.
#   - sbatch -N8 --topo-aware=compact (etc/demo, two leaves of four): the job ends well,
#     TOPOSCOPE_STATUS=measured, placed by the packaged compact policy; plain mpirun follows the
#     rankfile (every rank on its host) and the two-level broadcast reaches all 16 ranks; every
#     slurmd logged the plugin's prolog line; the installed epilog wrote the job's record and
#     the spool is gone; no node drained;
#   - dpkg --purge then removes the plugin and the drop-in (when this test installed them).
# The machine is left as found: packages this test installed are purged, a toposcope.yaml that
# was there is put back (packages that were installed before stay, upgraded to this build).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO/tests/testbed/lib.sh"

FABRIC=$REPO/etc/demo/topology.conf
PARAMS=$REPO/etc/demo/params.yaml
DEBS=$TB_BUILD/deb
PACKAGES="toposcope slurm-spank-toposcope libtoposcope-hints0 libtoposcope-hints-dev"
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
PLUGIN=/usr/lib/$MULTIARCH/slurm-wlm/spank_toposcope.so
DROPIN=/etc/slurm/plugstack.conf.d/toposcope.conf
SITECONF=/etc/toposcope/toposcope.yaml
BUDGET=1500
export SLURM_CONF=$TB_CONF

tb_tap_begin 20 "make; the testbed's emulator" "$TB_FABEMU"
command -v mpicc > /dev/null || bail_out "no mpicc (tests/deps.sh installs Open MPI)"
command -v dpkg-buildpackage > /dev/null || bail_out "no dpkg-buildpackage: run 'make deps'"
# Other drop-ins would load into the testbed too, through the same include.
others=$(find /etc/slurm/plugstack.conf.d -name '*.conf' ! -name toposcope.conf 2>/dev/null)
[ -z "$others" ] || bail_out "/etc/slurm/plugstack.conf.d holds other plugins' files ($others): they would load into the testbed"

# ---- session, work directory, watchdog, cleanup (tb_test_up's, with the packages undone) ----
tb_session_lock 900
work=$(mktemp -d /var/tmp/toposcope-package-t.XXXXXX)
D=$TB_STATE/jobs/package-t.$$    # what slurmd and the jobs read and write (each node has its own /tmp)
mkdir -p "$D/bin" "$D/src" "$D/out" "$D/records"
( exec 9>&-; sleep $((8 * 60)) & s=$!; trap 'kill $s; exit 0' TERM; wait $s
  echo "# watchdog: the test ran for 8 minutes" >&2; kill -TERM $$ ) &
tb_watchdog=$!
preinstalled=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | has 'install ok installed' && preinstalled="$preinstalled $p"
done
[ ! -e "$SITECONF" ] || cp -p "$SITECONF" "$work/siteconf.orig"
cleanup() {
  kill "$tb_watchdog" 2>/dev/null
  timeout 120 "$TB_DIR/down" > /dev/null 2>&1
  local purge="" p
  for p in $PACKAGES; do
    case " $preinstalled " in *" $p "*) ;; *) purge="$purge $p" ;; esac
  done
  # shellcheck disable=SC2086  # (one word per package)
  [ -z "$purge" ] || dpkg --purge $purge > /dev/null 2>&1
  if [ -e "$work/siteconf.orig" ]; then mkdir -p "${SITECONF%/*}" && cp -p "$work/siteconf.orig" "$SITECONF"; fi
  rm -rf "$work" "$D"
}
trap cleanup EXIT
trap 'exit 1' TERM INT

# ---- the packages: built (or up to date), installed ----
make --no-print-directory -C "$REPO" BUILD="$TB_BUILD" deb > "$work/make.out" 2>&1
rc=$?
ok $rc "make deb: the packages are up to date in $DEBS"
[ $rc -eq 0 ] || { tail -20 "$work/make.out" | diag; bail_out "no packages to install"; }
debfiles=()
for p in $PACKAGES; do debfiles+=("$(ls "$DEBS/${p}_"*.deb 2>/dev/null | head -1)"); done
# confold: a toposcope.yaml an admin (or a crashed run of this test) changed is kept, never asked
# about; this test writes its own settings below anyway.
DEBIAN_FRONTEND=noninteractive dpkg -i --force-confdef --force-confold "${debfiles[@]}" \
  < /dev/null > "$work/dpkg.out" 2>&1
rc=$?
ok $rc "dpkg -i $PACKAGES"
[ $rc -eq 0 ] || { tail -20 "$work/dpkg.out" | diag; bail_out "the packages did not install"; }
[ -f "$PLUGIN" ] && [ -x /usr/libexec/toposcope/toposcope-prolog ] && [ -x /usr/libexec/toposcope/toposcope-epilog ] &&
  [ -f /usr/share/toposcope/policies/compact.yaml ] &&
  grep -qx "optional $PLUGIN conf=$SITECONF mode=opt-in" "$DROPIN" &&
  grep -qx 'include /etc/slurm/plugstack.conf.d/\*.conf' /etc/slurm/plugstack.conf
ok $? "installed: the plugin in Slurm's plugin directory, agents, policies, the drop-in, and Debian's plugstack.conf includes it"
grep -v '^#' "$DROPIN" | diag

# The site's settings, as on nodes that share /var (README.Debian): a spool per node. Only
# paths; prolog, epilog and policy_dir stay the plugin's compiled-in defaults.
printf '# tests/testbed-package.t (the original is put back afterwards)\nbudget_ms: %s\nspool: %s\nrecords: %s\n' \
  "$BUDGET" "$D/spool/%n" "$D/records" > "$SITECONF"

# twolevel_bcast against the installed header and library (a copy of the source, so no header
# of the tree is found beside it; ldd names /lib for /usr/lib on merged-/usr systems)
cp "$REPO/hints/examples/twolevel_bcast.c" "$D/src/"
mpicc -std=c11 -D_GNU_SOURCE -O2 -o "$D/bin/twolevel_bcast" "$D/src/twolevel_bcast.c" \
  -ltoposcope-hints -lyaml > "$work/mpicc.out" 2>&1 &&
  ldd "$D/bin/twolevel_bcast" > "$work/ldd.out" 2>&1 &&
  has -E "libtoposcope-hints.so.0 => (/usr)?/lib/$MULTIARCH/libtoposcope-hints.so.0" "$work/ldd.out"
ok $? "twolevel_bcast builds with -ltoposcope-hints against the installed header and links the installed libtoposcope-hints.so.0"
cat "$work/mpicc.out" "$work/ldd.out" 2>/dev/null | diag

# ---- the testbed, its plugstack.conf only Debian's include ----
export TESTBED_PLUGSTACK="include /etc/slurm/plugstack.conf.d/*.conf"
timeout 180 "$TB_DIR/up" "$FABRIC" "$PARAMS" > "$work/up.out" 2>&1
rc=$?
ok $rc "up: 8 nodes on etc/demo, plugstack.conf: $TESTBED_PLUGSTACK"
[ $rc -eq 0 ] || { tail -20 "$work/up.out" | diag; bail_out "the testbed did not come up"; }
grep -v '^#' "$TB_STATE/etc/plugstack.conf" > "$work/plugstack.lines"
[ "$(cat "$work/plugstack.lines")" = "$TESTBED_PLUGSTACK" ] && ! grep -q "$TB_BUILD\|$REPO" "$work/plugstack.lines" "$SITECONF"
ok $? "the testbed's plugstack.conf and the site's toposcope.yaml name nothing of the tree or build/"
# (into a file first: with pipefail, grep -q ending the pipe early would fail it by SIGPIPE)
timeout 10 sbatch --help > "$work/help.txt" 2>&1
grep -q -- '--topo-aware=\[POLICY\]' "$work/help.txt"
ok $? "sbatch --help lists --topo-aware=[POLICY] (the plugin loaded through the drop-in)"

log_mark() { wc -c "$TB_STATE"/log/slurmd-node*.log 2>/dev/null | awk '$2 != "total"' > "$work/logmark"; }
new_logs() {
  local f off
  for f in "$TB_STATE"/log/slurmd-node*.log; do
    off=$(awk -v f="$f" '$2 == f { print $1 }' "$work/logmark")
    tail -c +$((${off:-0} + 1)) "$f"
  done
}
no_drain() { ! sinfo -h -N -o '%N %t' | has -E 'drain|drng|down|fail'; }
log_mark

# ---- one --topo-aware job, end to end from the installed paths ----
J=$D/out/compact
mkdir -p "$J"
cat > "$J/job.sh" <<JOB
#!/bin/bash
export $TB_OMPI_ENV
env | grep -E '^(TOPOSCOPE_|OMPI_MCA_rmaps)' | sort > $J/batch.env
cp "\$TOPOSCOPE_RANKFILE" "\$TOPOSCOPE_HINTS" $J/
/usr/bin/toposcope hints --hints "\$TOPOSCOPE_HINTS" > $J/hints-check.txt 2>&1
echo "exit=\$?" >> $J/hints-check.txt
exec mpirun -np 16 $D/bin/twolevel_bcast leaf 777
JOB
(cd "$J" && tb_sbatch_wait 180 -N8 --ntasks-per-node=2 --topo-aware=compact -t 3 \
  -o "$J/out.txt" job.sh) > "$J/sbatch.out" 2>&1
rc=$?
ok $rc "sbatch -N8 --topo-aware=compact, mpirun -np 16 without --rankfile: the job ends well"
[ $rc -eq 0 ] || head -30 "$J/sbatch.out" "$J/out.txt" 2>/dev/null | diag
job=$(sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p' "$J/sbatch.out")
grep -qx 'TOPOSCOPE_STATUS=measured' "$J/batch.env" 2>/dev/null &&
  grep -qx "TOPOSCOPE_RANKFILE=$D/spool/node1/$job/rankfile" "$J/batch.env" &&
  grep -qx "OMPI_MCA_rmaps_rank_file_path=$D/spool/node1/$job/rankfile" "$J/batch.env"
ok $? "the batch script has TOPOSCOPE_STATUS=measured and the rankfile in the site's spool (node1's)"
diag < "$J/batch.env" 2>/dev/null
grep -qx 'TOPOSCOPE_PLACEMENT=placed' "$J/batch.env" 2>/dev/null &&
  grep -q '^TOPOSCOPE_PLACEMENT_REASON=.*compact' "$J/batch.env"
ok $? "placed by the packaged compact policy (/usr/share/toposcope/policies)"
grep -qx 'exit=0' "$J/hints-check.txt" 2>/dev/null
ok $? "/usr/bin/toposcope hints checks the job's hints.yaml"
diag < "$J/hints-check.txt" 2>/dev/null
# (twolevel_bcast prints a rank's host twice: with its group and with its CPUs; the latter)
grep -o '^rank=[0-9]* host=[^ ]* cpus=' "$J/out.txt" 2>/dev/null |
  sed 's/rank=\([0-9]*\) host=\([^ ]*\) cpus=/\1 \2/' | sort -n > "$J/ran.txt"
sed 's/^rank \([0-9]*\)=\([^ ]*\) .*/\1 \2/' "$J/rankfile" 2>/dev/null | sort -n > "$J/want.txt"
[ "$(wc -l < "$J/ran.txt")" = 16 ] && diff "$J/ran.txt" "$J/want.txt" > /dev/null
ok $? "every rank ran on the host the rankfile names"
grep -q '^twolevel_bcast: level leaf, 2 groups, 16 of 16 ranks got 777' "$J/out.txt" 2>/dev/null
ok $? "the two-level broadcast over the leaf groups (installed libtoposcope-hints) reaches all 16 ranks"
# "toposcope: job J on NODE: prolog T ms", logged by the plugin in each node's job prolog
new_logs | sed -n "s/.*toposcope: job $job on \(node[0-9]*\): prolog \([0-9]*\) ms\$/\1 \2/p" | sort -u > "$work/prolog.lines"
[ "$(cut -d' ' -f1 "$work/prolog.lines" | sort -u | wc -l)" = 8 ]
ok $? "every slurmd logged the installed plugin's prolog line (node, ms: $(paste -sd' ' "$work/prolog.lines"))"
[ -s "$work/prolog.lines" ] || new_logs | grep toposcope | tail -5 | diag
[ -f "$D/records/job-$job.yaml" ]
ok $? "the installed toposcope-epilog wrote the job's record ($D/records/job-$job.yaml)"
/usr/bin/toposcope report --records "$D/records" > "$work/report" 2>&1 &&
  grep -q '^toposcope report: 1 record read, 0 skipped' "$work/report"
ok $? "/usr/bin/toposcope report reads it"
head -5 "$work/report" | diag
left=$(find "$D/spool" -mindepth 2 -maxdepth 2 2>/dev/null | wc -l)
[ "$left" -eq 0 ]; ok $? "the epilog removed the job's spool directories ($left left)"
no_drain; ok $? "no node drained"

timeout 120 "$TB_DIR/down" > "$work/down.out" 2>&1
ok $? "down"

# ---- removal ----
if [ -z "$preinstalled" ]; then
  # shellcheck disable=SC2086  # (one word per package)
  dpkg --purge $PACKAGES > "$work/purge.out" 2>&1 && [ ! -e "$PLUGIN" ] && [ ! -e "$DROPIN" ] &&
    [ ! -e "$SITECONF" ] && [ ! -e /usr/libexec/toposcope/toposcope-prolog ]
  ok $? "dpkg --purge removes the plugin, the drop-in, the agents and /etc/toposcope/toposcope.yaml"
  tail -5 "$work/purge.out" | diag
else
  ok 0 "# SKIP dpkg --purge: installed before this test ($preinstalled), left installed"
fi
tap_end
