# The SPANK plugin: build/lib/spank_toposcope.so (spank/), loaded by slurmd, slurmstepd, sbatch,
# salloc and srun through plugstack.conf. It carries what it uses of lib/ (the hints.yaml reader,
# the site configuration, the job spool, hostlists) compiled position-independent with hidden visibility, so
# nothing of it can collide with Slurm's own symbols.
# The spank_* and slurm_* calls resolve in the process that loads it (not linked to libslurm).
# Slurm loads a plugin only into the release it was built against, so the headers decide:
#   make spank       the plugin, against the installed headers (<slurm/spank.h>)
#   make spank SLURM_INCLUDE=DIR
#                    against DIR/slurm/*.h instead (another release's libslurm-dev unpacked
#                    there), into BUILD/slurm-MAJOR.MINOR/lib/spank_toposcope.so
#   make spank-headers SLURM_HEADERS="DIR..."
#                    the same for each DIR in turn (one plugin per Slurm release)
#   make install     binaries, plugin, policies, samples, man pages under DESTDIR/PREFIX
#                    (PREFIX=/usr/local; LIBEXECDIR and DATADIR are compiled into the plugin)

PREFIX      ?= /usr/local
LIBEXECDIR  ?= $(PREFIX)/libexec/toposcope
DATADIR     ?= $(PREFIX)/share/toposcope
SLURM_INCLUDE ?=
ifeq ($(SLURM_INCLUDE),)
SPANK_BUILD := $(BUILD)
SLURM_CFLAGS :=
else
# a system directory, as /usr/include is: -Werror is for toposcope's code, not for old-style
# declarations in Slurm's headers (24.11's slurm.h has "void (*acct_full)();")
SLURM_CFLAGS := -isystem $(SLURM_INCLUDE)
# BUILD/slurm-24.11 from "#define SLURM_VERSION_NUMBER 0x180b05"
SPANK_BUILD := $(BUILD)/slurm-$(shell set -- $$(sed -n \
                 's/^.define SLURM_VERSION_NUMBER 0x\(..\)\(..\)\(..\).*/\1 \2/p' \
                 $(SLURM_INCLUDE)/slurm/slurm_version.h) && printf '%d.%02d' 0x$$1 0x$$2)
endif
# Slurm 25.05's slurm_spank_init_failure_mode: spank/probe_job_failure.c compiles where the
# headers have it (its values are enum members, which no #ifdef sees).
SPANK_PROBE := $(shell $(CC) $(SLURM_CFLAGS) -fsyntax-only spank/probe_job_failure.c 2>/dev/null && \
                 echo -DTOPOSCOPE_SPANK_JOB_FAILURE)
SPANK_SO    := $(SPANK_BUILD)/lib/spank_toposcope.so
SPANK_LIBSRC := lib/place/hints_read.c lib/place/mpienv.c lib/place/policy.c lib/util/ydoc.c \
                lib/util/error.c lib/util/hostlist.c lib/util/textout.c lib/site/siteconf.c \
                lib/site/spool.c lib/site/userfile.c
SPANK_LIBOBJ := $(SPANK_LIBSRC:%.c=$(SPANK_BUILD)/obj-spank/%.o)
SPANK_CFLAGS = $(ALL_CFLAGS) $(SLURM_CFLAGS) $(SPANK_PROBE) -fPIC \
               -DTOPOSCOPE_LIBEXECDIR='"$(LIBEXECDIR)"' -DTOPOSCOPE_DATADIR='"$(DATADIR)"'

.PHONY: spank spank-headers install
all: $(SPANK_SO)
spank: $(SPANK_SO)
spank-headers:
	@for dir in $(SLURM_HEADERS); do $(MAKE) --no-print-directory spank SLURM_INCLUDE=$$dir || exit 1; done

$(SPANK_BUILD)/obj-spank/lib/%.o: lib/%.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(SPANK_CFLAGS) -fvisibility=hidden -c $< -o $@

$(SPANK_BUILD)/obj-spank/spank/%.o: spank/%.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(SPANK_CFLAGS) -c $< -o $@

$(SPANK_SO): $(SPANK_BUILD)/obj-spank/spank/spank_toposcope.o $(SPANK_LIBOBJ)
	@mkdir -p $(dir $@)
	$(CC) $(SPANK_CFLAGS) -shared -o $@ $^ -lyaml

# Installation. The samples go to DATADIR/etc, never over an admin's /etc files.
BINDIR     ?= $(PREFIX)/bin
PLUGINDIR  ?= $(PREFIX)/lib/slurm
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
INSTALL    ?= install

install: all
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(PLUGINDIR) \
	  $(DESTDIR)$(DATADIR)/policies $(DESTDIR)$(DATADIR)/etc $(DESTDIR)$(MANDIR)/man1 \
	  $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	$(INSTALL) -m 755 $(CLI) $(DESTDIR)$(BINDIR)/toposcope
	$(INSTALL) -m 755 $(PROLOG_BIN) $(DESTDIR)$(LIBEXECDIR)/toposcope-prolog
	$(INSTALL) -m 755 $(EPILOG_BIN) $(DESTDIR)$(LIBEXECDIR)/toposcope-epilog
	$(INSTALL) -m 755 $(PROBE_BIN) $(DESTDIR)$(BINDIR)/toposcope-probe
	$(INSTALL) -m 755 $(SPANK_SO) $(DESTDIR)$(PLUGINDIR)/spank_toposcope.so
	$(INSTALL) -m 644 policies/*.yaml $(DESTDIR)$(DATADIR)/policies/
	$(INSTALL) -m 644 etc/plugstack.conf etc/toposcope.yaml etc/slurm.conf.toposcope $(DESTDIR)$(DATADIR)/etc/
	$(INSTALL) -m 644 doc/toposcope.1 $(DESTDIR)$(MANDIR)/man1/
	$(INSTALL) -m 644 doc/toposcope.yaml.5 $(DESTDIR)$(MANDIR)/man5/
	$(INSTALL) -m 644 doc/toposcope-prolog.8 doc/toposcope-epilog.8 doc/spank-toposcope.8 $(DESTDIR)$(MANDIR)/man8/
ifneq ($(HAVE_MPICC),)
	$(INSTALL) -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)/toposcope
	$(INSTALL) -m 644 $(HINTS_A) $(DESTDIR)$(LIBDIR)/
	$(INSTALL) -m 644 $(HINTS_SO_REAL) $(DESTDIR)$(LIBDIR)/
	ln -sf $(HINTS_SONAME) $(DESTDIR)$(LIBDIR)/libtoposcope-hints.so
	$(INSTALL) -m 644 hints/toposcope/hints.h $(DESTDIR)$(INCLUDEDIR)/toposcope/
endif
