#!/usr/bin/env bash
# The packages (mk/package.mk, debian/, packaging/rpm/): `make deb` builds them from a copy of
# the tree (or finds them up to date, newer than every file of the tree); each package holds
# the paths an admin relies on, the conffiles are conffiles, the plugin has the installed paths
# compiled in and the drop-in loads it from where the package puts it; the CLI and agents of
# the package run from an unpacked copy, the CLI finding the packaged policies; lintian finds
# no error (warnings are printed); the RPM spec parses (rpmspec -P) and its %files name the
# same files as the Debian packages. `make deb` takes about 30 s on 2 cores (20 s without its
# run of the unit tests, as here); nothing is installed on this machine.
set -u
cd "$(dirname "$0")/.." || exit 1
build=$(cd "${TOPOSCOPE_BUILD:-build}" 2>/dev/null && pwd || echo "$PWD/build")
debs=$build/deb
. tests/tap.sh
for tool in dpkg-buildpackage dh lintian rpmspec fakeroot; do
  command -v "$tool" > /dev/null || bail_out "$tool is missing: run 'make deps' (tests/deps.sh installs it)"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
version=$(awk -F'[()]' 'NR == 1 { print $2 }' debian/changelog)
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)
plugindir=/usr/lib/$multiarch/slurm-wlm
deb_of() { echo "$debs/${1}_${version}_$arch.deb"; }

# ---- build (or up to date) ----
t0=$(date +%s)
# (nocheck: the package build's own run of the unit tests, 18 s of CPU; make check runs them
# beside this test)
make --no-print-directory BUILD="$build" DEB_BUILD_OPTIONS="parallel=2 nocheck" deb > "$tmp/make.out" 2>&1
rc=$?
ok $rc "make deb ($(( $(date +%s) - t0 )) s)"
[ $rc -eq 0 ] || { tail -30 "$tmp/make.out" | diag; tap_end; }
missing=""
for p in toposcope slurm-spank-toposcope libtoposcope-hints0 libtoposcope-hints-dev; do
  [ -s "$(deb_of $p)" ] || missing="$missing $p"
done
[ -z "$missing" ]; ok $? "build/deb has the four packages of version $version${missing:+ (missing:$missing)}"
# up to date: no file of the tree is newer than the packages (make deb rebuilds when one is)
newer=$({ git ls-files -co --exclude-standard 2>/dev/null; } | while read -r f; do
  [ -f "$f" ] && [ "$f" -nt "$(deb_of toposcope)" ] && echo "$f"; done | head -5)
[ -z "$newer" ]; ok $? "the packages are newer than every file of the tree${newer:+ (newer: $(paste -sd" " <<< "$newer"))}"

# ---- contents ----
contents() { dpkg-deb -c "$(deb_of "$1")" | awk '{ p = $6; sub(/^\./, "", p); print p }'; }
has_paths() {   # PACKAGE PATH...: every PATH is in the package
  local p=$1 miss="" path
  shift
  contents "$p" > "$tmp/$p.list"
  for path in "$@"; do grep -qx -- "$path" "$tmp/$p.list" || miss="$miss $path"; done
  [ -z "$miss" ] || { echo "missing:$miss"; return 1; }
}
has_paths toposcope /usr/bin/toposcope /usr/bin/toposcope-probe \
  /usr/libexec/toposcope/toposcope-prolog /usr/libexec/toposcope/toposcope-epilog \
  /usr/share/toposcope/policies/compact.yaml /usr/share/toposcope/policies/spread.yaml \
  /usr/share/toposcope/policies/block.yaml /usr/share/toposcope/policies/measure-only.yaml \
  /usr/share/toposcope/etc/toposcope.yaml /usr/share/toposcope/etc/plugstack.conf \
  /usr/share/toposcope/etc/slurm.conf.toposcope /etc/toposcope/toposcope.yaml /etc/toposcope/policies/ \
  /usr/share/man/man1/toposcope.1.gz /usr/share/man/man5/toposcope.yaml.5.gz \
  /usr/share/man/man8/toposcope-prolog.8.gz /usr/share/man/man8/toposcope-epilog.8.gz \
  /usr/share/doc/toposcope/copyright > "$tmp/why" 2>&1
ok $? "toposcope: CLI, probe, agents in /usr/libexec/toposcope, policies, samples, man pages, /etc/toposcope/toposcope.yaml"
diag < "$tmp/why"
has_paths slurm-spank-toposcope "$plugindir/spank_toposcope.so" /etc/slurm/plugstack.conf.d/toposcope.conf \
  /usr/share/man/man8/spank-toposcope.8.gz /usr/share/doc/slurm-spank-toposcope/README.Debian > "$tmp/why" 2>&1
ok $? "slurm-spank-toposcope: the plugin in $plugindir, the drop-in, spank-toposcope(8), README.Debian"
diag < "$tmp/why"
! grep -q -e '^/usr/local' -e '^/usr/lib/slurm/' "$tmp/toposcope.list" "$tmp/slurm-spank-toposcope.list"
ok $? "nothing under /usr/local or /usr/lib/slurm"
has_paths libtoposcope-hints0 "/usr/lib/$multiarch/libtoposcope-hints.so.0" > "$tmp/why" 2>&1 &&
  has_paths libtoposcope-hints-dev "/usr/lib/$multiarch/libtoposcope-hints.so" \
    "/usr/lib/$multiarch/libtoposcope-hints.a" /usr/include/toposcope/hints.h >> "$tmp/why" 2>&1
ok $? "libtoposcope-hints0: the .so.0; -dev: the .so link, the .a, toposcope/hints.h"
diag < "$tmp/why"
! grep -q '^/usr/lib/.*/spank_toposcope.so$' "$tmp/toposcope.list" && ! grep -q '^/usr/bin/' "$tmp/slurm-spank-toposcope.list"
ok $? "the plugin only in slurm-spank-toposcope, the programs only in toposcope"

dpkg-deb -f "$(deb_of slurm-spank-toposcope)" Depends > "$tmp/depends"
hex=$(sed -n 's/^#define SLURM_VERSION_NUMBER 0x\([0-9a-fA-F]*\).*/\1/p' /usr/include/slurm/slurm_version.h)
mm=$(printf '%d.%02d' "0x${hex:0:2}" "0x${hex:2:2}")
grep -q "toposcope (= $version)" "$tmp/depends" && grep -q "slurm-wlm-basic-plugins (>= $mm)" "$tmp/depends" &&
  grep -q "slurm-wlm-basic-plugins (<< " "$tmp/depends"
ok $? "slurm-spank-toposcope depends on toposcope $version and Slurm $mm, the release it was built for"
diag < "$tmp/depends"

dpkg-deb -I "$(deb_of toposcope)" conffiles > "$tmp/conf1" 2>&1
dpkg-deb -I "$(deb_of slurm-spank-toposcope)" conffiles > "$tmp/conf2" 2>&1
grep -qx /etc/toposcope/toposcope.yaml "$tmp/conf1" && grep -qx /etc/slurm/plugstack.conf.d/toposcope.conf "$tmp/conf2"
ok $? "conffiles: /etc/toposcope/toposcope.yaml, /etc/slurm/plugstack.conf.d/toposcope.conf"

# ---- unpacked: the drop-in, the plugin's paths, the programs ----
for p in toposcope slurm-spank-toposcope; do dpkg-deb -x "$(deb_of $p)" "$tmp/root"; done
dropin=$tmp/root/etc/slurm/plugstack.conf.d/toposcope.conf
grep -v '^#' "$dropin" | grep -v '^$' > "$tmp/dropin.lines"
[ "$(cat "$tmp/dropin.lines")" = "optional $plugindir/spank_toposcope.so conf=/etc/toposcope/toposcope.yaml mode=opt-in" ]
ok $? "the drop-in's one line loads the packaged plugin, optional, opt-in, with /etc/toposcope/toposcope.yaml"
diag < "$tmp/dropin.lines"
strings "$tmp/root$plugindir/spank_toposcope.so" > "$tmp/strings"
grep -qx /usr/libexec/toposcope/toposcope-prolog "$tmp/strings" && grep -qx /usr/share/toposcope/policies "$tmp/strings" &&
  ! grep -q /usr/local "$tmp/strings"
ok $? "the plugin runs /usr/libexec/toposcope/toposcope-prolog and looks up policies in /usr/share/toposcope (nothing of /usr/local)"
nm -D --defined-only "$tmp/root$plugindir/spank_toposcope.so" | awk '{ print $3 }' | grep -v '^_' > "$tmp/exports"
grep -qx slurm_spank_job_prolog "$tmp/exports" && grep -qx plugin_name "$tmp/exports" && ! grep -q '^ts_' "$tmp/exports"
ok $? "the plugin exports the SPANK hooks and none of libtoposcope's ts_ symbols"

r=$tmp/root
"$r/usr/bin/toposcope" gen --regular 2,4 > "$tmp/fabric.conf" 2> "$tmp/err" &&
  "$r/usr/bin/toposcope" sim --fabric "$tmp/fabric.conf" --out "$tmp/sim" > /dev/null 2>> "$tmp/err"
ok $? "the packaged toposcope runs: gen, sim"
diag < "$tmp/err"
if [ -e /etc/toposcope/policies/compact.yaml ] || [ -n "${TOPOSCOPE_POLICY_DIR:-}" ]; then
  ok 0 "# SKIP /etc/toposcope/policies/compact.yaml or TOPOSCOPE_POLICY_DIR would answer first"
  ok 0 "# SKIP (same)"
else
  "$r/usr/bin/toposcope" place --tree "$tmp/sim/tree.yaml" --hwloc-xml tests/data/hwloc/1pack-4core.xml \
    --policy compact --out "$tmp/place" --no-svg > "$tmp/place.out" 2>&1 && [ -s "$tmp/place/rankfile" ]
  ok $? "the packaged toposcope place --policy compact finds the packaged policies (/usr/share/toposcope/policies)"
  diag < "$tmp/place.out"
  rm "$r/usr/share/toposcope/policies/compact.yaml"
  ! "$r/usr/bin/toposcope" place --tree "$tmp/sim/tree.yaml" --hwloc-xml tests/data/hwloc/1pack-4core.xml \
    --policy compact --out "$tmp/place2" --no-svg > "$tmp/place2.out" 2>&1
  ok $? "and fails once that policy file is gone (no other directory answered)"
  diag < "$tmp/place2.out"
fi
"$r/usr/libexec/toposcope/toposcope-prolog" --help > "$tmp/agent.out" 2>&1 &&
  "$r/usr/libexec/toposcope/toposcope-epilog" --help >> "$tmp/agent.out" 2>&1 &&
  "$r/usr/bin/toposcope-probe" --help >> "$tmp/agent.out" 2>&1
rc=$?
ok $rc "the packaged toposcope-prolog, toposcope-epilog and toposcope-probe start (--help)"
[ $rc -eq 0 ] || tail -5 "$tmp/agent.out" | diag
! readelf -d "$r/usr/bin/toposcope-probe" | grep -Eq 'RPATH|RUNPATH'
ok $? "toposcope-probe has no RPATH (PMIx from the default library path)"

# ---- lintian ----
lintian --pedantic -I "$debs/toposcope_${version}_$arch.changes" > "$tmp/lintian" 2>&1
grep -v 'running with root privileges' "$tmp/lintian" | grep -E '^[EWIPX]: ' > "$tmp/tags"
! grep -q '^E: ' "$tmp/tags" && ! grep -q -e 'error' -e 'Traceback' <(grep -v '^[EWIPXN]: ' "$tmp/lintian" | grep -v 'running with root')
ok $? "lintian: no error ($(grep -c '^E: ' "$tmp/tags") E, $(grep -c '^W: ' "$tmp/tags") W, $(grep -c '^I: ' "$tmp/tags") I)"
diag < "$tmp/tags"

# ---- the RPM spec ----
rpmspec -P packaging/rpm/toposcope.spec > "$tmp/spec" 2> "$tmp/spec.err"
ok $? "rpmspec -P packaging/rpm/toposcope.spec parses"
diag < "$tmp/spec.err"
rpmspec -q --with hints packaging/rpm/toposcope.spec 2>&1 | sed 's/-[0-9].*//' | sort > "$tmp/rpms"
[ "$(paste -sd' ' "$tmp/rpms")" = "libtoposcope-hints libtoposcope-hints-devel slurm-spank-toposcope toposcope" ]
ok $? "the spec makes toposcope, slurm-spank-toposcope (and libtoposcope-hints, -devel --with hints)"
diag < "$tmp/rpms"
grep -q "^Version: *$version\$" "$tmp/spec"; ok $? "the spec's version is debian/changelog's ($version)"
# Every file of a Debian package (docs aside) is matched by a %files entry of its RPM, and every
# %files entry matches a file: the same layout, libdir and plugin directory translated.
rpm_libdir=$(rpm --eval '%{_libdir}')
rpmspec -P --with hints packaging/rpm/toposcope.spec > "$tmp/spec-hints" 2>/dev/null
files_of() {   # RPM: its %files entries, one a line, %dir entries marked "dir "
  awk -v want="$1" '/^%files/ { n = ($2 == "-n") ? $3 : "toposcope"; on = (n == want); next }
    /^%(changelog|package|description|prep|build|install|check)/ { on = 0 }
    on && NF { d = ($1 == "%dir"); sub(/^%(dir|config\(noreplace\)|doc|license) +/, ""); print (d ? "dir " : "") $0 }' "$tmp/spec-hints"
}
# FILE matches a %files ENTRY: the same path, a glob (toposcope.1*), or under a directory (dir/)
# shellcheck disable=SC2053  # (the entry is a glob)
matches() { [[ $1 == $2 ]] || { [[ $2 == */ ]] && [[ $1 == "$2"* ]]; }; }
same_layout() {   # DEB RPM
  files_of "$2" > "$tmp/rpmfiles.$2"
  dpkg-deb -c "$(deb_of "$1")" | awk '$1 !~ /^d/ { p = $6; sub(/^\./, "", p); print p }' |
    grep -v -e '^/usr/share/doc/' -e '^/usr/share/lintian/' |
    sed -e "s|^$plugindir/|$rpm_libdir/slurm/|" -e "s|^/usr/lib/$multiarch/|$rpm_libdir/|" \
        -e 's|^\(/usr/share/man/.*\)\.gz$|\1|' > "$tmp/debfiles.$1"
  local f e hit bad=""
  while read -r f; do
    hit=0
    while read -r e; do
      case $e in dir\ *) continue ;; esac
      matches "$f" "$e" && { hit=1; break; }
    done < "$tmp/rpmfiles.$2"
    [ $hit = 1 ] || bad="$bad $f(not in %files)"
  done < "$tmp/debfiles.$1"
  while read -r e; do
    case $e in dir\ *) continue ;; esac
    hit=0
    while read -r f; do
      matches "$f" "$e" && { hit=1; break; }
    done < "$tmp/debfiles.$1"
    [ $hit = 1 ] || bad="$bad $e(no such file in $1)"
  done < "$tmp/rpmfiles.$2"
  [ -z "$bad" ] || { echo "$bad"; return 1; }
}
for pair in toposcope:toposcope slurm-spank-toposcope:slurm-spank-toposcope \
            libtoposcope-hints0:libtoposcope-hints libtoposcope-hints-dev:libtoposcope-hints-devel; do
  same_layout "${pair%%:*}" "${pair#*:}" > "$tmp/why" 2>&1
  ok $? "RPM ${pair#*:} has the files of ${pair%%:*}.deb ($(wc -l < "$tmp/debfiles.${pair%%:*}") files)"
  diag < "$tmp/why"
done
tap_end
