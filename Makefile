# toposcope — plain GNU make, C11, pkg-config.
#   make            build build/bin/toposcope and build/lib/libtoposcope.a
#   make deps       install the Debian packages the build and the tests need (idempotent)
#   make check      deps + build + every test through prove (TAP), the testbed's last
#   make asan       unit tests (lib/*/test and each part's, e.g. t_wire) under AddressSanitizer + UBSan
#   make memcheck   every unit test and the CLI's shell tests under valgrind memcheck (make check
#                   runs a quick subset: tests/memcheck.t)
#   make fuzz       fuzz the parsers (FUZZ_SECONDS each, default 300)
#   make bench      benchmarks; writes bench/RESULTS.md
#   make deb        Debian packages into build/deb/; make rpm: RPMs into build/rpm/ (mk/package.mk)

CC      ?= cc
BUILD   ?= build
PKGS    := yaml-0.1 hwloc
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lyaml -lhwloc)
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
OPT     ?= -O2 -g
CFLAGS  ?=
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) -Ilib $(PKG_CFLAGS) $(CFLAGS)
LDLIBS  = $(PKG_LIBS) -lm

LIB_SRC   := $(sort $(wildcard lib/*/*.c))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
LIB_A     := $(BUILD)/lib/libtoposcope.a
TOOL_SRC  := $(sort $(wildcard tools/*.c))
TOOL_OBJ  := $(TOOL_SRC:%.c=$(BUILD)/obj/%.o)
CLI       := $(BUILD)/bin/toposcope
# Each part of lib/ keeps its unit tests beside it (lib/PART/test/t_*.c, with the fixtures only
# they use); fixtures several parts share, and the TAP helpers, are in tests/include/.
UNIT_SRC  := $(sort $(wildcard lib/*/test/t_*.c))
UNIT_BIN  := $(addprefix $(BUILD)/tests/,$(notdir $(UNIT_SRC:.c=.t)))
HEADERS   := $(wildcard lib/toposcope/*.h lib/*/*.h lib/*/test/*.h tests/include/*.h tools/*.h)

.PHONY: all deps check unit asan memcheck fuzz bench clean
all: $(LIB_A) $(CLI) $(UNIT_BIN)

$(BUILD)/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIB_A): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(CLI): $(TOOL_OBJ) $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(TOOL_OBJ) $(LIB_A) $(LDLIBS)

# build/tests/t_X.t from lib/PART/test/t_X.c, whichever part it is in.
$(foreach t,$(UNIT_SRC),$(eval $(BUILD)/tests/$(notdir $(t:.c=.t)): $(t) $(LIB_A) $(HEADERS)))
$(UNIT_BIN):
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -I$(dir $<) -Itests/include -o $@ $< $(LIB_A) $(LDLIBS)

deps:
	@tests/deps.sh

# Unit tests (C, TAP) and shell tests (tests/*.t, TAP) through prove.
unit: all
	prove --exec '' $(UNIT_BIN)

# Two phases. First the tests that need only this machine, two at a time; then the tests on
# the emulated cluster, one at a time (there is one testbed, and its accuracy checks want the
# CPUs the other tests would take). Both phases always run; either failing fails the check.
TESTBED_TESTS := $(sort $(wildcard tests/testbed*.t))
LOCAL_TESTS   := $(filter-out $(TESTBED_TESTS),$(sort $(wildcard tests/*.t)))
# The longest of them (10-40 s each, the package build first) start first, so that the two
# slots end together: in the order above the package build started near the end and ran
# alone, and the phase took 100 s instead of 75.
LOCAL_LONGEST := tests/package.t tests/memcheck.t $(BUILD)/tests/t_fast.t tests/epilog-concurrent.t \
                 tests/fast-regressions.t tests/report-write-topology.t tests/records-scale.t \
                 tests/hints.t tests/fuzz-corpus.t
LOCAL_ORDER    = $(LOCAL_LONGEST) $(filter-out $(LOCAL_LONGEST),$(UNIT_BIN) $(LOCAL_TESTS))

check: deps
	$(MAKE) -j2 all
	$(MAKE) stack-debian13
	@export TOPOSCOPE_BUILD=$(abspath $(BUILD)); \
	  prove -j2 --exec '' $(LOCAL_ORDER); local=$$?; \
	  prove --exec '' $(TESTBED_TESTS); testbed=$$?; \
	  exit $$((local | testbed))

asan:
	$(MAKE) BUILD=build-asan OPT="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" all
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 TOPOSCOPE_BUILD=$(abspath build-asan) \
	  prove --exec '' $(patsubst $(BUILD)/%,build-asan/%,$(UNIT_BIN))

memcheck: all
	MEMCHECK=full TOPOSCOPE_BUILD=$(abspath $(BUILD)) prove --exec '' tests/memcheck.t

FUZZ_SECONDS ?= 300

bench: all
	@bench/run.sh

clean:
	rm -rf $(BUILD) build-asan build-fuzz build-debian13

# Each part of the project adds its own targets and programs in mk/*.mk (fuzz, testbed, ...).
include $(sort $(wildcard mk/*.mk))
