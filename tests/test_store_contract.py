"""Contract of `jarvis_memory.store.MemoryStore`, run through the protocol (`open_store`) against every implementation:
embedded Chroma AND a real `chroma run` server (SPEC S-1.6, S-2, S-11.1). Every test uses fresh user ids, so the
server-backed store can be shared. A new backend joins by adding its entries to `IMPLEMENTATIONS` and `location`.
Tests of Chroma specifics (URLs, paths, collections) build `ChromaStore` directly."""
from __future__ import annotations
import socket, uuid
from dataclasses import replace

import numpy as np
import pytest

from jarvis_memory.scope import MemoryScope, MemoryItem, ReadPolicy, Team, ItemError, ScopeError, MemoryInputError
from jarvis_memory.settings import Settings
from jarvis_memory.embeddings import HashingEmbedder, EmbeddingError
from jarvis_memory.store import MemoryStore, Filter, StoreError, StoreUnavailable, open_store
from jarvis_memory.chroma import ChromaStore, collection_name
from servers import chroma_server, free_port
from fakes import Flaky

T0 = 1_700_000_000.25
EMB = HashingEmbedder(64)


def team():
    return Team(policies=[ReadPolicy('main'), ReadPolicy('karen', edm=('self',), pdm=('self', 'main'))])


@pytest.fixture(scope='module')
def server_url(tmp_path_factory):
    with chroma_server(tmp_path_factory.mktemp('chroma-server')) as url:
        yield url


IMPLEMENTATIONS = ['chroma-embedded', pytest.param('chroma-server', marks=pytest.mark.server)]


@pytest.fixture(params=IMPLEMENTATIONS)
def mode(request): return request.param


@pytest.fixture
def location(mode, tmp_path, request):
    "kwargs of `open_store` for this test's implementation: the backend and where it keeps its data."
    if mode == 'chroma-embedded': return dict(backend='chroma', path=tmp_path / 'chroma')
    return dict(backend='chroma', server_url=request.getfixturevalue('server_url'))


def opened(embedder, **location) -> MemoryStore:
    "A store of the implementation at `location`, through the protocol."
    return open_store(Settings(), embedder=embedder, team=team(), **location)


@pytest.fixture
def store(location):
    s = opened(EMB, **location)
    yield s
    s.close()


def test_every_implementation_is_a_memory_store(store, mode):
    assert isinstance(store, MemoryStore), mode


def test_chroma_store_satisfies_the_protocol(tmp_path):
    with ChromaStore(Settings(), EMB, team(), path=tmp_path / 'c') as s:
        assert isinstance(s, MemoryStore)
    class NoCosines(ChromaStore): cosines = None                 # a missing method is not a store
    assert not isinstance(NoCosines.__new__(NoCosines), MemoryStore)


@pytest.fixture
def alice():
    "A fresh user id per test (the server is shared between tests)."
    return f"alice-{uuid.uuid4().hex[:8]}"


def sc(user, agent='main', session='s1'): return MemoryScope(user, agent, session)


def snapshot(store, user, agents=('main', 'karen')):
    "Everything of `user` that any of `agents` can see, including superseded items and embeddings."
    out = {}
    for a in agents:
        for it in store.list(sc(user, a), filter=Filter(include_superseded=True), order_by=None):
            full = store.get(sc(user, a), [it.id], include_embeddings=True)[0]
            out[it.id] = (replace(full, embedding=None), None if full.embedding is None else full.embedding.tolist())
    return out


# ---------------------------------------------------------------------------------------------- round trip
def test_round_trip_every_field(store, alice):
    a = MemoryItem(id='full', user_id=alice, agent_id='main', source='task_pattern', content='예산: 수입 → 고정비 → 저축',
                   session_id='s-7', importance=0.37, created_at=T0 + 0.123456, last_accessed=T0 + 99.5, rehearsal=4,
                   metadata={'task_type': 'budget', 'steps': ['수입', '고정비'], 'ns': [1, 2, 3], 'ws': [0.5, 1.5],
                             'flags': [True, False], 'ok': True, 'n': 2**62, 'x': -1.25, '키': '값', 'layer': 'mine'})
    b = MemoryItem(id='bare', user_id=alice, agent_id='karen', source='explicit', content='Alice likes tea',
                   session_id=None, created_at=T0)
    c = MemoryItem(id='given-vec', user_id=alice, agent_id='main', source='turn', content='U: hi\nA: hello',
                   created_at=T0 + 1, embedding=EMB.embed_one('something else entirely'))
    assert store.put([a, b, c]) == ['full', 'bare', 'given-vec']
    got = {g.id: g for g in store.get(sc(alice), ['full', 'bare', 'given-vec'], include_embeddings=True)}
    for it in (a, b, c):
        assert replace(got[it.id], embedding=None) == replace(it, embedding=None)
    assert got['bare'].session_id is None and got['bare'].last_accessed is None
    assert got['full'].layer == 'pdm' and got['full'].kind == 'procedural'
    np.testing.assert_allclose(got['full'].embedding, EMB.embed_one(a.content), atol=1e-6)
    np.testing.assert_allclose(got['given-vec'].embedding, c.embedding, atol=1e-6)   # a supplied vector is kept
    assert got['full'].embedding.dtype == np.float32
    assert all(g.embedding is None for g in store.get(sc(alice), ['full', 'bare']))


def test_missing_user_reads_nothing_and_creates_nothing(store, alice):
    ghost = sc(f"ghost-{alice}")
    assert store.list(ghost) == [] and store.get(ghost, ['x']) == [] and store.count(ghost) == 0
    assert store.keyword(ghost, ['a']) == [] and store.search(ghost, 'a') == []
    assert store.touch(ghost, ['x'], T0) == 0 and store.delete(ghost, ['x']) == 0
    assert store.delete_where(ghost, Filter()) == 0 and store.reembed(ghost) == 0
    assert collection_name(ghost.user_id) not in [c.name for c in store._client.list_collections()]


# ---------------------------------------------------------------------------------------------- natural keys
def test_natural_key_rewrite_replaces_whole_row(store, alice):
    s = sc(alice)
    x = MemoryItem.new(s, 'extracted', '거주지: 서울', id='home', importance=0.5, created_at=T0, metadata={'a': 1, 'b': 2})
    store.put([x])
    store.touch(s, ['home'], T0 + 5); store.rehearse(s, ['home'], 2)
    store.update_metadata(s, ['home'], {'superseded_by': 'other'})
    assert store.list(s) == []                                          # hidden while superseded
    y = replace(x, content='거주지: 부산', importance=0.9, metadata={'a': 3})
    store.put([y])
    got = store.get(s, ['home'], include_embeddings=True)[0]
    assert got.metadata == {'a': 3}                                     # stale 'b' and 'superseded_by' gone
    assert (got.content, got.importance, got.last_accessed, got.rehearsal) == ('거주지: 부산', 0.9, None, 0)
    np.testing.assert_allclose(got.embedding, EMB.embed_one('거주지: 부산'), atol=1e-6)
    assert [it.id for it in store.list(s)] == ['home'] and store.count(s, Filter(include_superseded=True)) == 1
    top, cos = store.search(s, '거주지: 부산', k=1)[0]
    assert top.id == 'home' and cos == pytest.approx(1.0, abs=1e-4)
    # the sort-key cache follows the rewrite: importance order uses the new value
    store.put([MemoryItem.new(s, 'extracted', 'other fact', id='other', importance=0.6, created_at=T0 + 1)])
    assert [it.id for it in store.list(s, order_by='importance')] == ['home', 'other']
    store.put([replace(y, importance=0.1)])
    assert [it.id for it in store.list(s, order_by='importance', limit=1)] == ['other']


def test_semantic_row_may_be_rewritten_by_another_agent_but_episodes_may_not(store, alice):
    store.put([MemoryItem.new(sc(alice), 'housing_profile', '주거: 전세', id='housing'),
               MemoryItem.new(sc(alice), 'turn', 'U: a\nA: b', id='t1')])
    store.put([MemoryItem.new(sc(alice, 'karen'), 'housing_profile', '주거: 월세', id='housing')])
    assert store.get(sc(alice), ['housing'])[0].agent_id == 'karen'
    with pytest.raises(ItemError, match="'main'"):
        store.put([MemoryItem.new(sc(alice, 'karen'), 'turn', 'U: mine\nA: now', id='t1')])
    assert store.get(sc(alice), ['t1'])[0].content == 'U: a\nA: b'


# ---------------------------------------------------------------------------------------------- search
def test_search_ordering_cosines_and_min_cosine(store, alice):
    s = sc(alice)
    texts = ['서울 날씨 맑음', '서울 맛집 추천', '부산 바다 여행', 'budget plan for march', 'weekly budget review', '등산 코스 북한산']
    store.put([MemoryItem.new(s, 'turn', t, id=f'i{n}', created_at=T0 + n) for n, t in enumerate(texts)])
    q = '서울 날씨'
    res = store.search(s, q, k=4)
    assert len(res) == 4
    cos = [c for _, c in res]
    assert cos == sorted(cos, reverse=True)
    qv, M = EMB.embed_one(q, query=True), EMB.embed(texts)
    exact = {f'i{n}': float(v) for n, v in enumerate(M @ qv)}
    assert [it.id for it, _ in res] == sorted(exact, key=lambda i: -exact[i])[:4]
    for it, c in res: assert c == pytest.approx(exact[it.id], abs=1e-4)
    floor = sorted(exact.values(), reverse=True)[1] - 1e-6
    assert [it.id for it, _ in store.search(s, q, min_cosine=floor)] == sorted(exact, key=lambda i: -exact[i])[:2]
    assert store.search(s, embedding=qv, k=1)[0][0].id == res[0][0].id
    assert [it.id for it, _ in store.search(s, q, filter=Filter(since=T0 + 3))] == \
        [i for i in sorted(exact, key=lambda i: -exact[i]) if int(i[1:]) >= 3]
    with pytest.raises(StoreError, match='exactly one'): store.search(s)
    with pytest.raises(StoreError, match='k must be'): store.search(s, q, k=0)
    with pytest.raises(ItemError, match='shape'): store.search(s, embedding=np.ones(3))


# ---------------------------------------------------------------------------------------------- keyword
def test_keyword_korean_substring_any_term_newest_first(store, alice):
    s = sc(alice)
    store.put([MemoryItem.new(s, 'explicit', '거주지: 서울에 산다', id='k1', created_at=T0),
               MemoryItem.new(s, 'turn', 'U: 서울역 가는 길?\nA: 1호선', id='k2', created_at=T0 + 2),
               MemoryItem.new(s, 'turn', 'U: trip to Seoul\nA: ok', id='k3', created_at=T0 + 1),
               MemoryItem.new(s, 'turn', 'U: 50% off_now\nA: ok', id='k4', created_at=T0 + 3)])
    assert [it.id for it in store.keyword(s, ['서울'])] == ['k2', 'k1']
    assert [it.id for it in store.keyword(s, ['서울', 'Seoul'])] == ['k2', 'k3', 'k1']
    assert [it.id for it in store.keyword(s, ['서울', 'Seoul'], limit=2)] == ['k2', 'k3']
    assert [it.id for it in store.keyword(s, ['seoul'])] == []                  # exact, case-sensitive substring
    assert [it.id for it in store.keyword(s, ['%'])] == ['k4'] and store.keyword(s, ['_n']) != []
    assert [it.id for it in store.keyword(s, ['서울'], filter=Filter(layers='semantic'))] == ['k1']
    assert store.keyword(s, []) == []
    with pytest.raises(StoreError, match='terms'): store.keyword(s, '서울')
    with pytest.raises(StoreError, match='non-empty'): store.keyword(s, ['  '])


def test_lexical_bm25_under_the_read_clause_and_current(store, alice):
    "The BM25 leg (issue 13): rarer shared words rank higher, stems meet, the read clause holds, writes and deletes show at once."
    s, k = sc(alice), sc(alice, 'karen', 's1/karen')
    store.put([MemoryItem.new(s, 'explicit', '거주지: 서울에 산다', id='l1', created_at=T0),
               MemoryItem.new(s, 'turn', 'U: I painted a sunset over the lake\nA: lovely', id='l2', created_at=T0 + 1),
               MemoryItem.new(s, 'turn', 'U: the lake was cold\nA: brr', id='l3', created_at=T0 + 2),
               MemoryItem.new(k, 'turn', 'U: paint the fence\nA: ok', id='l4', created_at=T0 + 3)])
    assert [it.id for it, _ in store.lexical(s, 'What did I paint at the lake?')] == ['l2', 'l3']   # karen's l4: not readable
    assert [it.id for it, _ in store.lexical(k, 'paint')] == ['l4']                                # karen may not read main's turns
    assert [it.id for it, _ in store.lexical(s, '서울에서?')] == ['l1']
    sc_ = store.lexical_scores(s, 'painted lake', ['l1', 'l2', 'l3', 'l4'])
    assert set(sc_) == {'l2', 'l3'} and sc_['l2'] > sc_['l3'] > 0
    store.delete(s, ['l2'])
    assert [it.id for it, _ in store.lexical(s, 'painted lake')] == ['l3']
    assert store.lexical(sc(f"{alice}-x"), 'lake') == []
    with pytest.raises(StoreError, match='query'): store.lexical(s, 3)


def test_speakers_under_the_read_clause_and_current(store, alice):
    "The names that speak in what a scope may read (the vector leg leaves them out of its query): writes and deletes show at once."
    s, k = sc(alice), sc(alice, 'karen', 's1/karen')
    store.put([MemoryItem.new(s, 'turn', 'U: hi Gina\nA: hi Jon', id='p1', created_at=T0, metadata={'speaker': 'Jon', 'answer_speaker': 'Gina'}),
               MemoryItem.new(s, 'turn', 'U: 안녕\nA: 네', id='p2', created_at=T0 + 1, metadata={'speaker': '민수'}),
               MemoryItem.new(s, 'turn', 'U: no names\nA: none', id='p3', created_at=T0 + 2),
               MemoryItem.new(k, 'turn', 'U: secret\nA: ok', id='p4', created_at=T0 + 3, metadata={'speaker': 'Karen'})])
    assert store.speakers(s) == {'Jon', 'Gina', '민수'}          # karen's p4: not readable by main
    assert store.speakers(k) == {'Karen'}                         # karen may not read main's turns
    store.delete(s, ['p2'])
    assert store.speakers(s) == {'Jon', 'Gina'}
    assert store.speakers(sc(f"{alice}-x")) == frozenset()


# ---------------------------------------------------------------------------------------------- list
def test_list_ordering_and_limit(store, alice):
    s = sc(alice)
    rng = np.random.default_rng(7)
    its = [MemoryItem.new(s, 'turn', f'turn {n}', id=f'l{n:02d}', created_at=T0 + float(rng.integers(0, 10**6)),
                          importance=float(rng.integers(0, 100)) / 100) for n in range(40)]
    store.put(its)
    by_time = sorted(its, key=lambda it: (it.created_at, it.id), reverse=True)
    by_imp = sorted(its, key=lambda it: (it.importance, it.created_at, it.id), reverse=True)
    assert [it.id for it in store.list(s, limit=7)] == [it.id for it in by_time[:7]]
    assert [it.id for it in store.list(s, order_by='importance', limit=7)] == [it.id for it in by_imp[:7]]
    assert [it.id for it in store.list(s, order_by='importance', descending=False, limit=5)] == [it.id for it in by_imp[::-1][:5]]
    assert [it.id for it in store.list(s)] == [it.id for it in by_time]
    assert len(store.list(s, order_by=None, limit=9)) == 9 and store.list(s, limit=0) == []
    full = {it.id: it for it in its}
    for it in store.list(s, limit=3): assert it == replace(full[it.id], embedding=None)
    with pytest.raises(StoreError, match='order_by'): store.list(s, order_by='rehearsal')
    with pytest.raises(StoreError, match='limit'): store.list(s, limit=-1)


# ---------------------------------------------------------------------------------------------- filters
def test_filters(store, alice):
    m, k = sc(alice, 'main', 's1'), sc(alice, 'karen', 's2')
    store.put([
        MemoryItem.new(m, 'turn', 'turn a', id='f1', created_at=T0, metadata={'task_type': 'chat', 'outcome': 'success'}),
        MemoryItem.new(m, 'turn', 'turn b', id='f2', created_at=T0 + 10, metadata={'task_type': 'budget', 'outcome': 'failure'}),
        MemoryItem.new(m.with_session('s9'), 'thought', 'thought c', id='f3', created_at=T0 + 20, metadata={'consolidated': True}),
        MemoryItem.new(m, 'explicit', 'fact: old', id='f4', created_at=T0 + 30, metadata={'superseded_by': 'f5'}),
        MemoryItem.new(k, 'extracted', 'fact: new', id='f5', created_at=T0 + 40),
        MemoryItem.new(m.with_session(None), 'task_pattern', 'pattern', id='f6', created_at=T0 + 50, metadata={'task_type': 'budget'}),
        MemoryItem.new(k, 'turn', 'karen turn', id='f7', created_at=T0 + 60),
    ])
    ids = lambda flt, s=m: sorted(it.id for it in store.list(s, filter=flt))
    assert ids(None) == ['f1', 'f2', 'f3', 'f5', 'f6']                     # f4 superseded, f7 karen's episode
    assert ids(Filter(include_superseded=True)) == ['f1', 'f2', 'f3', 'f4', 'f5', 'f6']
    assert ids(Filter(session_id='s1')) == ['f1', 'f2']
    assert ids(Filter(since=T0 + 10, until=T0 + 40)) == ['f2', 'f3', 'f5']  # both ends inclusive
    assert ids(Filter(since=T0 + 10, until=T0 + 10)) == ['f2']
    assert ids(Filter(sources=['turn', 'thought'])) == ['f1', 'f2', 'f3']
    assert ids(Filter(exclude_sources=['turn'])) == ['f3', 'f5', 'f6']
    assert ids(Filter(sources=[])) == [] and ids(Filter(layers=[])) == []
    assert ids(Filter(layers=['semantic', 'pdm'])) == ['f5', 'f6'] and ids(Filter(kinds='episodic')) == ['f1', 'f2', 'f3']
    assert ids(Filter(metadata={'task_type': 'budget'})) == ['f2', 'f6']
    assert ids(Filter(metadata={'task_type': 'budget', 'outcome': 'failure'})) == ['f2']
    assert ids(Filter(metadata={'task_type': ['chat', 'budget']}, layers='edm')) == ['f1', 'f2']
    assert ids(Filter(metadata={'consolidated': True})) == ['f3'] and ids(Filter(metadata={'consolidated': False})) == []
    assert ids(Filter(agent_ids=['karen'])) == ['f5']                         # narrows: karen's episode stays hidden
    assert ids(Filter(agent_ids=['karen']), k) == ['f5', 'f7']
    assert ids(Filter(agent_ids=['karen', 'main'], layers='edm'), k) == ['f7']   # karen may not read main's turns
    assert ids(Filter(layers='pdm'), k) == ['f6']                                # ...but may read main's patterns
    assert store.count(m, Filter(layers='edm', session_id='s1')) == 2
    assert [it.id for it in store.keyword(m, ['fact'], filter=Filter(include_superseded=True))] == ['f5', 'f4']
    with pytest.raises(ItemError, match="'profile'"): Filter(layers=['profile'])
    with pytest.raises(ItemError, match="'factual'"): Filter(kinds=['factual'])
    with pytest.raises(ItemError, match='Bad Source'): Filter(sources=['Bad Source'])
    with pytest.raises(StoreError, match='Filter'): store.list(m, filter={'layer': 'edm'})


# ---------------------------------------------------------------------------------------------- mutations
def test_touch_rehearse_update_delete(store, alice):
    m, k = sc(alice), sc(alice, 'karen')
    store.put([MemoryItem.new(m, 'turn', 'main turn', id='t', created_at=T0),
               MemoryItem.new(m, 'explicit', 'fact', id='f', created_at=T0 + 1, metadata={'a': 1, 'b': 'x'}),
               MemoryItem.new(m, 'task_pattern', 'pattern', id='p', created_at=T0 + 2)])
    n0 = store.count(m, Filter(include_superseded=True))
    assert store.touch(m, ['t', 'f', 'nope'], T0 + 100) == 2
    assert [it.last_accessed for it in store.get(m, ['t', 'f', 'p'])] == [T0 + 100, T0 + 100, None]
    assert store.rehearse(m, ['t', 't', 'nope']) == 1 and store.rehearse(m, ['t'], delta=3) == 1
    assert store.get(m, ['t'])[0].rehearsal == 4
    assert store.update_metadata(m, ['f', 'nope'], {'a': None, 'c': ['x', 'y'], 'topic': '취미'}) == 1
    assert store.get(m, ['f'])[0].metadata == {'b': 'x', 'c': ['x', 'y'], 'topic': '취미'}
    assert store.update_metadata(m, ['f'], {'superseded_by': 'g'}) == 1 and store.list(m, filter=Filter(layers='semantic')) == []
    assert store.update_metadata(m, ['f'], {'superseded_by': None}) == 1 and len(store.list(m, filter=Filter(layers='semantic'))) == 1
    # karen: may touch main's pattern and the fact, not main's turn
    assert store.touch(k, ['t', 'p'], T0 + 200) == 1 and store.get(m, ['t'])[0].last_accessed == T0 + 100
    assert store.rehearse(k, ['t']) == 0 and store.update_metadata(k, ['t'], {'z': 1}) == 0
    assert store.delete(k, ['t']) == 0 and store.delete_where(k, Filter(layers='edm')) == 0
    assert store.count(m, Filter(include_superseded=True)) == n0
    assert store.get(m, ['nope']) == [] and store.count(m, Filter(include_superseded=True)) == n0  # nothing created
    with pytest.raises(ItemError, match="'q'"): store.update_metadata(m, ['f'], {'q': {'nested': 1}})
    with pytest.raises(ItemError, match='delta'): store.rehearse(m, ['t'], delta=0)
    with pytest.raises(ItemError, match='when'): store.touch(m, ['t'], float('nan'))
    with pytest.raises(ScopeError): store.touch(m, 't', T0)
    with pytest.raises(ScopeError): store.delete(m, [''])
    with pytest.raises(ScopeError): store.get(m, [3])
    assert store.delete(m, ['t', 'nope']) == 1 and store.get(m, ['t']) == []
    assert store.delete_where(m, Filter(layers='pdm')) == 1
    assert sorted(it.id for it in store.list(m)) == ['f']
    with pytest.raises(StoreError, match='Filter'): store.delete_where(m, None)


def test_read_grant_is_not_a_write_grant(store, alice):
    """Issue 14, finding 5: karen reads main's patterns (pdm [self, main]) but may not hide or delete them; the user's
    explicit forget (user_request=True) may; semantic facts are the user's, changed by every agent (S-1.4, S-2.5)."""
    m, k = sc(alice), sc(alice, 'karen')
    store.put([MemoryItem.new(m, 'task_pattern', 'main pattern', id='p', created_at=T0),
               MemoryItem.new(m, 'explicit', '거주지: 서울', id='f', created_at=T0)])
    assert [it.id for it in store.get(k, ['p', 'f'])] == ['p', 'f']                  # karen reads both
    assert store.update_metadata(k, ['p'], {'superseded_by': 'x'}) == 0
    assert store.delete(k, ['p']) == 0 and store.delete_where(k, Filter(layers='pdm', agent_ids=('main',))) == 0
    assert [it.superseded for it in store.get(m, ['p'])] == [False]
    assert store.update_metadata(k, ['f'], {'superseded_by': 'g'}) == 1              # the user profile is shared
    assert store.delete(k, ['p'], user_request=True) == 1 and store.get(m, ['p']) == []
    with pytest.raises(StoreError, match='user_request'): store.delete(k, ['f'], user_request='yes')


def test_drop_user_and_scrub(store, alice, mode, location):
    "forget_user's store half: drop_user removes the user's every row; scrub leaves no deleted text in embedded files."
    m, bob = sc(alice), MemoryScope(alice + '-bob', 'main')
    store.put([MemoryItem.new(m, 'turn', 'U: QZXW-secret\nA: ok', created_at=T0), MemoryItem.new(m, 'turn', 'stays', created_at=T0)])
    store.put([MemoryItem.new(bob, 'explicit', 'QZXW-bob', created_at=T0)])
    assert store.drop_user(bob.user_id) == 1 and store.list(bob) == [] and store.drop_user(bob.user_id) == 0
    assert store.delete_where(m, Filter(sources=('turn',))) == 2
    store.put([MemoryItem.new(m, 'turn', 'stays', created_at=T0)])
    if mode == 'chroma-embedded':
        assert store.scrub() is True
        hits = [p for p in location['path'].rglob('*') if p.is_file() and b'QZXW' in p.read_bytes()]
        assert hits == []
    else:
        assert store.scrub() is False                                                 # the server's files: chroma utils vacuum
    assert [it.content for it in store.list(m)] == ['stays']


# ---------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize('bad', ['importance', 'dup', 'vec', 'meta', 'bigint', 'notitem', 'owner'])
def test_bad_batch_writes_nothing(store, alice, bad):
    m = sc(alice)
    store.put([MemoryItem.new(m, 'turn', 'keep me', id='old', created_at=T0, metadata={'a': 1}),
               MemoryItem.new(sc(alice, 'karen'), 'turn', 'karen turn', id='kt', created_at=T0)])
    before = snapshot(store, alice)
    good = [replace(store.get(m, ['old'])[0], content='CHANGED', metadata={}),
            MemoryItem.new(m, 'turn', 'new item', id='new')]
    b = MemoryItem.new(m, 'turn', 'bad', id='bad')
    if bad == 'importance': b.importance = 2.0
    elif bad == 'dup': b = replace(good[1])
    elif bad == 'vec': b = replace(b, embedding=[0.0] * 64)
    elif bad == 'meta': b.metadata = {'x': [1, 'a']}
    elif bad == 'bigint': b.metadata = {'n': 2**70}
    elif bad == 'notitem': b = {'id': 'bad'}
    elif bad == 'owner': b = MemoryItem.new(m, 'turn', 'steal', id='kt')
    with pytest.raises(MemoryInputError):
        store.put(good + [b])
    assert snapshot(store, alice) == before
    assert store.count(m, Filter(include_superseded=True)) == 1


def test_bad_inputs_name_what_was_wrong(store, alice):
    with pytest.raises(ScopeError, match='MemoryScope'): store.list((alice, 'main'))
    with pytest.raises(ScopeError, match='list of item ids'): store.get(sc(alice), 'x')
    with pytest.raises(ItemError, match='list of MemoryItem'): store.put(MemoryItem.new(sc(alice), 'turn', 'x'))
    with pytest.raises(ItemError, match='after'): Filter(since=2, until=1)


# ---------------------------------------------------------------------------------------------- locations
def test_server_down_names_the_url():
    url = f'http://127.0.0.1:{free_port()}'
    with pytest.raises(StoreUnavailable, match=url.replace('.', r'\.')):
        ChromaStore(Settings(), EMB, team(), server_url=url)
    with pytest.raises(StoreError, match='http://host:port'):
        ChromaStore(Settings(), EMB, team(), server_url='127.0.0.1:8000')


def test_settings_choose_the_location(tmp_path, monkeypatch):
    monkeypatch.setenv('JARVIS_MEMORY__PATH', str(tmp_path / 'from-env'))
    with ChromaStore(None, EMB, team()) as s:
        assert s.path == (tmp_path / 'from-env').resolve()
    url = f'http://127.0.0.1:{free_port()}'
    with pytest.raises(StoreUnavailable, match='cannot reach'):
        ChromaStore(Settings(server_url=url), EMB, team())
    with ChromaStore(Settings(server_url=url), EMB, team(), path=tmp_path / 'explicit') as s:   # explicit wins
        assert s.server_url is None


def test_path_is_a_file(tmp_path):
    f = tmp_path / 'oops'
    f.write_text('not a directory')
    with pytest.raises(StoreError, match=str(f)):
        ChromaStore(Settings(), EMB, team(), path=f)


def test_embedder_mismatch_is_refused(location, alice):
    with opened(HashingEmbedder(64), **location) as s:
        s.put([MemoryItem.new(sc(alice), 'explicit', '거주지: 서울', id='x')])
    with opened(HashingEmbedder(32), **location) as s:
        with pytest.raises(StoreError, match=r"embedded with 'hashing-64' \(dim 64\).*'hashing-32'"):
            s.list(sc(alice))
        with pytest.raises(StoreError, match="hashing-64"):
            s.put([MemoryItem.new(sc(alice), 'explicit', 'more', id='y')])
        s.put([MemoryItem.new(sc(f'bob-{alice}'), 'explicit', 'other user, new collection', id='y')])  # fine
    with opened(None, **location) as s:      # keyword-only access is allowed
        assert [it.id for it in s.keyword(sc(alice), ['서울'])] == ['x']
        assert [it.id for it, _ in s.search(sc(alice), embedding=HashingEmbedder(64).embed_one('거주지: 서울'))] == ['x']


def test_closed_store_refuses(location, alice):
    s = opened(EMB, **location)
    s.close(); s.close()
    with pytest.raises(StoreError, match='closed'): s.count(sc(alice))


# ---------------------------------------------------------------------------------------------- without vectors
def test_failed_embedding_keeps_items_and_reembed_fills_them(location, alice):
    e = Flaky(64)
    with opened(e, **location) as s:
        m = sc(alice)
        s.put([MemoryItem.new(m, 'explicit', '직장: 판교', id='w1', created_at=T0)])
        e.down = True
        s.put([MemoryItem.new(m, 'explicit', '취미: 등산', id='w2', created_at=T0 + 1),
               MemoryItem.new(sc(alice, 'karen'), 'turn', 'U: 등산?\nA: 좋아요', id='w3', created_at=T0 + 2)])
        assert s.count(m, Filter(has_vector=False)) == 1 and s.count(sc(alice, 'karen'), Filter(has_vector=False)) == 2
        assert [it.id for it in s.keyword(m, ['등산'])] == ['w2']
        with pytest.raises(EmbeddingError): s.search(m, '등산')
        assert [it.id for it, _ in s.search(m, embedding=HashingEmbedder(64).embed_one('취미: 등산'))] == ['w1']
        e.down = False
        assert s.reembed(m) == 1                                       # only what main may read
        assert s.count(sc(alice, 'karen'), Filter(has_vector=False)) == 1
        assert s.search(m, '취미: 등산', k=1)[0][0].id == 'w2'
        assert s.reembed(sc(alice, 'karen')) == 1 and s.count(sc(alice, 'karen'), Filter(has_vector=False)) == 0


def test_keyword_only_store_and_migration(location, alice):
    m, k = sc(alice), sc(alice, 'karen')
    with opened(None, **location) as s:
        s.put([MemoryItem.new(m, 'explicit', '취미: 등산', id='h', created_at=T0),
               MemoryItem.new(k, 'turn', 'U: 등산 코스?\nA: 북한산', id='kt', created_at=T0 + 1, metadata={'a': 1})])
        assert [it.id for it in s.keyword(k, ['등산'])] == ['kt', 'h'] and s.count(m, Filter(has_vector=True)) == 0
        with pytest.raises(StoreError, match='no embedder'): s.search(m, '등산')
        with pytest.raises(StoreError, match='needs a store with an embedder'): s.reembed(m)
    with opened(EMB, **location) as s:
        assert s.search(m, '등산') == []
        s.put([MemoryItem.new(m, 'explicit', '직장: 판교', id='w', created_at=T0 + 2)])   # placeholder until migrated
        before = snapshot(s, alice)
        assert s.reembed(m) == 3                                                       # the whole collection
        assert snapshot(s, alice).keys() == before.keys()
        for i, (it, _) in snapshot(s, alice).items(): assert it == before[i][0]
        assert s.count(m, Filter(has_vector=False)) == 0 and s.count(k, Filter(has_vector=False)) == 0
        assert s.search(m, '직장: 판교', k=1)[0][0].id == 'w'
        assert s.search(k, 'U: 등산 코스?\nA: 북한산', k=1)[0][0].id == 'kt'
        assert s.reembed(m) == 0
        names = [c.name for c in s._client.list_collections()]
        assert collection_name(alice) in names and collection_name(alice) + '-next' not in names


def test_unchanged_content_keeps_its_vector_when_the_embedder_is_down(location, alice):
    e = Flaky(64)
    with opened(e, **location) as s:
        m = sc(alice)
        s.put([MemoryItem.new(m, 'explicit', '직장: 판교', id='w', created_at=T0, metadata={'a': 1})])
        v = s.get(m, ['w'], include_embeddings=True)[0].embedding
        e.down = True
        s.put([MemoryItem.new(m, 'explicit', '직장: 판교', id='w', created_at=T0, metadata={'a': 2})])
        got = s.get(m, ['w'], include_embeddings=True)[0]
        assert got.metadata == {'a': 2}
        np.testing.assert_allclose(got.embedding, v, atol=1e-6)
        s.put([MemoryItem.new(m, 'explicit', '직장: 여의도', id='w', created_at=T0)])   # changed content: placeholder
        assert s.get(m, ['w'], include_embeddings=True)[0].embedding is None
        assert s.count(m, Filter(has_vector=False)) == 1


@pytest.mark.server
def test_server_dying_mid_session_is_store_unavailable(tmp_path, alice):
    with chroma_server(tmp_path / 'dying') as url:
        s = ChromaStore(Settings(), EMB, team(), server_url=url)
        s.put([MemoryItem.new(sc(alice), 'explicit', 'x y', id='x')])
        assert s.count(sc(alice)) == 1
    with pytest.raises(StoreUnavailable, match=url.replace('.', r'\.')):
        s.count(sc(alice))
    s.close()


def test_migration_interrupted_before_rename_is_finished_on_next_open(location, alice, monkeypatch):
    from chromadb.api.models.Collection import Collection
    m = sc(alice)
    with opened(None, **location) as s:
        s.put([MemoryItem.new(m, 'explicit', '취미: 등산', id='h', created_at=T0, metadata={'a': 1}),
               MemoryItem.new(m, 'turn', 'U: 주말?\nA: 등산', id='t', created_at=T0 + 1)])
    orig = Collection.modify
    def crash_on_rename(self, name=None, **kw):
        if name is not None: raise RuntimeError('simulated crash between drop and rename')
        return orig(self, name=name, **kw)
    with opened(EMB, **location) as s:
        monkeypatch.setattr(Collection, 'modify', crash_on_rename)
        with pytest.raises(RuntimeError, match='simulated'):
            s.reembed(m)
        monkeypatch.setattr(Collection, 'modify', orig)
        names = [c.name for c in s._client.list_collections()]
        assert collection_name(alice) not in names and collection_name(alice) + '-next' in names
        # the same store recovers (its cached handle was invalidated), and so would a fresh process
        assert sorted(it.id for it in s.list(m)) == ['h', 't']
        assert s.get(m, ['h'])[0].metadata == {'a': 1}
        assert s.count(m, Filter(has_vector=False)) == 0
        assert s.search(m, '취미: 등산', k=1)[0][0].id == 'h'
        assert collection_name(alice) + '-next' not in [c.name for c in s._client.list_collections()]
