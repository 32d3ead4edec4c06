# The two set-up commands the README gives: `make install` and `make test`.
# TORCH is installed only when no torch is present, so an existing CUDA build is kept;
# on a machine without one, pin a version your package index serves as a CPU build.
# `make test-min` proves the dependency floors of pyproject.toml: a fresh venv (MIN_VENV) with the
# LOWEST allowed versions (constraints-min.txt, also applied to the isolated build, so setuptools
# is at its floor too) and graphcost[dev,jax,tensorboard,tune,ray], then the fast tests (not `slow`).
# It downloads about 3 GB (PyPI's torch 2.4.0 is a CUDA build with its nvidia-* wheels). Tests
# that read the shared datasets need ../shared beside the checkout or GRAPHCOST_SHARED_DATA.
PYTHON ?= python
TORCH ?= torch==2.13.0
MIN_VENV ?= .venv-min
MIN_TESTS ?= tests benchmarks/tests

.PHONY: install test test-min
install:
	$(PYTHON) -m pip show torch >/dev/null 2>&1 || $(PYTHON) -m pip install "$(TORCH)"
	$(PYTHON) -m pip install -e ".[dev,jax,tune,ray]"

test:
	$(PYTHON) -m pytest -q -n 2 --durations=20

test-min:
	rm -rf $(MIN_VENV)
	$(PYTHON) -m venv $(MIN_VENV)
	PIP_CONSTRAINT=$(CURDIR)/constraints-min.txt $(MIN_VENV)/bin/python -m pip install -e ".[dev,jax,tensorboard,tune,ray]"
	$(MIN_VENV)/bin/python -m pip list
	$(MIN_VENV)/bin/python -m pytest -q -m "not slow" -n 2 $(MIN_TESTS)
