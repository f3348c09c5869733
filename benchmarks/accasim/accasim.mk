# AccaSim, the reference simulator that `make bench` measures xce against (issue 5).
# Include from the main Makefile:  include benchmarks/accasim/accasim.mk
# AccaSim lives in its own venv: it is pinned, unmaintained since 2021, and needs a
# Python >= 3.10 shim, none of which may leak into .venv.

ACCASIM_VERSION ?= 1.1.3
ACCASIM_VENV ?= .venv-accasim
ACCASIM_PYTHON ?= $(if $(PYTHON),$(PYTHON),python3)
ACCASIM_PY := $(ACCASIM_VENV)/bin/python
ACCASIM_STAMP := $(ACCASIM_VENV)/.installed-accasim-$(ACCASIM_VERSION)
ACCASIM_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
ACCASIM_RUN := $(ACCASIM_PY) $(ACCASIM_DIR)/run_accasim.py
ACCASIM_TRACES ?= ../shared/data/traces

.PHONY: accasim-venv accasim-bench

# Builds the venv only when it (or this version of AccaSim in it) is missing.
$(ACCASIM_STAMP):
	test -x $(ACCASIM_PY) || $(ACCASIM_PYTHON) -m venv $(ACCASIM_VENV)
	$(ACCASIM_PY) -m pip install --quiet --upgrade pip
	$(ACCASIM_PY) -m pip install --quiet 'accasim==$(ACCASIM_VERSION)'
	touch $@

accasim-venv: $(ACCASIM_STAMP)

# AccaSim alone on the issue-5 prefixes, one JSON object per line (about 2 minutes).
accasim-bench: $(ACCASIM_STAMP)
	$(ACCASIM_RUN) --workload $(ACCASIM_TRACES)/KTH-SP2-1996-2.1-cln.swf.gz \
		--nodes 100 --cores 1 --jobs 2000
	$(ACCASIM_RUN) --workload $(ACCASIM_TRACES)/LANL-CM5-1994-4.1-cln.swf.gz \
		--nodes 1024 --cores 1 --jobs 5000
	$(ACCASIM_RUN) --workload $(ACCASIM_TRACES)/LCG-2005-1.swf.gz \
		--nodes 24515 --cores 1 --jobs 5000
