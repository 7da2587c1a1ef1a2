# One entry point for a fresh clone:
#   make agent TASK="..."   set up .venv and run the agent on the current directory
#   make test               set up .venv and run every test and check
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
TASK ?=
ARGS ?=

.PHONY: venv agent test lint format typecheck pytest test-vscode sandbox-image corpus language-servers bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,ray]'
	touch $(STAMP)

venv: $(STAMP)

# The task reaches the agent through the environment, unexpanded: neither make nor the shell
# interprets `$5`, backquotes or quotes in it. The recipe is not echoed; a failing agent
# makes make report `Error N` with N the agent's exit code (docs/cli.md).
unexport TASK
agent: override TASK := $(value TASK)
agent: export DRIVEROS_MAKE_TASK = $(TASK)
agent: $(STAMP)
	@if [ -z "$$DRIVEROS_MAKE_TASK" ]; then echo 'usage: make agent TASK="what the agent should do"' >&2; exit 1; fi
	@exec $(BIN)/driveros agent --task "$$DRIVEROS_MAKE_TASK" $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check core server tests bench
	$(BIN)/ruff format --check core server tests bench
	$(BIN)/lint-imports

format: $(STAMP)
	$(BIN)/ruff format core server tests bench
	$(BIN)/ruff check --fix core server tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

# The docker-backed tests need the sandbox image; build it whenever a daemon answers.
sandbox-image: $(STAMP)
	bash scripts/build-sandbox-image.sh

# Fetched once with the network (.ci/run runs both): the intel corpus of real projects and
# the semantic tools' TypeScript server; the tests then need no network.
corpus:
	bash scripts/fetch-corpus.sh

language-servers:
	bash scripts/install-language-servers.sh

pytest: $(STAMP)
	@if docker info >/dev/null 2>&1; then $(MAKE) --no-print-directory sandbox-image; fi
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -q -p no:cacheprovider $(ARGS)

test-vscode: $(STAMP)
	@if [ -f editors/vscode/package.json ]; then bash editors/vscode/scripts/test.sh; fi

test: lint typecheck pytest test-vscode

# The peers the benchmarks compare with (the official SDKs, pydantic-ai), once.
$(VENV)/.bench-stamp: $(STAMP) pyproject.toml
	$(BIN)/pip install --quiet -e '.[bench,otel]'
	touch $@

bench: $(VENV)/.bench-stamp
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m bench $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache dist build
