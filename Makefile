# Two entry points for a fresh machine: `make demo` and `make test`.
# Both create .venv and install what they need; nothing else is assumed.
# The inner loop while developing is `make check` (below): minutes, not a CI run.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test check lint types pytest soak bench simulate clean

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
# Several pytest processes side by side (docs/testing.md, "tocsin's own suite"): the
# real-process tests (tests/integration, the bench smoke tests, tests/cli: mostly waiting
# on their children, ~20% of a core) in SPLIT_SHARDS processes, everything else (CPU in
# the pytest process) in REST_SHARDS, each keeping its files of the suite
# (TOCSIN_SHARD=k/n, tests/shards.py). The first shard of the rest prints as it runs; the
# others' output is printed when all are done; `coverage combine` joins their data.
SPLIT := tests/integration tests/test_bench_smoke.py tests/cli
SPLIT_SHARDS ?= 4
REST_SHARDS ?= 2
SHARD_LOGS := .pytest-shards
pytest: $(VENV)/.installed-dev
	$(BIN)/python -m coverage erase
	rm -rf $(SHARD_LOGS) && mkdir $(SHARD_LOGS)
	for k in $$(seq $(SPLIT_SHARDS)); do \
	  { TOCSIN_SHARD=$$k/$(SPLIT_SHARDS) $(BIN)/python -m coverage run -p -m pytest -q \
	      -p no:cacheprovider $(SPLIT) >$(SHARD_LOGS)/split-$$k.log 2>&1; \
	    echo $$? >$(SHARD_LOGS)/split-$$k.rc; } & \
	done; \
	for k in $$(seq 2 $(REST_SHARDS)); do \
	  { TOCSIN_SHARD=$$k/$(REST_SHARDS) $(BIN)/python -m coverage run -p -m pytest -q \
	      -p no:cacheprovider $(addprefix --ignore=,$(SPLIT)) >$(SHARD_LOGS)/rest-$$k.log 2>&1; \
	    echo $$? >$(SHARD_LOGS)/rest-$$k.rc; } & \
	done; \
	TOCSIN_SHARD=1/$(REST_SHARDS) $(BIN)/python -m coverage run -p -m pytest -q \
	  -p no:cacheprovider $(addprefix --ignore=,$(SPLIT)); echo $$? >$(SHARD_LOGS)/rest-1.rc; \
	wait; status=0; \
	for rc in $(SHARD_LOGS)/*.rc; do \
	  log=$${rc%.rc}.log; \
	  if [ -f "$$log" ]; then echo "== $$log (run beside the others) =="; cat "$$log"; fi; \
	  code=$$(cat "$$rc"); echo "== $${rc%.rc}: exit $$code =="; \
	  [ "$$code" -eq 0 ] || status=1; \
	done; \
	rm -rf $(SHARD_LOGS); \
	$(BIN)/python -m coverage combine -q; $(BIN)/python -m coverage report; \
	exit $$status

test: lint types pytest

# The real-process suites (SPLIT) PASSES times in a row, each pass in SPLIT_SHARDS
# processes side by side, without coverage; stops at the first pass that fails, leaving
# its shards' output in $(SHARD_LOGS)-soak/ (docs/testing.md, "tocsin's own suite").
PASSES ?= 10
soak: $(VENV)/.installed-dev
	rm -rf $(SHARD_LOGS)-soak && mkdir $(SHARD_LOGS)-soak
	for i in $$(seq $(PASSES)); do \
	  start=$$(date +%s); pids=""; \
	  for k in $$(seq $(SPLIT_SHARDS)); do \
	    TOCSIN_REQUIRE_POSTGRES=1 TOCSIN_REQUIRE_REDIS=1 TOCSIN_REQUIRE_FAKETIME=1 \
	    TOCSIN_SHARD=$$k/$(SPLIT_SHARDS) $(BIN)/python -m pytest -q -p no:cacheprovider \
	      $(SPLIT) >$(SHARD_LOGS)-soak/shard-$$k.log 2>&1 & pids="$$pids $$!"; \
	  done; \
	  status=0; for p in $$pids; do wait $$p || status=1; done; \
	  echo "pass $$i of $(PASSES): $$(tail -qn1 $(SHARD_LOGS)-soak/shard-*.log | tr '\n' ' ')($$(( $$(date +%s) - start )) s)"; \
	  if [ $$status -ne 0 ]; then echo "pass $$i failed: $(SHARD_LOGS)-soak/"; exit 1; fi; \
	done; \
	rm -rf $(SHARD_LOGS)-soak; echo "$(PASSES) passes in a row green"

# The fast inner loop: lint, types and every test not marked `slow` (real processes,
# browsers, long simulations: pyproject.toml's markers), without coverage, the 25 slowest
# listed so a test that grew slow shows up. Under 3 minutes on the 2-core dev machine
# (docs/testing.md, "The test loop"); `make test` (CI) runs everything.
# In CHECK_SHARDS pytest processes side by side (one per core), the second's output
# (and its slowest) printed after the first's.
CHECK_SHARDS ?= 2
check: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests examples
	$(BIN)/mypy
	rm -rf $(SHARD_LOGS)-check && mkdir $(SHARD_LOGS)-check
	for k in $$(seq 2 $(CHECK_SHARDS)); do \
	  { TOCSIN_SHARD=$$k/$(CHECK_SHARDS) $(BIN)/python -m pytest -q -p no:cacheprovider \
	      -m "not slow" --durations=25 >$(SHARD_LOGS)-check/$$k.log 2>&1; \
	    echo $$? >$(SHARD_LOGS)-check/$$k.rc; } & \
	done; \
	TOCSIN_SHARD=1/$(CHECK_SHARDS) $(BIN)/python -m pytest -q -p no:cacheprovider \
	  -m "not slow" --durations=25; status=$$?; \
	wait; \
	for rc in $(SHARD_LOGS)-check/*.rc; do \
	  [ -f "$$rc" ] || continue; \
	  echo "== shard $$(basename $$rc .rc) of $(CHECK_SHARDS) (run beside the first) =="; \
	  cat "$${rc%.rc}.log"; [ "$$(cat $$rc)" -eq 0 ] || status=1; \
	done; \
	rm -rf $(SHARD_LOGS)-check; exit $$status

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
