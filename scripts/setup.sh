#!/usr/bin/env bash
# Create the virtual environment and install meanfield-spectral with its test extras.
# shtns is built from source: it needs a C compiler, the Python headers and the FFTW3 headers.
# As root on Debian/Ubuntu the missing system packages are installed with apt-get; otherwise
# the script names them and stops.
set -euo pipefail
PYTHON="${1:-python3}"
VENV="${2:-.venv}"

missing=()
command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || missing+=(build-essential)
[ -f /usr/include/fftw3.h ] || [ -f /usr/local/include/fftw3.h ] || missing+=(libfftw3-dev)
"$PYTHON" -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
    || missing+=(python3-dev)
"$PYTHON" -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)

if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing ${missing[*]} (needed to build shtns / create the venv)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "setup: missing system packages: ${missing[*]}" >&2
        echo "       Debian/Ubuntu: sudo apt-get install ${missing[*]}" >&2
        echo "       (Fedora: gcc python3-devel fftw-devel; conda: compilers fftw), then run this again." >&2
        exit 1
    fi
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -e ".[test]"
"$VENV/bin/python" -c "import shtns, netCDF4, xarray, dask.distributed" 2>/dev/null && echo "setup: ok"
# compile the numba kernels now (one to a few minutes), not in the first run (solvers/cli/warmup.py)
"$VENV/bin/python" -m solvers.cli.warmup > /dev/null && echo "setup: kernels compiled"
