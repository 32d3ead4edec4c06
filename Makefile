# The two set-up commands the README gives: `make install` and `make test`.
# TORCH is installed only when no torch is present, so an existing CUDA build is kept;
# on a machine without one, pin a version your package index serves as a CPU build.
PYTHON ?= python
TORCH ?= torch==2.13.0

.PHONY: install test
install:
	$(PYTHON) -m pip show torch >/dev/null 2>&1 || $(PYTHON) -m pip install "$(TORCH)"
	$(PYTHON) -m pip install -e ".[dev,jax,tune]"

test:
	$(PYTHON) -m pytest -q -n 2
