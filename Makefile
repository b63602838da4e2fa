# meanfield-spectral: `make demo` runs the default config, `make test` runs the tests.
# Both create .venv and install what they need (FFTW headers for shtns via apt when root).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-slow bench paper-figures venv clean

$(STAMP): pyproject.toml scripts/setup.sh
	bash scripts/setup.sh "$(PYTHON)" "$(VENV)"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/meanfield run runs/demo.toml -o output/demo.nc --overwrite
	$(VENV)/bin/meanfield plot output/demo.nc -o output/demo.png
	@echo "archive: output/demo.nc   figure: output/demo.png"

test: $(STAMP)
	$(PY) -m pytest -q

test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow || [ $$? -eq 5 ]

bench: $(STAMP)
	$(PY) benchmarks/bench_s1.py
	$(PY) benchmarks/bench_s2.py

paper-figures: $(STAMP)
	bash scripts/paper_figures.sh output/paper

clean:
	rm -rf $(VENV) output .pytest_cache
