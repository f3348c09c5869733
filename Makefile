# xce — every target installs what it needs into .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: install demo test test-all test-slurm lint typecheck bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	@bash examples/demo.sh $(VENV)/bin/xce

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy --strict src/xce

# The CI suite: lint, types, and every test not marked slow.
test: lint typecheck
	$(PY) -m pytest -q -m "not slow"

# The suite against a real Slurm alone (root: installs Debian's slurm-wlm; docs/real-slurm.md).
test-slurm: $(STAMP)
	bash .ci/slurm/install.sh
	XCE_REQUIRE_SLURM=1 $(PY) -m pytest -q -m slurm

# Everything, including slow and large-trace tests.
test-all: lint typecheck
	$(PY) -m pytest -q

include benchmarks/accasim/accasim.mk

# Every benchmark; the simulation suite also runs AccaSim in its own venv (about 10 min).
bench: $(STAMP) accasim-venv
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) .venv-accasim .mypy_cache .pytest_cache .ruff_cache .hypothesis build dist
