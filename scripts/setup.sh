#!/usr/bin/env bash
# Create the virtual environment and install meanfield-spectral with its test extras.
# shtns is built from source and needs the FFTW3 headers (Debian: libfftw3-dev).
set -euo pipefail
PYTHON="${1:-python3}"
VENV="${2:-.venv}"

have_fftw() {
    [ -f /usr/include/fftw3.h ] || [ -f /usr/local/include/fftw3.h ] || \
        { [ -n "${CPATH:-}" ] && ls ${CPATH//:/ } 2>/dev/null | grep -q '^fftw3.h$'; }
}

if ! have_fftw; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing FFTW headers (libfftw3-dev) for shtns"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libfftw3-dev >/dev/null
    else
        echo "setup: shtns needs the FFTW3 headers, which are missing." >&2
        echo "       Debian/Ubuntu: sudo apt-get install libfftw3-dev   (Fedora: fftw-devel; conda: fftw)" >&2
        echo "       then run this command again." >&2
        exit 1
    fi
fi

if ! "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null; then
    echo "setup: $PYTHON lacks venv/ensurepip. Debian: sudo apt-get install python3-venv" >&2
    exit 1
fi
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -e ".[test]"
"$VENV/bin/python" -c "import shtns, netCDF4, xarray; print('setup: ok (shtns', shtns.__version__ if hasattr(shtns, '__version__') else '', ')')"
