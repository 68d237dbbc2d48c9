# Two commands do all set-up on a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: install demo test lint typecheck unit bench compile clean

$(STAMP): pyproject.toml trainer/pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required; set PYTHON=python3.11")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e ".[local,dev]" -e "./trainer[framework,serve]"
	@touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check vertex_retrain components pipelines trainer bench tests compile.py

typecheck: $(STAMP)
	$(PY) -m mypy

# Two workers: many tests wait on processes, servers and signals, so two cores overlap well.
unit: $(STAMP)
	$(PY) -m pytest -n 2

test: lint typecheck unit

demo: $(STAMP)
	$(PY) compile.py demo

compile: $(STAMP)
	$(PY) compile.py compile

bench: $(STAMP)
	$(PY) -m bench.report

clean:
	rm -rf dist .pytest_cache .mypy_cache .ruff_cache
