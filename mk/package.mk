# Packages, built from a copy of the tree (the tree itself stays clean):
#   make deb    Debian packages with dpkg-buildpackage into build/deb/ (debian/; needs the
#               Build-Depends of debian/control, dpkg-dev, debhelper and fakeroot: make deps)
#   make rpm    RPMs with rpmbuild into build/rpm/ (packaging/rpm/toposcope.spec)
# Both rebuild only when a file of the tree is newer than the last build.

DEB_DIR     := $(BUILD)/deb
RPM_DIR     := $(BUILD)/rpm
PKG_VERSION := $(shell awk -F'[()]' 'NR == 1 { print $$2 }' debian/changelog)
# The files of the tree, one a line: tracked and untracked but not ignored (so build/ is never
# copied), those that exist; without git, everything but the build directories and .git.
PKG_LIST_CMD := { git ls-files -co --exclude-standard 2>/dev/null || \
                  find . \( -name .git -o -name 'build*' \) -prune -o -type f -print | sed 's|^\./||'; } | \
                while read -r f; do [ -f "$$f" ] && echo "$$f"; done
# (listed only when a package is asked for: other targets pay nothing)
ifneq ($(filter deb rpm $(DEB_DIR)/% $(RPM_DIR)/%,$(MAKECMDGOALS)),)
PKG_FILES   := $(shell $(PKG_LIST_CMD))
endif
# parallel=2: the project's machines have two cores; DEB_BUILD_OPTIONS from the caller wins
DEB_BUILD_OPTIONS ?= parallel=2
# The package builds run make in the copy with their own variables: nothing of this make may
# reach them (MAKEFLAGS carries command-line variables: `make BUILD=/abs/build deb` would make
# the copy's `make clean` remove this tree's build directory).
PKG_ENV := env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES -u BUILD -u TOPOSCOPE_BUILD

.PHONY: deb rpm
deb: $(DEB_DIR)/stamp

# Copy, build, and keep only the packages (the copy stays when the build fails, to look at).
$(DEB_DIR)/stamp: $(PKG_FILES)
	@rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/toposcope-$(PKG_VERSION)
	@$(PKG_LIST_CMD) > $(DEB_DIR)/files
	@echo "deb: $$(wc -l < $(DEB_DIR)/files) files copied to $(DEB_DIR)/toposcope-$(PKG_VERSION), dpkg-buildpackage (log: $(DEB_DIR)/build.log)"
	@tar -cf - -T $(DEB_DIR)/files | tar -xf - -C $(DEB_DIR)/toposcope-$(PKG_VERSION)
	@cd $(DEB_DIR)/toposcope-$(PKG_VERSION) && \
	  $(PKG_ENV) DEB_BUILD_OPTIONS="$(DEB_BUILD_OPTIONS)" dpkg-buildpackage -us -uc -b > ../build.log 2>&1 || \
	  { tail -40 ../build.log >&2; echo "make deb: dpkg-buildpackage failed, log: $(DEB_DIR)/build.log" >&2; exit 1; }
	@rm -rf $(DEB_DIR)/toposcope-$(PKG_VERSION) $(DEB_DIR)/files
	@ls -1 $(DEB_DIR)/*.deb
	@touch $@

# The RPMs of packaging/rpm/toposcope.spec, from a tarball of the same files. On a non-RPM
# system (Debian) rpmbuild cannot see the installed libraries as packages: RPM_NODEPS=1
# (the default there) skips the BuildRequires check, and no debuginfo packages are made.
RPM_NODEPS ?= $(if $(wildcard /etc/debian_version),1)
rpm: $(RPM_DIR)/stamp

$(RPM_DIR)/stamp: $(PKG_FILES)
	@rm -rf $(RPM_DIR) && mkdir -p $(RPM_DIR)/SOURCES
	@$(PKG_LIST_CMD) > $(RPM_DIR)/files
	@echo "rpm: $$(wc -l < $(RPM_DIR)/files) files in $(RPM_DIR)/SOURCES/toposcope-$(PKG_VERSION).tar.gz, rpmbuild (log: $(RPM_DIR)/build.log)"
	@tar -czf $(RPM_DIR)/SOURCES/toposcope-$(PKG_VERSION).tar.gz -T $(RPM_DIR)/files \
	  --transform 's|^|toposcope-$(PKG_VERSION)/|'
	@$(PKG_ENV) rpmbuild -bb --define '_topdir $(abspath $(RPM_DIR))' \
	  $(if $(RPM_NODEPS),--nodeps --define 'debug_package %{nil}') \
	  packaging/rpm/toposcope.spec > $(RPM_DIR)/build.log 2>&1 || \
	  { tail -40 $(RPM_DIR)/build.log >&2; echo "make rpm: rpmbuild failed, log: $(RPM_DIR)/build.log" >&2; exit 1; }
	@rm -rf $(RPM_DIR)/BUILD $(RPM_DIR)/BUILDROOT $(RPM_DIR)/files
	@find $(RPM_DIR)/RPMS -name '*.rpm' | sort
	@touch $@
