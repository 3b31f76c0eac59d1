# Two commands do all set-up: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Keep heavy libraries from spinning extra threads that fight the UI thread.
export OPENBLAS_NUM_THREADS ?= 1
export HF_HUB_OFFLINE := 1
export HF_HUB_DISABLE_PROGRESS_BARS := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install test demo bench screenshots clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Re-install only when a project file changed; torch comes from the same resolve.
$(STAMP): $(BIN)/python pyproject.toml core/pyproject.toml
	$(BIN)/pip install --quiet -e ./core -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadgroup -q -p no:cacheprovider

# `palinode-tui demo` writes the demo store into a fresh temp dir and opens it.
demo: $(STAMP)
	$(BIN)/palinode-tui demo

bench: $(STAMP)
	$(BIN)/python -m bench.run

screenshots: $(STAMP)
	$(BIN)/python tools/scenes.py screenshots

clean:
	rm -rf $(VENV) .pytest_cache
