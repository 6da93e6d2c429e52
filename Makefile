# noisygd: `make run` and `make test` each create .venv, install, then run.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DATA_DIR ?= ../shared/data/uci

.PHONY: run test test-slow test-all bench lint reproduce clean venv

venv: $(STAMP)

# torch is an optional extra; it is installed first, pinned exactly, so that pip
# takes the CPU wheel and never resolves a CUDA build.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade "pip>=23.2"
	$(BIN)/python -m pip install -q "torch==2.13.0" || echo "torch==2.13.0 not installable here: the torch backend will be skipped"
	$(BIN)/python -m pip install -q -e ".[test,plot,parquet]"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/noisygd demo

test: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow" -n 2 tests

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow tests

test-all: $(STAMP)
	$(BIN)/python -m pytest -q tests

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks experiments

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py --data-dir $(DATA_DIR)

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache
