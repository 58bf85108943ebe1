# tests/tap.sh — the TAP harness every shell test sources (tests/*.t directly, the testbed's
# through tests/testbed/lib.sh). Sourced, not run.
#   tap_plan N            the plan, first; a test that cannot know it calls tap_end without it
#   ok STATUS TEXT        "ok K - TEXT" when STATUS is 0, else "not ok K - TEXT", and then the
#                         line on stderr as well, with what diag prints after it: prove without
#                         -v (make check, CI) shows why a check failed, not only its number
#   diag                  standard input as "# " comment lines
#   has GREP-ARGS         grep's test of standard input, read to its end: the tests run under
#                         pipefail, where grep -q leaving at its first match fails the pipe by
#                         SIGPIPE whenever the writer still had lines to write (a race the
#                         load decides: ldd, --help, logs)
#   bail_out TEXT         "Bail out! TEXT" and exit 1: the test cannot go on at all
#   tap_end               the plan if tap_plan was not called (else a comment when the count
#                         differs), then exit: 0 when every check passed
#   monotonic_us_ago MS   CLOCK_MONOTONIC in microseconds, MS milliseconds ago: a budget's start
#                         as the plugin passes it (--budget-from), for the tests of budgets
#   tap_cli_env           for the tests of the installed programs (run from the repository's
#                         top): build, bin (toposcope), epilog (toposcope-epilog) from
#                         TOPOSCOPE_BUILD, and tmp, a directory removed on exit
tap_ran=0 tap_failed=0 tap_last_failed=0 tap_planned=

tap_plan() { tap_planned=$1; echo "1..$1"; }

ok() {
  tap_ran=$((tap_ran + 1))
  if [ "$1" -eq 0 ]; then
    echo "ok $tap_ran - $2"
    tap_last_failed=0
  else
    echo "not ok $tap_ran - $2"
    echo "#   Failed test $tap_ran - $2 (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    tap_failed=$((tap_failed + 1))
    tap_last_failed=1
  fi
}

diag() {
  if [ "$tap_last_failed" = 1 ]; then
    awk '{ print "# " $0; print "# " $0 > "/dev/stderr" }'
  else
    sed 's/^/# /'
  fi
}

has() { grep "$@" > /dev/null; }

bail_out() { echo "Bail out! $*"; exit 1; }

tap_end() {
  if [ -z "$tap_planned" ]; then
    echo "1..$tap_ran"
  elif [ "$tap_ran" -ne "$tap_planned" ]; then
    echo "# planned $tap_planned tests, ran $tap_ran"
  fi
  exit $((tap_failed > 0))
}

monotonic_us_ago() {
  perl -MTime::HiRes=clock_gettime,CLOCK_MONOTONIC -e \
    'printf "%.0f", clock_gettime(CLOCK_MONOTONIC) * 1e6 - $ARGV[0] * 1e3' "$1"
}

tap_cli_env() {
  build=${TOPOSCOPE_BUILD:-build}
  bin=$build/bin/toposcope
  epilog=$build/bin/toposcope-epilog
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
}
