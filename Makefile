# Every target sets itself up: a fresh clone needs only python3 (3.11+) and, for deploy, node.
SHELL := /bin/bash
PYTHON ?= python3
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
BIN := $(VENV)/bin
# One worker a core: measured on a fresh clone with the groups working, three workers took 881 s, two 827 s.
PYTEST_WORKERS ?= 2

# Python's bytecode cache on, whatever the environment says: with PYTHONDONTWRITEBYTECODE set (as on this machine)
# nothing in .venv is ever compiled to .pyc, and every interpreter the suite starts (each `inbox` call, each local
# stack and its embedded AWS) compiled boto3, moto and the rest from source again: about 0.6 of an `inbox` call's
# 1.1 CPU seconds, and 3 of the embedded AWS's 5.4 (measured with /usr/bin/time on the imports).
unexport PYTHONDONTWRITEBYTECODE
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export AWS_ACCOUNT_ID_ENDPOINT_MODE := disabled
# The interpreter itself, not what PATH names: a pyenv shim is a script, and uv, asked for it, would replace
# the whole .venv on every sync ("does not satisfy the request").
export UV_PYTHON := $(shell $(PYTHON) -c 'import sys; print(sys.executable)' 2>/dev/null)

.PHONY: setup browser run test check lint format synth bootstrap deploy bench chaos clean

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

$(VENV)/.synced: pyproject.toml uv.lock | $(UV)
	$(UV) sync --locked --quiet
	touch $@

setup: $(VENV)/.synced ## virtualenv with the locked dependencies

# Debian's Chromium and its driver, for the console's browser tests (tests/e2e/test_console.py): a fresh machine
# has neither, and a browser that a test tool downloads itself cannot be fetched on a closed network.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
browser: ## Debian's chromium and chromium-driver, where missing
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium chromium-driver; }

run: setup ## the local stack on http://127.0.0.1:$${INBOX_PORT:-8787}, until Ctrl-C
	$(BIN)/python -m inbox_local

# The slowest tests are reported at the end of every run (--durations), so a test that grows shows up at once.
PYTEST_REPORT := --durations=15 --durations-min=2
# Lint runs beside the tests, not before them: the test workers leave part of the two cores idle (a worker waiting on
# its local stack, the last groups of the run), and a cold mypy (a fresh clone has no cache) takes ~75 CPU s that
# fill it. Its output is printed after the tests', then pytest's closing line again; either failing fails the target.
TEST_LOG := .test.log
# The budget: every run says where it stands against it, so a change that slows the suite is seen
# in the run that makes it, not three issues later. Said, not asserted: a wall-clock limit would fail on a slower
# machine, not on a slower suite (tests/README.md, "Where the time goes").
TEST_BUDGET_SECONDS := 720
MAKE_STARTED := $(shell date +%s)
test: setup browser ## lint and every test tier, side by side (what CI runs)
	@set -o pipefail; ($(LINT)) > $(TEST_LOG).lint 2>&1 & lint=$$!; \
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup -m "not soak" $(PYTEST_REPORT) | tee $(TEST_LOG); tests=$$?; \
	wait $$lint; linted=$$?; echo "--- lint, run beside the tests: $(LINT)"; cat $(TEST_LOG).lint; \
	[ $$linted -eq 0 ] || echo "lint failed"; \
	took=$$(( $$(date +%s) - $(MAKE_STARTED) )); echo "make test took $$took s of its $(TEST_BUDGET_SECONDS) s budget"; \
	[ $$took -le $(TEST_BUDGET_SECONDS) ] || echo "make test is OVER ITS BUDGET: see the slowest tests above, tests/README.md"; \
	tail -n 1 $(TEST_LOG); rm -f $(TEST_LOG) $(TEST_LOG).lint; \
	exit $$(( tests != 0 ? tests : linted ))

check: setup lint ## the inner loop: lint, unit and integration tiers, no slow tests (a few minutes)
	$(BIN)/pytest -n $(PYTEST_WORKERS) -m "not e2e and not infra and not slow" $(PYTEST_REPORT) tests/unit tests/integration

LINT := $(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy .
lint: setup ## ruff and mypy
	$(LINT)

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

synth: setup ## offline CDK synth into cdk.out (cdk-nag runs as part of it)
	$(BIN)/python app.py

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

bootstrap: setup node_modules/.installed ## cdk bootstrap (once per account and region) for the account of your AWS credentials
	npx --no-install cdk bootstrap --app "$(BIN)/python app.py" $(CDK_ARGS)

deploy: setup node_modules/.installed ## cdk deploy to the account of your AWS credentials
	npx --no-install cdk deploy --app "$(BIN)/python app.py" $(CDK_ARGS)

bench: setup ## benchmarks, each a ratio against a baseline measured in the same run -> bench/results/latest.json
	$(BIN)/python -m bench

CHAOS_SEED ?= 1
CHAOS_PAYMENTS ?= 300
CHAOS_FUZZ_EXAMPLES ?= 50
chaos: setup ## a bigger chaos run on a local stack of its own (free ports), the ingest fuzzing with more examples, the soak runs
	$(BIN)/python -m inbox_cli.chaos --seed $(CHAOS_SEED) --payments $(CHAOS_PAYMENTS)
	INBOX_FUZZ_EXAMPLES=$(CHAOS_FUZZ_EXAMPLES) $(BIN)/pytest -q -n $(PYTEST_WORKERS) tests/integration/test_ingest_fuzz.py
	$(BIN)/pytest -q -m soak tests/e2e

clean:
	rm -rf cdk.out build .pytest_cache .mypy_cache .ruff_cache
