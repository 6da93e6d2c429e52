# noisygd: `make run` and `make test` each create .venv, install, then run.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DATA_DIR ?= ../shared/data/uci

# Peer libraries for the benchmarks (bench_scale: diffprivlib; bench_utility: torch, opacus)
# live in their own environment, never as dependencies of noisygd. The pins and their reasons
# are in benchmarks/peers/requirements.txt (scikit-learn 1.6.1: diffprivlib 0.6.6 imports
# sklearn.tree._tree.DOUBLE, which scikit-learn 1.7 removed).
PEERS_VENV  := .venv-peers
PEERS_STAMP := $(PEERS_VENV)/.installed
PEERS_REQS  := benchmarks/peers/requirements.txt

.PHONY: run test test-slow test-all postgres chromium docs bench bench-env bench-scale bench-scale-quick \
        bench-utility bench-utility-quick bench-secure judge-regression lint reproduce clean venv \
        bench-dask bench-dask-quick bench-torch bench-torch-quick

venv: $(STAMP)

# torch==2.13.0 exactly, before the package: the local CPU wheel, for noisygd.torch and its
# tests (any other torch spec pulls GBs of CUDA wheels). `noisygd demo` does not import it.
# dask and distributed (the Dask oracle's extra, noisygd[dask]) are installed for the tests too.
$(STAMP): pyproject.toml setup.py src/noisygd/oracles/_margin_kernels.c src/noisygd/oracles/_row_kernels.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade "pip>=23.2"
	$(BIN)/python -m pip install -q "torch==2.13.0"
	$(BIN)/python -m pip install -q -e ".[test,plot,parquet,docs,dask]"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/noisygd demo

test: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow" -n 2 tests

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow tests

test-all: $(STAMP)
	$(BIN)/python -m pytest -q tests

# PostgreSQL server binaries for the ledger's PostgreSQL tests (Debian's `postgresql` package).
# The tests start their own server on 127.0.0.1 and skip, with the reason, when none is installed.
postgres:
	@if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	  echo "PostgreSQL server binaries present"; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql \
	  || echo "could not install postgresql: the PostgreSQL ledger tests will be skipped"; \
	else echo "no apt-get: the PostgreSQL ledger tests will be skipped"; fi

# Headless Chromium for tests/report/test_chromium.py and docs/site/report_screenshot.py
# (Debian's `chromium` package). The tests skip, with the reason, when it is missing.
chromium:
	@if command -v chromium >/dev/null 2>&1; then \
	  echo "chromium present"; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium \
	  || echo "could not install chromium: the report's browser tests will be skipped"; \
	else echo "no apt-get: the report's browser tests will be skipped"; fi

# The documentation site (mkdocs.yml), strict: a broken link or a bad docstring fails. `make test`
# runs the same strict build (tests/report/test_docs_site.py) into a temporary folder.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks experiments

# Every bench_*.py but bench_utility (30+ min: `make bench-utility`); the peers' environment
# gives bench_scale its diffprivlib rows.
bench: $(STAMP) $(PEERS_STAMP)
	$(BIN)/python benchmarks/run_all.py --data-dir $(DATA_DIR)


bench-env: $(PEERS_STAMP)

# torch==2.13.0 first: the local CPU wheel; any other torch spec pulls GBs of CUDA wheels.
$(PEERS_STAMP): Makefile $(PEERS_REQS)
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install -q --upgrade "pip>=23.2"
	$(PEERS_VENV)/bin/python -m pip install -q "torch==2.13.0"
	$(PEERS_VENV)/bin/python -m pip install -q -r $(PEERS_REQS)
	$(PEERS_VENV)/bin/python -c "import torch, opacus, diffprivlib, sklearn; print('peers:', torch.__version__, opacus.__version__, diffprivlib.__version__, sklearn.__version__)"
	touch $(PEERS_STAMP)

bench-scale: $(STAMP) $(PEERS_STAMP)
	$(BIN)/python benchmarks/bench_scale.py --data-dir $(DATA_DIR)

bench-scale-quick: $(STAMP) $(PEERS_STAMP)
	$(BIN)/python benchmarks/bench_scale.py --quick --data-dir $(DATA_DIR)

bench-utility: $(STAMP) $(PEERS_STAMP)
	$(BIN)/python benchmarks/bench_utility.py --data-dir $(DATA_DIR)

bench-utility-quick: $(STAMP) $(PEERS_STAMP)
	$(BIN)/python benchmarks/bench_utility.py --quick --data-dir $(DATA_DIR)

# Dask (issue 22): 20 million rows written to Parquet in a temporary folder, local clusters of
# 1 and 2 workers, dask-ml from the peers' environment (run it alone: flock heavy.lock).
bench-dask: $(STAMP) $(PEERS_STAMP)
	$(BIN)/python benchmarks/bench_dask.py

bench-dask-quick: $(STAMP) $(PEERS_STAMP)
	$(BIN)/python benchmarks/bench_dask.py --quick

# Held-out synthetic judge of DPLinearRegression's defaults (about 10 s; docs/estimators.md).
judge-regression: $(STAMP)
	$(BIN)/python benchmarks/judge_regression.py

# Secure noise (OpenDP's discrete Gaussian) against the default sampler (about 40 s).
bench-secure: $(STAMP)
	$(BIN)/python benchmarks/bench_secure.py

# noisygd.torch against Opacus 1.6 (hooks, ghost clipping) and plain torch: MLP and CNN on
# digits and a CIFAR-shaped synthetic set, then the CNN at epsilon 1, 2, 8 (about 15 min).
bench-torch: $(STAMP) $(PEERS_STAMP)
	$(BIN)/python benchmarks/bench_torch_vs_opacus.py

# The digits MLP row alone (under 3 min): one JSON line.
bench-torch-quick: $(STAMP) $(PEERS_STAMP)
	$(BIN)/python benchmarks/bench_torch_vs_opacus.py --quick

clean:
	rm -rf $(VENV) $(PEERS_VENV) build dist src/*.egg-info .pytest_cache site src/noisygd/oracles/_margin_kernels_c.*.so src/noisygd/oracles/_row_kernels_c.*.so
