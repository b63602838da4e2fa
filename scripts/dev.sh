#!/usr/bin/env bash
# meanfield-spectral developer entry point; needs only bash and Python 3.10+ (root on Debian
# installs the rest: a C compiler, Python headers and FFTW headers for shtns, python3-venv).
#   bash scripts/dev.sh setup       only create .venv and install
#   bash scripts/dev.sh demo        run runs/demo.toml -> output/demo.nc, output/demo.png
#   bash scripts/dev.sh test        the default test set (not marked slow), on every core
#   bash scripts/dev.sh test-slow   the tests marked slow, on every core
#   bash scripts/dev.sh bench       the benchmarks
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV=.venv
STAMP="$VENV/.installed"

if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ] || [ scripts/setup.sh -nt "$STAMP" ]; then
    bash scripts/setup.sh "$PYTHON" "$VENV"
    touch "$STAMP"
fi

case "${1:-}" in
    setup)
        ;;
    demo)
        "$VENV/bin/meanfield" run runs/demo.toml -o output/demo.nc --overwrite
        "$VENV/bin/meanfield" plot output/demo.nc -o output/demo.png
        echo "archive: output/demo.nc   figure: output/demo.png" ;;
    test)  # the default set, over every core (pytest-xdist); pytest's last line gives the counts
        "$VENV/bin/python" -m pytest -q -n auto --dist loadfile ;;
    test-slow)  # the tests marked slow, over every core
        "$VENV/bin/python" -m pytest -q -n auto --dist loadfile -m slow || [ $? -eq 5 ] ;;
    bench)
        "$VENV/bin/python" benchmarks/bench_s1.py
        "$VENV/bin/python" benchmarks/bench_s2.py
        "$VENV/bin/python" benchmarks/bench_snapshots.py ;;
    *)
        echo "usage: bash scripts/dev.sh {setup|demo|test|test-slow|bench}" >&2
        exit 2 ;;
esac
