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

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,rl,bench]'
	touch $@ $(VENV)/.installed

setup: $(VENV)/.installed
setup-test: $(VENV)/.installed-test

demo: setup
	$(BIN)/mlsched compare instances/demo.toml

test: setup-test
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
