# The SPANK plugin: build/lib/spank_toposcope.so (spank/), loaded by slurmd, slurmstepd, sbatch,
# salloc and srun through plugstack.conf. It carries what it uses of lib/ (the hints.yaml reader,
# the site configuration, the job spool, hostlists) compiled position-independent with hidden visibility, so
# nothing of it can collide with Slurm's own symbols.
# The spank_* and slurm_* calls resolve in the process that loads it (not linked to libslurm).
#   make spank       the plugin
#   make install     binaries, plugin, policies, samples, man pages under DESTDIR/PREFIX
#                    (PREFIX=/usr/local; LIBEXECDIR and DATADIR are compiled into the plugin)

PREFIX      ?= /usr/local
LIBEXECDIR  ?= $(PREFIX)/libexec/toposcope
DATADIR     ?= $(PREFIX)/share/toposcope
SPANK_SO    := $(BUILD)/lib/spank_toposcope.so
SPANK_LIBSRC := lib/place/hints_read.c lib/place/mpienv.c lib/util/ydoc.c lib/util/error.c lib/util/hostlist.c \
                lib/util/textout.c lib/site/siteconf.c lib/site/spool.c lib/site/userfile.c
SPANK_LIBOBJ := $(SPANK_LIBSRC:%.c=$(BUILD)/obj-spank/%.o)
SPANK_CFLAGS = $(ALL_CFLAGS) -fPIC -DTOPOSCOPE_LIBEXECDIR='"$(LIBEXECDIR)"' -DTOPOSCOPE_DATADIR='"$(DATADIR)"'

.PHONY: spank install
all: $(SPANK_SO)
spank: $(SPANK_SO)

$(BUILD)/obj-spank/lib/%.o: lib/%.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(SPANK_CFLAGS) -fvisibility=hidden -c $< -o $@

$(BUILD)/obj-spank/spank/%.o: spank/%.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(SPANK_CFLAGS) -c $< -o $@

$(SPANK_SO): $(BUILD)/obj-spank/spank/spank_toposcope.o $(SPANK_LIBOBJ)
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
