# Fuzzing: every tests/fuzz/fuzz_*.c is a libFuzzer target built with all of lib/*/*.c and the
# parsers outside lib/ that take untrusted input (FUZZ_EXTRA_SRC: the agents' wire format).
#   make fuzz [FUZZ_SECONDS=N]   build into build-fuzz/ and run each target N seconds in turn
# New inputs go to build-fuzz/corpus/<target>/ (the seeds in tests/fuzz/corpus/<target>/ stay as
# they are); crashes land in build-fuzz/<target>-crash-* and fail the run. Copy an input worth
# keeping into tests/fuzz/corpus/<target>/ so tests/fuzz-corpus.t replays it in `make check`.

FUZZ_CC      ?= clang
FUZZ_DIR     := build-fuzz
FUZZ_EXTRA_SRC := prolog/wire.c
FUZZ_CFLAGS  := -std=c11 -D_GNU_SOURCE -O1 -g -Ilib -Iprolog -fsanitize=fuzzer,address,undefined \
                -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_SRC     := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN     := $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_DIR)/%)
# -timeout: an input that takes this long counts as a hang; -rss_limit_mb: as a memory blow-up.
FUZZ_FLAGS   ?= -timeout=20 -rss_limit_mb=2048 -print_final_stats=1

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(LIB_SRC) $(FUZZ_EXTRA_SRC) $(HEADERS) $(wildcard prolog/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(LIB_SRC) $(FUZZ_EXTRA_SRC) -lyaml -lhwloc -lsodium -lm

.PHONY: fuzz-build
fuzz-build: $(FUZZ_BIN)

fuzz: $(FUZZ_BIN)
	@set -e; for bin in $(FUZZ_BIN); do \
	  name=$${bin##*/}; work=$(FUZZ_DIR)/corpus/$$name; seeds=tests/fuzz/corpus/$$name; \
	  mkdir -p $$work; \
	  echo "fuzz: $$name for $(FUZZ_SECONDS) s"; \
	  $$bin $(FUZZ_FLAGS) -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=$(FUZZ_DIR)/$$name- \
	    $$work $$(test -d $$seeds && echo $$seeds) || { echo "fuzz: $$name FAILED" >&2; exit 1; }; \
	done; echo "fuzz: all targets ran $(FUZZ_SECONDS) s without a crash"
