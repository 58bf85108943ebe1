# The epilog recorder: build/bin/toposcope-epilog (epilog/). Only lib/ and libc: hostlists come
# from lib/util/hostlist.c (Slurm's syntax), scontrol is run as a program when the policy acts.
#   make epilog

EPILOG_BIN := $(BUILD)/bin/toposcope-epilog

.PHONY: epilog
all: $(EPILOG_BIN)
epilog: $(EPILOG_BIN)

$(BUILD)/obj/epilog/%.o: epilog/%.c epilog/epilog.h $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(EPILOG_BIN): $(BUILD)/obj/epilog/main.o $(BUILD)/obj/epilog/actions.o $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIB_A) $(LDLIBS)
