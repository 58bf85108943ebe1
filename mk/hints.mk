# The hints helper for MPI programs (hints/): build/lib/libtoposcope-hints.a and .so (one header,
# hints/toposcope/hints.h) and the example build/bin/twolevel_bcast. Built only where mpicc is
# found; the hints.yaml reader it uses lives in lib/ (place/hints_read.c), so it is unit-tested and
# fuzzed without MPI. The library carries that reader and what it needs (ydoc, error) compiled
# position-independent, so a program links -ltoposcope-hints -lyaml and nothing of libtoposcope.
# The shared library is libtoposcope-hints.so.0 (its SONAME; bump it when toposcope/hints.h
# changes incompatibly), with libtoposcope-hints.so a link to it for the linker.

MPICC     ?= mpicc
HAVE_MPICC := $(shell command -v $(MPICC) 2>/dev/null)

ifneq ($(HAVE_MPICC),)
HINTS_SRC     := hints/hints.c lib/place/hints_read.c lib/util/ydoc.c lib/util/error.c
HINTS_OBJ     := $(HINTS_SRC:%.c=$(BUILD)/obj-pic/%.o)
HINTS_A       := $(BUILD)/lib/libtoposcope-hints.a
HINTS_SONAME  := libtoposcope-hints.so.0
HINTS_SO      := $(BUILD)/lib/libtoposcope-hints.so
HINTS_SO_REAL := $(BUILD)/lib/$(HINTS_SONAME)
HINTS_EXAMPLE := $(BUILD)/bin/twolevel_bcast
# -Ihints first: the helper's toposcope/hints.h, then lib's toposcope/*.h
HINTS_CFLAGS   = -Ihints $(ALL_CFLAGS) -fPIC

.PHONY: hints
all: $(HINTS_A) $(HINTS_SO) $(HINTS_EXAMPLE)
hints: $(HINTS_A) $(HINTS_SO) $(HINTS_EXAMPLE)

$(BUILD)/obj-pic/%.o: %.c $(HEADERS) hints/toposcope/hints.h
	@mkdir -p $(dir $@)
	$(MPICC) $(HINTS_CFLAGS) -c $< -o $@

$(HINTS_A): $(HINTS_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(HINTS_SO_REAL): $(HINTS_OBJ)
	@mkdir -p $(dir $@)
	$(MPICC) $(HINTS_CFLAGS) -shared -Wl,-soname,$(HINTS_SONAME) -o $@ $^ -lyaml

$(HINTS_SO): $(HINTS_SO_REAL)
	ln -sf $(HINTS_SONAME) $@

$(HINTS_EXAMPLE): hints/examples/twolevel_bcast.c $(HINTS_A) hints/toposcope/hints.h
	@mkdir -p $(dir $@)
	$(MPICC) $(HINTS_CFLAGS) -o $@ $< $(HINTS_A) -lyaml
else
hints:
	@echo "hints: no $(MPICC) found; the MPI hints helper is not built" >&2
endif
