#!/usr/bin/env bash
# Replays every seed corpus file of every fuzz target (tests/fuzz/fuzz_*.c) under ASan/UBSan,
# built with the plain compiler and a small main() instead of libFuzzer, so `make check` catches
# a parser regression on any input that ever mattered without needing a fuzzing run.
set -u
cd "$(dirname "$0")/.."
. tests/tap.sh

CC=${CC:-cc}
FLAGS=(-std=c11 -D_GNU_SOURCE -Ilib -Iprolog -O0 -g -fsanitize=address,undefined -fno-sanitize-recover=all
       -fno-omit-frame-pointer)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

work=$(mktemp -d /tmp/fuzz-corpus.XXXXXX)
trap 'rm -rf "$work"' EXIT

targets=(tests/fuzz/fuzz_*.c)
tap_plan $(( ${#targets[@]} + 1 ))

# lib/ once, two compilers at a time; the -O0 build keeps this well under the time budget
mkdir -p "$work/obj"
# prolog/wire.c: the agents' wire parser (mk/fuzz.mk FUZZ_EXTRA_SRC), free of Slurm and MUNGE
if printf '%s\n' lib/*/*.c prolog/wire.c tests/fuzz/replay_main.c |
     xargs -P 2 -I{} sh -c 'obj="$1/$(echo "$2" | tr / _).o" src="$2"; shift 2; exec "$@" -c "$src" -o "$obj"' \
       _ "$work/obj" {} "$CC" "${FLAGS[@]}" 2> "$work/build.log"; then
  ok 0 "lib/ and the replay driver build with sanitizers"
else
  ok 1 "lib/ and the replay driver build with sanitizers"
  head -40 "$work/build.log" | diag
  for t in "${targets[@]}"; do ok 1 "$(basename "$t" .c): not built"; done
  tap_end
fi

for src in "${targets[@]}"; do
  name=$(basename "$src" .c)
  corpus=tests/fuzz/corpus/$name
  bin=$work/$name
  if ! "$CC" "${FLAGS[@]}" -o "$bin" "$src" "$work"/obj/*.o -lyaml -lhwloc -lsodium -lm 2> "$work/$name.log"; then
    ok 1 "$name builds"
    head -20 "$work/$name.log" | diag
    continue
  fi
  files=$(find "$corpus" -type f 2>/dev/null | wc -l)
  if [ "$files" -eq 0 ]; then
    ok 1 "$name has a seed corpus in $corpus"
    continue
  fi
  find "$corpus" -type f -print0 | sort -z | xargs -0 "$bin" > "$work/$name.out" 2>&1
  ok $? "$name replays $files corpus files"
  [ "$tap_last_failed" = 0 ] ||
    awk '/^replaying /{ last = $0; next }
         !shown && /ERROR|runtime error|abort|SUMMARY/ { print last; shown = 1 }
         shown && n++ < 25' "$work/$name.out" | diag
done
tap_end
