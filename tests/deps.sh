#!/usr/bin/env bash
# Install every Debian package toposcope's build and tests need. Idempotent: packages that are
# already installed are skipped, and apt is not touched at all when nothing is missing.
set -euo pipefail

packages=(
  build-essential pkg-config perl            # compiler, make, prove
  libyaml-dev                                # policies and latency parameters
  clang libclang-rt-14-dev                   # libFuzzer targets (make fuzz), sanitizers
  valgrind                                   # make memcheck, tests/memcheck.t
  iproute2 procps psmisc                     # testbed: namespaces, veth, process checks
  munge libmunge-dev                         # authentication
  slurm-wlm slurmd slurmctld libslurm-dev    # the scheduler and spank.h
  libpmix-dev openmpi-bin libopenmpi-dev     # PMIx step mode, mpirun
  mpich libmpich-dev                         # tests/testbed-mpich.t: mpiexec.mpich, mpicc.mpich
  libhwloc-dev hwloc                         # intra-node trees
  libsodium-dev                              # MACs for the wire protocol
  python3 python3-yaml                       # tests: report output checked as JSON/YAML, forged datagrams
  dpkg-dev debhelper fakeroot lintian        # make deb, tests/package.t
  mpi-default-dev                            # make deb: the hints library's Build-Depends
  rpm                                        # tests/package.t parses the RPM spec (rpmspec), make rpm
  hpcc                                       # make bench-app, make demo: HPC Challenge
  librsvg2-bin                               # make demo: rsvg-convert, the report's picture as PNG
  debootstrap                                # make stack-debian13: the Debian 13 root (make check)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing packages: ${missing[*]}" >&2
  echo "deps: run 'make deps' as root (or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Services installed here must not start on their own: the testbed starts its own daemons.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; created_policy=1
fi
trap '[ $created_policy -eq 1 ] && rm -f "$policy"' EXIT
apt-get update -q >/dev/null
apt-get install -y -q "${missing[@]}"
