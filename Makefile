# Two entry points for a fresh machine: `make demo` and `make test`.
# Both create .venv and install what they need; nothing else is assumed.
# The inner loop while developing is `make check` (below): minutes, not a CI run.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test check lint types pytest bench simulate clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed-base: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[dev,postgres]'
	touch $@

demo: $(VENV)/.installed-base
	$(BIN)/tocsin demo

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests examples

types: $(VENV)/.installed-dev
	$(BIN)/mypy

# The suite under coverage (lines and branches of src/tocsin; [tool.coverage] in
# pyproject.toml), then the report: its TOTAL line is the figure in docs/testing.md.
# Two pytest processes, one per core of the 2-core CI machine: tests/integration, the
# bench smoke tests and tests/cli (real servers and processes: mostly waiting on children,
# whose code coverage does not trace; a little under half of the suite's time without
# coverage, docs/performance.md) beside everything else; the split's output is printed
# when both are done, and `coverage combine` joins their data.
SPLIT := tests/integration tests/test_bench_smoke.py tests/cli
pytest: $(VENV)/.installed-dev
	$(BIN)/python -m coverage erase
	rm -f .pytest-split.log .pytest-split.rc
	{ $(BIN)/python -m coverage run -p -m pytest -q -p no:cacheprovider $(SPLIT) \
	    >.pytest-split.log 2>&1; echo $$? >.pytest-split.rc; } & \
	$(BIN)/python -m coverage run -p -m pytest -q $(addprefix --ignore=,$(SPLIT)); rest=$$?; \
	wait; echo "== $(SPLIT) (run beside the rest) =="; cat .pytest-split.log; \
	split=$$(cat .pytest-split.rc); rm -f .pytest-split.log .pytest-split.rc; \
	$(BIN)/python -m coverage combine -q; $(BIN)/python -m coverage report; \
	test "$$rest" -eq 0 && test "$$split" -eq 0

test: lint types pytest

# The fast inner loop: lint, types and every test not marked `slow` (real processes,
# browsers, long simulations: pyproject.toml's markers), without coverage, the 25 slowest
# listed so a test that grew slow shows up. Under 3 minutes on the 2-core dev machine
# (docs/testing.md, "The test loop"); `make test` (CI) runs everything.
check: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests examples
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -m "not slow" --durations=25

# Simulated clusters under faults drawn from seeds FIRST..FIRST+SEEDS-1 (docs/testing.md,
# "Simulating a cluster"), in JOBS processes; each failure prints its seed and the command
# replaying it. A long range runs in chunks: `make simulate SEEDS=500 FIRST=5001`.
SEEDS ?= 100
FIRST ?= 1
JOBS ?= 2
simulate: $(VENV)/.installed-dev
	$(BIN)/python -m tocsin.testing --seeds $(SEEDS) --first $(FIRST) --jobs $(JOBS)

bench: $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[bench,postgres]'
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .coverage
