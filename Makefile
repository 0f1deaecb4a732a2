# Two commands for a fresh machine: `make demo` and `make test` (`make docs` builds the site alone).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test docs setup setup-test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

# The rl extra's torch comes first from PyTorch's CPU index: PyPI's Linux wheel pulls the CUDA stack
# (several GB).  Where that index cannot be reached, pip's configured index and find-links are used
# instead (a note says so); TORCH_INDEX= (empty) skips the step.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
RL_PINS = $(shell $(BIN)/python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['rl'])")

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(if $(TORCH_INDEX),$(BIN)/python -m pip install --quiet --retries 1 --timeout 30 --index-url $(TORCH_INDEX) $(RL_PINS) \
	    || echo "note: $(RL_PINS) not installed from $(TORCH_INDEX); it comes from the configured index")
	$(BIN)/python -m pip install --quiet -e '.[test,docs,rl,bench,gym,sb3]'
	touch $@ $(VENV)/.installed

setup: $(VENV)/.installed
setup-test: $(VENV)/.installed-test

demo: setup
	$(BIN)/mlsched compare instances/demo.toml

# The documentation site (docs/) into docs/_build/html, read afresh (-E) with warnings as errors: a
# cross-reference that names nothing, a page out of the toctree or a broken directive fails it.  The
# API pages are generated from the code, so the build imports every module (hence the test extras).
docs: setup-test
	rm -rf docs/_build/html
	$(BIN)/python -m sphinx -b html -E -W --keep-going -q docs docs/_build/html

# lint and type-check first (seconds), then the site, then the suite on two workers (pytest-xdist; a
# module's tests stay on one worker, so its module fixtures are built once); configuration in
# pyproject.toml.  One test alone: .venv/bin/python -m pytest tests/test_x.py::test_y
test: setup-test
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(MAKE) docs
	$(BIN)/python -m pytest -n 2 --dist loadscope

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache docs/_build docs/reference/api docs/tutorials/*.ipynb
