# Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test setup setup-test clean

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
	$(BIN)/python -m pip install --quiet -e '.[test,rl,bench,gym,sb3]'
	touch $@ $(VENV)/.installed

setup: $(VENV)/.installed
setup-test: $(VENV)/.installed-test

demo: setup
	$(BIN)/mlsched compare instances/demo.toml

# lint and type-check first (seconds), then the suite; configuration in pyproject.toml
test: setup-test
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache
