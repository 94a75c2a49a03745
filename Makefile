# Two commands matter: `make demo` (the main job, offline) and `make test` (the whole suite, as CI runs it).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip -q --disable-pip-version-check

.PHONY: install demo test explore docs clean

install: $(VENV)/.installed

# A fresh venv with the package (editable) and its test tools.
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(PIP) install -e ".[dev]"
	touch $@

demo: install
	$(PY) -m jarvis_memory.cli demo

test: install
	$(PY) tools/run_tests.py

docs: install
	$(VENV)/bin/nbdev-export && $(PY) tools/readme.py

clean:
	rm -rf $(VENV) _docs _proc .pytest_cache reports
