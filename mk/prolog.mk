# The node agent: build/bin/toposcope-prolog (prolog/), the same agents as a job step behind
# `toposcope probe` (build/bin/toposcope-probe, PMIx rendezvous), the wire unit test and the
# testbed helper.
#   make prolog      both programs, build/tests/t_wire.t and build/bin/toposcope-treecmp
# prolog/ may use libslurm (hostlists), libmunge, libsodium and libpmix; lib/ may not.

PROLOG_SRC   := prolog/agent.c prolog/worker.c prolog/leader.c prolog/transport.c prolog/spool.c \
                prolog/cred.c prolog/options.c prolog/place_job.c prolog/wire.c
PROLOG_OBJ   := $(PROLOG_SRC:%.c=$(BUILD)/obj/%.o)
PROLOG_HDR   := $(wildcard prolog/*.h)
PROLOG_LIBS  := -lslurm -lmunge -lsodium -lpthread
PROLOG_BIN   := $(BUILD)/bin/toposcope-prolog
WIRE_TEST    := $(BUILD)/tests/t_wire.t
TREECMP      := $(BUILD)/bin/toposcope-treecmp
PROBE_BIN    := $(BUILD)/bin/toposcope-probe
PMIX_CFLAGS  := $(shell pkg-config --cflags pmix 2>/dev/null)
PMIX_LIBS    := $(shell pkg-config --libs pmix 2>/dev/null || echo -lpmix)

.PHONY: prolog
all: $(PROLOG_BIN) $(PROBE_BIN) $(WIRE_TEST) $(TREECMP)
prolog: $(PROLOG_BIN) $(PROBE_BIN) $(WIRE_TEST) $(TREECMP)

$(BUILD)/obj/prolog/%.o: prolog/%.c $(PROLOG_HDR) $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Iprolog -c $< -o $@

$(PROLOG_BIN): $(BUILD)/obj/prolog/main.o $(PROLOG_OBJ) $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIB_A) $(LDLIBS) $(PROLOG_LIBS)

# toposcope probe: the agents without libslurm, rendezvous through PMIx
$(BUILD)/obj/prolog/step.o: prolog/step.c $(PROLOG_HDR) $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(PMIX_CFLAGS) -Iprolog -c $< -o $@

$(PROBE_BIN): $(BUILD)/obj/prolog/step.o $(PROLOG_OBJ) $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIB_A) $(LDLIBS) $(PMIX_LIBS) -lmunge -lsodium -lpthread

# The wire format alone (no Slurm, no MUNGE): TAP, run by make check with the unit tests.
$(WIRE_TEST): tests/prolog/t_wire.c $(BUILD)/obj/prolog/wire.o $(LIB_A) $(HEADERS) $(PROLOG_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Iprolog -Itests/include -o $@ $< $(BUILD)/obj/prolog/wire.o $(LIB_A) $(LDLIBS) -lsodium

$(TREECMP): tests/testbed/treecmp.c $(LIB_A) $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB_A) $(LDLIBS)

UNIT_BIN += $(WIRE_TEST)
