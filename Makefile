# noisygd: `make run` and `make test` each create .venv, install, then run.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DATA_DIR ?= ../shared/data/uci

.PHONY: run test test-slow test-all bench bench-env bench-scale bench-scale-quick lint reproduce clean venv

venv: $(STAMP)

# No package code needs torch or dask yet, so neither is installed for run or test.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade "pip>=23.2"
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

# Peer libraries for benchmarks/bench_scale.py live in their own environment, never as
# dependencies of noisygd. diffprivlib 0.6.6 asks for scikit-learn>=1.4 but imports
# sklearn.tree._tree.DOUBLE, which scikit-learn 1.7 removed: pin the last release it imports with.
PEERS_VENV  := .venv-peers
PEERS_STAMP := $(PEERS_VENV)/.installed
PEERS_REQS  := "diffprivlib==0.6.6" "scikit-learn==1.6.1" numpy scipy

bench-env: $(PEERS_STAMP)

$(PEERS_STAMP): Makefile
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install -q --upgrade "pip>=23.2"
	$(PEERS_VENV)/bin/python -m pip install -q $(PEERS_REQS)
	$(PEERS_VENV)/bin/python -c "import diffprivlib, sklearn; print('peers:', diffprivlib.__version__, sklearn.__version__)"
	touch $(PEERS_STAMP)

bench-scale: $(STAMP) $(PEERS_STAMP)
	$(BIN)/python benchmarks/bench_scale.py --data-dir $(DATA_DIR)

bench-scale-quick: $(STAMP) $(PEERS_STAMP)
	$(BIN)/python benchmarks/bench_scale.py --quick --data-dir $(DATA_DIR)

clean:
	rm -rf $(VENV) $(PEERS_VENV) build dist src/*.egg-info .pytest_cache
