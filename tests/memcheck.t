#!/usr/bin/env bash
# The unit tests and the CLI's shell tests under valgrind memcheck (TAP): zero errors, and that
# includes reads of uninitialised memory (an output struct a function forgot to initialise
# passes every other test by the luck of the stack; --track-origins names where it came from)
# and memory definitely lost.
#   MEMCHECK=quick (default, in make check): the unit tests that take under 3 s each under
#                  valgrind, about 35 s of CPU (20 s on 2 cores); tests/cli.t under valgrind
#                  (its 39 processes, a minute of CPU) would make it the longest test of
#                  make check, and the full set runs it
#   MEMCHECK=full  (make memcheck, CI): every unit test, and tests/cli.t, place.t, anomaly.t,
#                  epilog.t with every toposcope and toposcope-epilog they start under valgrind
# (not tests/fast-regressions.t: its 1024-node runs take about a minute each under valgrind,
# and what they exercise, the unit tests of fast exercise here too)
# A shell test runs against a build directory whose bin/toposcope and bin/toposcope-epilog are
# wrappers that exec valgrind on the real programs, each process logging to a file of its own;
# the test must pass as it does without valgrind, and every log must be empty.
set -u
cd "$(dirname "$0")/.."
. tests/tap.sh
build=$(cd "${TOPOSCOPE_BUILD:-build}" && pwd)
set_name=${MEMCHECK:-quick}
valgrind_opts=(-q --error-exitcode=99 --track-origins=yes --leak-check=full
               --show-leak-kinds=definite --errors-for-leak-kinds=definite --num-callers=30)

# The quick set: under 3 s each under valgrind on the project's 2-core machine (the slower
# ones, t_fast, t_topoconf, t_gen, t_infer, t_model, t_fast_irregular, t_allpairs and
# t_hostlist, take 6 to 33 s and run in the full set).
quick_units=(t_anomaly t_flagindex t_hints t_hwtree t_links t_mpiplan t_place t_pmm t_policy t_probe t_shirai
             t_sim t_siteconf t_spool t_userfile t_treeyaml t_wire t_metrics t_measure)

full_shell=(cli place anomaly epilog)

case $set_name in
quick) units=("${quick_units[@]}"); shell=() ;;
full)  units=(); for t in "$build"/tests/t_*.t; do t=${t##*/}; units+=("${t%.t}"); done
       shell=("${full_shell[@]}") ;;
*) bail_out "MEMCHECK is quick or full, not '$set_name'" ;;
esac

command -v valgrind >/dev/null || bail_out "valgrind is missing (make deps)"
tmp=$(mktemp -d /tmp/toposcope-memcheck.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
tap_plan $(( ${#units[@]} + ${#shell[@]} ))

# ---- unit tests, two at a time ---------------------------------------------------------------
run_unit() {   # NAME: valgrind on build/tests/NAME.t; its TAP to NAME.out, the verdict to NAME.rc
  local s=$SECONDS
  valgrind "${valgrind_opts[@]}" --log-file="$tmp/$1.vg" "$build/tests/$1.t" > "$tmp/$1.out" 2>&1
  echo "$? $((SECONDS - s))" > "$tmp/$1.rc"
}
export -f run_unit
export build tmp
declare -p valgrind_opts | sed 's/^declare -a/declare -ga/' > "$tmp/opts.sh"
printf '%s\n' "${units[@]}" |
  xargs -P 2 -I{} bash -c '. "$1/opts.sh"; run_unit "$2"' _ "$tmp" {}
for u in "${units[@]}"; do
  read -r rc secs < "$tmp/$u.rc" || { rc=x; secs=?; }
  [ "$rc" = 0 ] && [ ! -s "$tmp/$u.vg" ]
  ok $? "$u: passes under valgrind, no memory error ($secs s)"
  if [ "$rc" != 0 ] || [ -s "$tmp/$u.vg" ]; then
    { echo "exit $rc (99: valgrind found errors)"; head -40 "$tmp/$u.vg"; grep '^not ok' "$tmp/$u.out" | head -10; } | diag
  fi
done

# ---- the CLI's shell tests, every toposcope process under valgrind ---------------------------
# A build directory of links to the real one, but for the two programs the tests exercise.
wrapped=$tmp/build
mkdir -p "$wrapped/bin" "$tmp/vg"
for f in "$build"/*; do [ "${f##*/}" = bin ] || ln -s "$f" "$wrapped/${f##*/}"; done
for f in "$build"/bin/*; do ln -s "$f" "$wrapped/bin/${f##*/}"; done
for prog in toposcope toposcope-epilog; do
  rm -f "$wrapped/bin/$prog"
  {
    echo '#!/bin/sh'
    printf 'exec valgrind'
    printf ' %q' "${valgrind_opts[@]}"
    printf ' --log-file=%q %q "$@"\n' "$tmp/vg/$prog.%p" "$build/bin/$prog"
  } > "$wrapped/bin/$prog"
  chmod +x "$wrapped/bin/$prog"
done
for t in "${shell[@]}"; do
  rm -f "$tmp"/vg/*
  s=$SECONDS
  TOPOSCOPE_BUILD=$wrapped bash "tests/$t.t" > "$tmp/$t.out" 2>&1
  rc=$?
  runs=$(ls "$tmp"/vg | wc -l)
  bad=$(find "$tmp/vg" -type f -size +0 | sort)
  notok=$(grep -c '^not ok' "$tmp/$t.out")
  [ $rc -eq 0 ] && [ "$notok" -eq 0 ] && [ "$runs" -gt 0 ] && [ -z "$bad" ]
  ok $? "tests/$t.t passes with its $runs toposcope processes under valgrind, none with a memory error ($((SECONDS - s)) s)"
  if [ $rc -ne 0 ] || [ "$notok" -ne 0 ] || [ -n "$bad" ]; then
    { grep '^not ok' "$tmp/$t.out" | head -10; for f in $bad; do echo "${f##*/}:"; head -30 "$f"; done; } | diag
  fi
done
tap_end
