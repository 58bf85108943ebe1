# The emulated cluster: latency fabric emulator, UDP ping, bench-testbed, demo.
#   make testbed        build build/bin/toposcope-fabemu and build/bin/toposcope-udping
#   make bench-testbed  configured vs achieved delay (50 us .. 2 ms) and the emulator's CPU use
#   make bench-app      hpcc with and without --topo-aware on the payoff fabrics (etc/payoff)
#   make demo           the payoff story on etc/payoff (KEEP=1 leaves the testbed up)
#   make stack-debian13 the cached Debian 13 root (Slurm 24.11, Open MPI 5) and toposcope built in
#                       it into build-debian13/ (tests/testbed/stack; doc/testbed.md)

TESTBED_FABEMU := $(BUILD)/bin/toposcope-fabemu
TESTBED_UDPING := $(BUILD)/bin/toposcope-udping
TESTBED_BINS   := $(TESTBED_FABEMU) $(TESTBED_UDPING)

.PHONY: testbed bench-testbed bench-app demo stack-debian13
all: $(TESTBED_BINS)
testbed: $(TESTBED_BINS)

$(TESTBED_FABEMU): tests/testbed/fabemu.c $(LIB_A) $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB_A) $(LDLIBS)

$(TESTBED_UDPING): tests/testbed/udping.c $(LIB_A) $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB_A) $(LDLIBS)

bench-testbed: $(TESTBED_BINS)
	TOPOSCOPE_BUILD=$(abspath $(BUILD)) tests/testbed/bench

bench-app: deps
	$(MAKE) all
	TOPOSCOPE_BUILD=$(abspath $(BUILD)) bench/app.sh

demo: deps
	$(MAKE) all
	$(if $(TESTBED_STACK),$(MAKE) stack-$(TESTBED_STACK))
	TOPOSCOPE_BUILD=$(abspath $(BUILD)) KEEP=$(KEEP) TESTBED_STACK=$(TESTBED_STACK) tests/testbed/demo

stack-debian13:
	tests/testbed/stack debian13
