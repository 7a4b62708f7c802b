#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Installs the Debian 12 packages dltrace builds and tests with. Idempotent:
# when every package is already present it only runs dpkg-query and exits.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  libflatbuffers-dev flatbuffers-compiler
  libgtest-dev
  libboost-dev
  nlohmann-json3-dev libcli11-dev
  libsimgrid-dev
  openmpi-bin libopenmpi-dev gfortran
  slurmctld slurmd slurm-client  # ctest record_slurm: a one-host Slurm the test starts itself
  valgrind  # scripts/bench-record.sh with DLTRACE_BENCH_INSTRUCTIONS=1
  hpcc
  scalapack-mpi-test  # ctest lower_mpi_patterns: ScaLAPACK's QR test driver (BLACS over MPI)
  python3-mpi4py python3-numpy lammps  # scripts/fidelity.sh: a Python training loop, a real MPI application
  clang libclang-rt-14-dev
  python3 iproute2 procps
  iperf3
  libns3-dev libgsl-dev ns3  # ns3: the helper programs libns3-dev's CMake package checks for
  protobuf-compiler libprotobuf-dev python3-protobuf
  chromium fonts-dejavu-core
  python3-matplotlib  # scripts/rdma-study.sh: the plot
  python3-sphinx python3-myst-parser  # scripts/docs.sh and ctest docs_build: the documentation site (Sphinx + MyST, offline)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages (${missing[*]}); run as root or install them with apt-get" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
