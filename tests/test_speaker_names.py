"""The vector leg's query leaves out the names of who speaks (`19_recall` `query_vector`, `without_speakers`): checked end
to end through an embedded store that records speakers, in English and Korean. A name in a question says whose lines
it wants; in the lines it mostly addresses the other person ("Hey Jon!"), so a query vector that keeps it is pulled to
greetings. `observe`, `MemoryService.query_vector(query, scope)` and `collect` make the same vector; a store that records
no names embeds the query as it is."""
from __future__ import annotations
import datetime as _dt, tempfile

import numpy as np
import pytest

from jarvis_memory import recall as R
from jarvis_memory.chroma import ChromaStore
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.scope import MemoryScope
from jarvis_memory.service import MemoryService
from jarvis_memory.settings import Settings

T0 = _dt.datetime(2026, 11, 2, 9, tzinfo=_dt.timezone.utc).timestamp()
JON, NONAMES = MemoryScope('jon', 'main', 's1'), MemoryScope('ann', 'main', 's1')

LINES = [   # (scope, speaker, answer speaker, text)
    (JON, 'Jon', 'Gina', 'U: Hey Gina! Jon here, good to see you Gina.\nA: Hey Jon! Great to see you, Jon.'),
    (JON, 'Jon', 'Gina', 'U: I visited Rome last spring, lovely cities.\nA: Sounds lovely.'),
    (JON, '민수', '영희', 'U: 영희야 안녕! 민수는 왔어.\nA: 민수는 반가워, 영희야.'),
    (JON, '민수', '영희', 'U: 부산에 살고 있어요.\nA: 바다 가깝겠네요.'),
    (NONAMES, None, None, 'U: Hey Jon! I visited Rome last spring.\nA: Lovely.'),
]


@pytest.fixture(scope='module')
def svc():
    s = Settings(path=tempfile.mkdtemp(), embedding_provider='hashing')
    svc = MemoryService(ChromaStore(s, embedder=HashingEmbedder()), s, clock=lambda: T0 + 86400)
    for n, (sc, who, to, text) in enumerate(LINES):
        meta = {k: v for k, v in (('speaker', who), ('answer_speaker', to)) if v}
        svc.write(sc, 'turn', text, at=T0 + n, metadata=meta)
    yield svc
    svc.store.close()


def nearest(svc, scope, qv) -> list[str]:
    return [it.content.split('\n')[0] for it, _ in svc.store.search(scope, embedding=qv, k=5)]


@pytest.mark.parametrize('query,left,first,greeting', [
    ('Which cities has Jon visited?', 'Which cities has visited?', 'U: I visited Rome last spring, lovely cities.', 'U: Hey Gina!'),
    ("What are Jon's cities?", 'What are cities?', 'U: I visited Rome last spring, lovely cities.', 'U: Hey Gina!'),
    ('민수는 어디에 살고 있어?', '어디에 살고 있어?', 'U: 부산에 살고 있어요.', 'U: 영희야 안녕!'),
])
def test_the_vector_leg_reads_the_query_without_who_speaks(svc, query, left, first, greeting):
    emb = svc.store.embedder
    assert svc.store.speakers(JON) == {'Jon', 'Gina', '민수', '영희'}
    qv = R.query_vector(svc.store, query, [JON])
    assert np.allclose(qv, emb.embed_one(left, query=True))                    # the names (and particle) left out
    assert np.allclose(svc.query_vector(query, JON), qv)                       # what observe makes, given the scope
    assert nearest(svc, JON, qv)[0] == first
    cos = lambda v: {it.content.split('\n')[0][:len(greeting)]: c for it, c in svc.store.search(JON, embedding=v, k=5)}
    assert cos(emb.embed_one(query, query=True)).get(greeting, 0) > cos(qv).get(greeting, 0)   # the name pulls to the greeting


def test_collect_and_observe_use_that_vector(svc):
    q = 'Which cities has Jon visited?'
    got = R.collect(svc.store, JON, q, svc.settings, now=T0 + 86400)
    given = R.collect(svc.store, JON, q, svc.settings, now=T0 + 86400, query_embedding=svc.query_vector(q, JON))
    rel = lambda c: {x.id: x.relevance for x in c.candidates}
    assert rel(got) == rel(given)
    obs = svc.observe(JON, [{'role': 'user', 'content': q}], now=T0 + 86400)
    assert obs.text == svc.observe(JON, [{'role': 'user', 'content': q}], now=T0 + 86400, query_embedding=svc.query_vector(q, JON)).text


def test_a_store_without_names_embeds_the_query_as_it_is(svc):
    q = 'Which cities has Jon visited?'
    assert svc.store.speakers(NONAMES) == frozenset()
    assert np.allclose(R.query_vector(svc.store, q, [NONAMES]), svc.store.embedder.embed_one(q, query=True))


def test_the_explorer_replays_that_vector(svc):
    from jarvis_memory.explorer import probe
    q = 'Which cities has Jon visited?'
    svc.write(JON, 'thought', 'Jon has visited Rome; ask Jon about other cities.', at=T0 + 10)   # hidden from recall, shown by the explorer
    p = probe(svc, JON, q, now=T0 + 86400)
    cands = [c for c in p.hidden if c.relevance is not None]
    assert len(cands) == 1
    want = svc.store.cosines(JON, [c.id for c in cands], svc.query_vector(q, JON))
    assert all(abs(c.relevance - want[c.id]) < 1e-5 for c in cands)
