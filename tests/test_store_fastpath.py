"""The store's fast read paths give the same answers as the `where`-clause paths they replace (SPEC S-1.6, S-5.4,
S-6.6): one `ReadClause` answers `matches(row)` exactly as Chroma answers the `where` compiled from it; the vector
fast path equals the filtered query; the mirror equals Chroma after every kind of write; deferred `touch`es reach
Chroma; isolation holds even if the clause were wrong.

Timing is measured by bench/recall_latency.py, never asserted here."""
from __future__ import annotations
import itertools, uuid
from dataclasses import replace

import chromadb
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import jarvis_memory.store as S
import jarvis_memory.mirror as M
import jarvis_memory.chroma as C
from jarvis_memory.scope import MemoryScope, MemoryItem, ReadPolicy, Team, LAYERS, source_layer
from jarvis_memory.settings import Settings
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.store import Filter, ReadClause, StoreError
from jarvis_memory.mirror import _Mirror
from jarvis_memory.chroma import ChromaStore, chroma_where
from servers import chroma_server
from fakes import Flaky

EMB = HashingEmbedder(64)
T0 = 1_700_000_000.0
AGENTS = ('main', 'karen', 'bob-agent')
SOURCES = ('explicit', 'extracted', 'housing_profile', 'turn', 'turn_part', 'thought', 'journal', 'task_pattern', 'procedure')
WORDS = ('서울', '부산', 'budget', 'Seoul', '등산', 'plan', '날씨', 'tea', '서울역', 'a', '차')
SETTINGS = dict(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def team(pols=()):
    return Team(policies=list(pols) or [ReadPolicy('main'), ReadPolicy('karen', edm=('self',), pdm=('self', 'main')),
                                        ReadPolicy('bob-agent', edm=('self', 'karen'))])


# ----------------------------------------------------------------------------------------------- strategies
VALUES = st.sampled_from([1, 1.0, 2, True, False, 'a', 'b', [1, 2], ['a'], [True], 0.5])


@st.composite
def raw_rows(draw):
    "Chroma metadata rows, mostly well-formed, some odd (wrong layer for the source, int flags, other users)."
    rows = []
    for i in range(draw(st.integers(1, 25))):
        src = draw(st.sampled_from(SOURCES))
        layer = source_layer(src) if draw(st.integers(0, 9)) else draw(st.sampled_from(LAYERS))
        m = dict(user_id=draw(st.sampled_from(['u', 'u', 'u', 'v'])), agent_id=draw(st.sampled_from(AGENTS)), source=src,
                 layer=layer, kind='x', session_id=draw(st.sampled_from(['', 's1', 's2'])),
                 created_at=draw(st.sampled_from([T0, T0 + 1, T0 + 2.5, T0 + 10])), importance=0.5, rehearsal=0,
                 has_vector=draw(st.sampled_from([True, True, False, 1])), active=draw(st.sampled_from([True, True, False, 1])))
        for k in ('m.x', 'm.y'):
            if draw(st.booleans()): m[k] = draw(VALUES)
        rows.append(m)
    return rows


@st.composite
def filters(draw):
    kw = {}
    if draw(st.booleans()): kw['layers'] = draw(st.lists(st.sampled_from(LAYERS), max_size=3, unique=True))
    if draw(st.integers(0, 4)) == 0: kw['kinds'] = draw(st.lists(st.sampled_from(['semantic', 'episodic', 'procedural']), max_size=2, unique=True))
    if draw(st.integers(0, 3)) == 0: kw['sources'] = draw(st.lists(st.sampled_from(SOURCES), max_size=3, unique=True))
    if draw(st.integers(0, 3)) == 0: kw['exclude_sources'] = draw(st.lists(st.sampled_from(SOURCES), max_size=2, unique=True))
    if draw(st.integers(0, 3)) == 0: kw['agent_ids'] = draw(st.lists(st.sampled_from(AGENTS + ('x',)), max_size=3, unique=True))
    if draw(st.integers(0, 4)) == 0: kw['session_id'] = draw(st.sampled_from(['s1', 's2']))
    if draw(st.integers(0, 3)) == 0: kw['since'] = draw(st.sampled_from([T0, T0 + 1, T0 + 2.5]))
    if draw(st.integers(0, 3)) == 0: kw['until'] = draw(st.sampled_from([T0 + 2.5, T0 + 10]))
    if 'since' in kw and 'until' in kw and kw['since'] > kw['until']: del kw['until']
    if draw(st.integers(0, 2)) == 0:
        kw['metadata'] = {k: draw(st.sampled_from([1, 1.0, True, 'a', [1, 2], ['a', 'b'], [True], 0.5]))
                          for k in draw(st.lists(st.sampled_from(['x', 'y']), min_size=1, max_size=2, unique=True))}
    kw['include_superseded'] = draw(st.booleans())
    if draw(st.integers(0, 3)) == 0: kw['has_vector'] = draw(st.booleans())
    return Filter(**kw)


@st.composite
def policies(draw):
    return [ReadPolicy(a, edm=tuple(draw(st.lists(st.sampled_from(('self',) + AGENTS), min_size=1, max_size=3, unique=True))),
                       pdm=tuple(draw(st.lists(st.sampled_from(('self',) + AGENTS), min_size=1, max_size=3, unique=True))))
            for a in AGENTS]


# ----------------------------------------------------------------------------------------------- clause.matches == where
@pytest.fixture(scope='module')
def raw_client(tmp_path_factory):
    c = chromadb.PersistentClient(str(tmp_path_factory.mktemp('raw')), settings=chromadb.config.Settings(anonymized_telemetry=False))
    yield c
    c.close()


def targeted(rows) -> list:
    "Filters built from the first row's own values, so each condition meets rows it keeps and, often, rows it drops."
    r = rows[0]
    out = [Filter(sources=[r['source']]), Filter(exclude_sources=[r['source']]), Filter(session_id=r['session_id'] or 's1'),
           Filter(since=r['created_at']), Filter(until=r['created_at']), Filter(agent_ids=[r['agent_id']]),
           Filter(layers=[r['layer']]), Filter(include_superseded=True)]
    return out + [Filter(metadata={k[2:]: r[k]}) for k in ('m.x', 'm.y') if k in r]


@settings(**SETTINGS)
@given(rows=raw_rows(), pols=policies(), flts=st.lists(filters(), min_size=1, max_size=6), hv=st.sampled_from([None, True, False]))
def test_clause_matches_equals_chroma_where(raw_client, rows, pols, flts, hv):
    """For random rows (some malformed), filters and policies, one `ReadClause` compiled to Chroma's `where` and asked
    `matches(row)` keeps the same rows: Chroma evaluates the compiled clause, Python the clause itself."""
    col = raw_client.create_collection(f"p-{uuid.uuid4().hex[:12]}")
    col.add(ids=[f"r{i}" for i in range(len(rows))], embeddings=np.eye(len(rows), 8, dtype=np.float32) + 0.01, metadatas=rows)
    for pol, flt in itertools.product(pols, flts + targeted(rows)):
        scope = MemoryScope('u', pol.agent_id)
        cl = ReadClause.of(scope, pol, flt, hv)
        where = chroma_where(cl)
        want = set() if where is None else set(col.get(where=where, include=[])['ids'])
        got = {f"r{i}" for i, m in enumerate(rows) if cl.matches(m)}
        assert got == want, (pol, flt, where)
        assert cl.empty == (where is None)
    raw_client.delete_collection(col.name)


# ----------------------------------------------------------------------------------------------- populations
@st.composite
def populations(draw, n_min=4, n_max=40):
    items = []
    for i in range(draw(st.integers(n_min, n_max))):
        a, src = draw(st.sampled_from(AGENTS)), draw(st.sampled_from(SOURCES))
        words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
        md = {'task_type': draw(st.sampled_from(['chat', 'budget']))}
        if src in ('explicit', 'extracted') and draw(st.integers(0, 3)) == 0: md['superseded_by'] = 'x'
        items.append(dict(i=i, a=a, src=src, text=' '.join(words) + f' #{i}', md=md, session=draw(st.sampled_from(['s1', 's2', None])),
                          t=T0 + draw(st.integers(0, 50)), imp=draw(st.integers(0, 10)) / 10))
    return items


def build(spec, user):
    return [MemoryItem(id=f"it{d['i']}", user_id=user, agent_id=d['a'], source=d['src'], content=d['text'], session_id=d['session'],
                       importance=d['imp'], created_at=d['t'], metadata=d['md']) for d in spec]


@pytest.fixture(scope='module')
def shared_path(tmp_path_factory):
    return tmp_path_factory.mktemp('fast') / 'chroma'


def same_hits(a, b, tol=1e-4):
    """Two search results agree: same length, same cosines (within `tol`), same ids — except that rows whose cosine
    ties with the last one kept (within `tol`) may differ, as either path may break such a tie either way."""
    a, b = sorted(a, key=lambda p: -p[1]), sorted(b, key=lambda p: -p[1])
    assert len(a) == len(b), ([(x.id, c) for x, c in a], [(x.id, c) for x, c in b])
    assert all(abs(ca - cb) < tol for (_, ca), (_, cb) in zip(a, b)), ([c for _, c in a], [c for _, c in b])
    if a:
        edge = a[-1][1]
        assert {x.id for x, c in a if c > edge + tol} == {x.id for x, c in b if c > edge + tol}
    return True


# ----------------------------------------------------------------------------------------------- search fast == where
@settings(**SETTINGS)
@given(spec=populations(n_min=10, n_max=45), flts=st.lists(filters(), min_size=1, max_size=4),
       ks=st.lists(st.integers(1, 12), min_size=1, max_size=3), floor=st.sampled_from([None, -1.0, 0.0, 0.2, 0.5]),
       kq=st.sampled_from([(1, 2), (2, 4), (8, 256)]), small=st.sampled_from([0, 6, 2048]), exact=st.sampled_from([0, 20000]))
def test_search_fast_path_equals_where_path(shared_path, monkeypatch, spec, flts, ks, floor, kq, small, exact):
    """Whenever the fast path answers (small k' so that it often cannot), it returns what the `where` query returns,
    with and without a mirror, with small groups searched exactly or not, through Chroma's HNSW index (`exact_rows=0`)
    or the mirror's exact search; the where path is the reference."""
    monkeypatch.setattr(C, '_FAST_K', {True: kq, False: kq})
    monkeypatch.setattr(M, '_SMALL', small)
    user = f"s-{uuid.uuid4().hex[:10]}"
    items = build(spec, user)
    with ChromaStore(Settings(exact_rows=exact), EMB, team(), path=shared_path) as store:
        store.put(items)
        bare = ChromaStore(Settings(exact_rows=exact), EMB, team(), path=shared_path, mirror=False)
        try:
            for a, flt, k, q in itertools.product(AGENTS, flts, ks, ['서울 budget', 'tea 날씨 plan']):
                s = MemoryScope(user, a)
                kw = dict(k=k, min_cosine=floor, filter=replace(flt, has_vector=None))
                store._fast_search = bare._fast_search = False
                want = store.search(s, q, **kw)
                store._fast_search = bare._fast_search = True
                assert same_hits(store.search(s, q, **kw), want), (a, flt, k)
                assert same_hits(bare.search(s, q, **kw), want), (a, flt, k)
        finally:
            bare.close()


def test_search_fast_path_answers_and_falls_back(tmp_path, monkeypatch):
    "Through Chroma's HNSW index (`exact_rows=0`): the three ways the fast path may answer, the fallback when it may not, and small groups searched exactly."
    monkeypatch.setattr(C, '_FAST_K', {True: (1, 4), False: (1, 4)})       # k' tiers 4, 16, 64 (< 100 rows)
    monkeypatch.setattr(M, '_SMALL', 0)                                     # every group through HNSW
    m, k = MemoryScope('u', 'main'), MemoryScope('u', 'karen')
    items = [MemoryItem.new(m if i % 2 else k, 'turn', f'서울 날씨 {i} ' + 'tea ' * (i % 5), id=f'x{i}', created_at=T0 + i) for i in range(100)]
    with ChromaStore(Settings(exact_rows=0), EMB, team(), path=tmp_path / 'c') as store:
        store.put(items)
        assert len(store.search(m, '서울 날씨', k=1)) == 1 and store.fallbacks == 0     # (a) k rows among the nearest
        assert [it.id for it, _ in store.search(m, '서울 날씨', k=3, filter=Filter(since=T0 + 98))] == ['x99']
        assert store.fallbacks == 1                                             # one readable row in 100: the clause
        assert store.search(m, '서울 날씨', k=3, min_cosine=0.999) == []         # (c) the floor proves it
        monkeypatch.setattr(C, '_FAST_K', {True: (1, 64), False: (1, 64)})
        assert len(store.search(m, '서울 날씨', k=60)) == 50                      # (b) the whole collection seen (256 > 100)
        assert store.fallbacks == 1
        monkeypatch.setattr(M, '_SMALL', 2048)                                  # main's 50 rows: searched exactly, no HNSW
        store._fast_search = False
        want = store.search(m, '서울 날씨', k=3, filter=Filter(since=T0 + 90))
        store._fast_search = True
        assert same_hits(store.search(m, '서울 날씨', k=3, filter=Filter(since=T0 + 90)), want) and store.fallbacks == 2


def test_exact_search_needs_no_fallback_and_survives_restarts(tmp_path, monkeypatch):
    """At most `exact_rows` rows: the mirror's exact search answers every filter (no fallback, even one readable row
    in 100) with what the `where` query returns; after a restart from the snapshot (vectors in it), without one
    (vectors read from Chroma once), after a rewrite with new text, and past `exact_rows` (HNSW again)."""
    m = MemoryScope('u', 'main')
    items = [MemoryItem.new(m if i % 2 else MemoryScope('u', 'karen'), 'turn', f'서울 날씨 {i} ' + 'tea ' * (i % 5), id=f'x{i}',
                            created_at=T0 + i) for i in range(100)]
    path = tmp_path / 'c'
    reads = [(k, flt) for k in (1, 3, 60) for flt in (Filter(), Filter(since=T0 + 98), Filter(exclude_sources=['thought'], since=T0 + 50))]
    def check(store):
        for k, flt in reads:
            store._fast_search = False                                 # the reference: Chroma's `where` query
            want = store.search(m, '서울 날씨 tea', k=k, filter=flt)
            store._fast_search, before = True, store.fallbacks
            got = store.search(m, '서울 날씨 tea', k=k, filter=flt)
            assert want and same_hits(got, want), (k, flt)
            assert store.fallbacks == before, (k, flt)                 # answered without the clause
    with ChromaStore(Settings(), EMB, team(), path=path) as store:
        store.put(items)
        mir = store._mirror(store._col('u'))
        assert len(mir.vec) == 100 and not mir.vec.missing           # vectors came with put
        check(store)
    with ChromaStore(Settings(), EMB, team(), path=path) as store:   # from the snapshot
        mir = store._mirror(store._col('u'))
        assert len(mir.vec) == 100 and not mir.vec.missing
        check(store)
    for f in (path / C._SNAP_DIR).iterdir(): f.unlink()
    with ChromaStore(Settings(), EMB, team(), path=path) as store:   # no snapshot: rows from Chroma, vectors on first search
        mir = store._mirror(store._col('u'))
        assert len(mir.vec) == 0 and len(mir.vec.missing) == 100
        check(store)
        assert len(mir.vec) == 100 and not mir.vec.missing
        store.put([replace(items[1], content='부산 바다 여행')])       # rewritten: its old vector must not answer
        store.put([replace(items[3], importance=0.9)])                # same text, new metadata: vector kept
        assert [it.id for it, _ in store.search(m, '부산 바다 여행', k=1)] == ['x1']
        check(store)
    with ChromaStore(Settings(exact_rows=50), EMB, team(), path=path) as store:   # past exact_rows: Chroma's index again
        store.put([MemoryItem.new(m, 'turn', f'extra {i}', id=f'y{i}', created_at=T0 + 200 + i) for i in range(3)])
        mir = store._mirror(store._col('u'))
        assert len(mir.vec) == 100                                     # (at most _SMALL vectors are kept past exact_rows)
        monkeypatch.setattr(_Mirror, 'nearest', lambda *a, **k: pytest.fail("exact search past exact_rows"))
        check(store)
        monkeypatch.setattr(C, '_SMALL', 10)
        store.put([MemoryItem.new(m, 'turn', 'one more', id='z', created_at=T0 + 300)])
        assert len(mir.vec) == 0 and mir.vec.missing                   # more than _SMALL: dropped (refetched if needed)
        check(store)


# ----------------------------------------------------------------------------------------------- mirror == Chroma
def mirror_state(m: _Mirror):
    live = {i: (m.docs[rn], m.metas[rn]) for i, rn in m.rn.items()}
    groups = {key: (g.by_time, g.by_imp) for key, g in m.groups.items() if g.by_time}
    return live, groups


def assert_mirror_exact(store, user):
    "The store's mirror equals a fresh load from Chroma (after writing deferred touches)."
    store.flush()
    c = store._col(user)
    m = store._mirror(c)                                   # (loaded now if a migration replaced the collection)
    assert mirror_state(m) == mirror_state(_Mirror.load('fresh', c.col))
    for rn, i in enumerate(m.ids):                         # the numpy columns follow the rows
        if i is None: assert m.gcode[rn] == -1
        else: assert m.gcode[rn] == m.codes[S._gkey(m.metas[rn])] and m.ctime[rn] == m.metas[rn]['created_at']


READS = [Filter(), Filter(include_superseded=True), Filter(layers='edm'), Filter(layers=['semantic', 'pdm']),
         Filter(exclude_sources=['thought'], since=T0 + 3), Filter(metadata={'task_type': 'budget'}), Filter(session_id='s1'),
         Filter(has_vector=False, include_superseded=True), Filter(agent_ids=['karen'])]


def assert_same_reads(a: ChromaStore, b: ChromaStore, user):
    "Every read through `a` (mirror) equals the same read through `b` (Chroma directly)."
    a.flush()
    for agent, flt in itertools.product(AGENTS, READS):
        s = MemoryScope(user, agent)
        for order, desc, lim in [('created_at', True, None), ('importance', True, 3), ('created_at', False, 2), ('importance', False, None)]:
            assert a.list(s, filter=flt, order_by=order, descending=desc, limit=lim) == \
                   b.list(s, filter=flt, order_by=order, descending=desc, limit=lim), (agent, flt, order, desc, lim)
        assert sorted(x.id for x in a.list(s, filter=flt, order_by=None)) == sorted(x.id for x in b.list(s, filter=flt, order_by=None))
        assert a.count(s, flt) == b.count(s, flt)
        for terms in (['서울'], ['Seoul', 'tea'], ['a'], ['서울역', '부산'], ['울 날'], ['nothing here']):
            assert a.keyword(s, terms, filter=flt) == b.keyword(s, terms, filter=flt), (agent, flt, terms)
            assert a.keyword(s, terms, filter=flt, limit=2) == b.keyword(s, terms, filter=flt, limit=2)
        ids = [f'w{i}' for i in range(30)] + ['nope']
        assert a.get(s, ids) == b.get(s, ids)
        ga, gb = a.get(s, ids, include_embeddings=True), b.get(s, ids, include_embeddings=True)
        assert [replace(x, embedding=None) for x in ga] == [replace(x, embedding=None) for x in gb]
        assert [None if x.embedding is None else x.embedding.tolist() for x in ga] == [None if x.embedding is None else x.embedding.tolist() for x in gb]
        if a.embedder is not None:
            assert same_hits(a.search(s, '서울 tea', k=5, filter=flt), b.search(s, '서울 tea', k=5, filter=flt))
            qv = EMB.embed_one('서울 날씨', query=True)
            ca, cb = a.cosines(s, ids, qv), b.cosines(s, ids, qv)
            assert ca.keys() == cb.keys() and all(abs(ca[i] - cb[i]) < 1e-5 for i in ca)


def test_mirror_follows_every_kind_of_write(tmp_path, monkeypatch):
    "After each kind of write the mirror equals Chroma, and mirror reads equal Chroma reads (S-2.4, S-2.5, S-6.6)."
    monkeypatch.setattr(M, '_DELTA_ROWS', 4)                  # exercise index segments and their merges
    user = 'alice'
    m, k, b = MemoryScope(user, 'main', 's1'), MemoryScope(user, 'karen', 's2'), MemoryScope(user, 'bob-agent', 's1')
    rng = np.random.default_rng(1)
    def item(i, scope, src, text, **kw):
        return MemoryItem.new(scope, src, text, id=f'w{i}', created_at=T0 + float(rng.integers(0, 20)),
                              importance=float(rng.integers(0, 10)) / 10, metadata={'task_type': ['chat', 'budget'][i % 2]}, **kw)
    emb = Flaky(64)
    a = ChromaStore(Settings(), emb, team(), path=tmp_path / 'c')
    bare = ChromaStore(Settings(), emb, team(), path=tmp_path / 'c', mirror=False)
    try:
        texts = ['서울 날씨 맑음', 'Seoul tea time', '부산 바다', '서울역 가는 길', 'a plan', '등산 코스', '차 한잔', '날씨 tea']
        srcs = ['turn', 'explicit', 'thought', 'extracted', 'task_pattern', 'journal', 'turn_part', 'housing_profile']
        a.put([item(i, [m, k, b][i % 3], srcs[i % 8], texts[i % 8] + f' {i}') for i in range(24)])
        steps = [
            ('put new', lambda: a.put([item(30 + i, m, 'turn', f'서울 새 {i}') for i in range(3)])),
            ('put same text', lambda: a.put([replace(a.get(m, ['w0'])[0], importance=0.95, metadata={'x': 1})])),
            ('put new text', lambda: a.put([replace(a.get(m, ['w3'])[0], content='부산 날씨 흐림')])),
            ('supersede', lambda: a.update_metadata(m, ['w1', 'w4'], {'superseded_by': 'w3', 'task_type': None})),
            ('unsupersede', lambda: a.update_metadata(m, ['w1'], {'superseded_by': None, 'tags': ['a', 'b']})),
            ('touch', lambda: a.touch(k, [f'w{i}' for i in range(30)], T0 + 500)),
            ('touch then rewrite', lambda: (a.touch(m, ['w6'], T0 + 600), a.put([replace(a.get(m, ['w6'])[0], last_accessed=None)]))),
            ('rehearse', lambda: a.rehearse(m, ['w0', 'w3', 'w9'], 2)),
            ('delete', lambda: a.delete(m, ['w9', 'w12', 'w30'])),
            ('delete_where', lambda: a.delete_where(k, Filter(sources=['thought']))),
            ('put without vectors', lambda: (setattr(emb, 'down', True), a.put([item(40, k, 'turn', '서울 벡터 없음')]), setattr(emb, 'down', False))),
            ('reembed', lambda: a.reembed(k)),
            ('put again', lambda: a.put([item(41 + i, b, 'turn', f'tea 서울 {i}') for i in range(6)])),
        ]
        for name, step in steps:
            step()
            assert_mirror_exact(a, user)
            assert_same_reads(a, bare, user)
        assert a.get(m, ['w6'])[0].last_accessed is None          # the flushed touch did not come back after the rewrite
        assert a.get(k, ['w1'])[0].last_accessed == T0 + 500
    finally:
        bare.close(); a.close()


@pytest.mark.parametrize('behind', [0, 32])
def test_mirror_after_migration_and_failed_write(tmp_path, monkeypatch, behind):
    """A keyword-only collection migrated by reembed, and a write Chroma refuses midway: the mirror never lags. With
    the journal (`write_behind`) the refusal comes when the waiting write is sent (here `flush`), and a restart does
    not bring the refused write back."""
    m = MemoryScope('bob', 'main', 's1')
    with ChromaStore(Settings(write_behind=behind), None, team(), path=tmp_path / 'c') as s:
        s.put([MemoryItem.new(m, 'explicit', '취미: 등산', id='h', created_at=T0), MemoryItem.new(m, 'turn', 'U: 주말?\nA: 등산', id='t', created_at=T0 + 1)])
        s.touch(m, ['h'], T0 + 9)
    with ChromaStore(Settings(write_behind=behind), EMB, team(), path=tmp_path / 'c') as s, \
         ChromaStore(Settings(write_behind=behind), EMB, team(), path=tmp_path / 'c', mirror=False) as bare:
        assert s.get(m, ['h'])[0].last_accessed == T0 + 9         # flushed at close, reloaded from Chroma
        assert s.reembed(m) == 2
        assert_mirror_exact(s, 'bob'); assert_same_reads(s, bare, 'bob')
        from chromadb.api.models.Collection import Collection
        orig = Collection.upsert
        def boom(self, *a, **kw): raise RuntimeError('chroma fails midway')
        monkeypatch.setattr(Collection, 'upsert', boom)
        with pytest.raises(RuntimeError):
            s.put([MemoryItem.new(m, 'turn', 'lost', id='lost')])
            assert behind and s.count(m) == 3                       # waiting: seen, and sent ...
            s.flush()                                               # ... here
        monkeypatch.setattr(Collection, 'upsert', orig)
        assert s.get(m, ['lost']) == [] and s.count(m) == 2         # mirror dropped and reloaded: still exact
        assert_mirror_exact(s, 'bob'); assert_same_reads(s, bare, 'bob')
    with ChromaStore(Settings(), EMB, team(), path=tmp_path / 'c') as s:
        assert s.get(m, ['lost']) == [] and s.count(m) == 2         # and after a restart


def test_keyword_index_equals_substring_scan(tmp_path, monkeypatch):
    "The bigram index finds what a substring scan of every row finds, across segments, merges, rewrites and deletes."
    monkeypatch.setattr(M, '_DELTA_ROWS', 8)
    monkeypatch.setattr(M, '_SEG_ROWS', 64)
    rng = np.random.default_rng(5)
    alphabet = list('서울부산역 abAB_%') + ['날씨', 'tea']
    docs = {f'k{i}': ''.join(rng.choice(alphabet, int(rng.integers(1, 12)))) or 'x' for i in range(300)}
    docs = {i: d if d.strip() else 'x' for i, d in docs.items()}
    s = MemoryScope('kim', 'main')
    with ChromaStore(Settings(), None, team(), path=tmp_path / 'c') as store:
        for ch in range(0, 300, 37):
            store.put([MemoryItem.new(s, 'turn', docs[i], id=i, created_at=T0 + n) for n, i in enumerate(list(docs)[ch:ch + 37], start=ch)])
        store.delete(s, [f'k{i}' for i in range(0, 300, 7)])
        store.put([replace(x, content=x.content + ' 서울') for x in store.get(s, [f'k{i}' for i in range(1, 300, 11)])])
        mir = store._shared.mirrors[str(store._col('kim').col.id)]
        assert len(mir.segments) > 1
        rows = {x.id: x for x in store.list(s)}
        for terms in (['서울'], ['울'], ['서울부'], ['ab', 'AB'], ['_'], ['%a'], ['날씨tea'], ['산 역'], ['zz']):
            want = sorted((x for x in rows.values() if any(t in x.content for t in terms)), key=lambda x: (x.created_at, x.id), reverse=True)
            assert store.keyword(s, terms) == want, terms
            assert store.keyword(s, terms, limit=5) == want[:5]


# ----------------------------------------------------------------------------------------------- deferred touch
def test_deferred_touch_reaches_chroma(tmp_path):
    "S-6.6: touches are visible at once through the store, and in Chroma after flush / close; a rewrite or delete wins."
    m = MemoryScope('carol', 'main', 's1')
    path = tmp_path / 'c'
    s = ChromaStore(Settings(), EMB, team(), path=path)
    s.put([MemoryItem.new(m, 'turn', f'turn {i}', id=f't{i}', created_at=T0 + i) for i in range(4)])
    def raw():
        r = s._col('carol').col.get(include=['metadatas'])
        return {i: md.get('last_accessed') for i, md in zip(r['ids'], r['metadatas'])}
    assert s.touch(m, ['t0', 't1', 't2', 'nope'], T0 + 50) == 3
    assert [x.last_accessed for x in s.get(m, ['t0', 't1', 't3'])] == [T0 + 50, T0 + 50, None]
    assert raw()['t0'] is None                                   # deferred
    s.delete(m, ['t2'])
    assert s.flush() == 2 and raw() == {'t0': T0 + 50, 't1': T0 + 50, 't3': None}
    s.touch(m, ['t3'], T0 + 60)
    s.close()                                                    # close writes them
    with ChromaStore(Settings(), EMB, team(), path=path, mirror=False) as b:
        assert [x.last_accessed for x in b.get(m, ['t0', 't3'])] == [T0 + 50, T0 + 60]


def test_old_touches_are_written_by_the_next_write(tmp_path, monkeypatch):
    "Pending touches older than _FLUSH_S go to Chroma with the next write (record_turn's put)."
    m = MemoryScope('dan', 'main', 's1')
    with ChromaStore(Settings(), EMB, team(), path=tmp_path / 'c') as s:
        s.put([MemoryItem.new(m, 'turn', 'a', id='a', created_at=T0)])
        s.touch(m, ['a'], T0 + 1)
        monkeypatch.setattr(M, '_FLUSH_S', 0.0)
        s.put([MemoryItem.new(m, 'turn', 'b', id='b', created_at=T0)])
        assert s._col('dan').col.get(ids=['a'], include=['metadatas'])['metadatas'][0]['last_accessed'] == T0 + 1


# ----------------------------------------------------------------------------------------------- isolation
def test_isolation_holds_even_if_the_predicate_were_wrong(tmp_path, monkeypatch):
    "S-1.6 defence in depth: with `ReadClause` accepting everything, `_row_readable` still hides what the policy forbids."
    from test_store_isolation import build as ibuild, oracle, USERS, READERS
    spec = [dict(i=i, u=USERS[i % 3], a=AGENTS[(i // 3) % 3], src=SOURCES[i % len(SOURCES)], text=f'서울 tea #{i}', md={},
                 session='s1', t=T0 + i, imp=0.5) for i in range(45)]
    items = ibuild(spec, 'dd')
    t = team()
    monkeypatch.setattr(ReadClause, 'group', lambda self, key: True)
    monkeypatch.setattr(ReadClause, 'rest', lambda self, m: True)
    monkeypatch.setattr(ReadClause, 'matches', lambda self, m: True)
    monkeypatch.setattr(C, 'chroma_where', lambda cl: {'user_id': cl.user_id})       # the where forgets the policy too
    with ChromaStore(Settings(), EMB, t, path=tmp_path / 'c') as store:
        store.put(items)
        for u, a in itertools.product(USERS, READERS):
            user, pol = f'dd-{u}', t.policy(a)
            s, allowed = MemoryScope(user, a), oracle(items, user, pol)
            assert {x.id for x in store.list(s)} <= allowed
            assert {x.id for x in store.keyword(s, ['서울'])} <= allowed
            assert {x.id for x in store.get(s, [x.id for x in items])} <= allowed
            assert {x.id for x, _ in store.search(s, '서울 tea', k=50)} <= allowed
            assert set(store.cosines(s, [x.id for x in items], EMB.embed_one('tea'))) <= allowed


@pytest.mark.parametrize('mirror', [True, False])
def test_isolation_random_reads_without_mirror_too(tmp_path, mirror):
    "The isolation checks of test_store_isolation, through the mirror and through Chroma with post-filtering."
    from test_store_isolation import build as ibuild, check_reads, check_mutations, GOD
    rng = np.random.default_rng(11)
    srcs = ('explicit', 'extracted', 'housing_profile', 'turn', 'thought', 'journal', 'delegation', 'task_pattern', 'procedure')
    spec = [dict(i=i, u=('u1', 'u2', 'u3')[i % 3], a=AGENTS[int(rng.integers(0, 3))], src=srcs[int(rng.integers(0, 9))],
                 text=f"{WORDS[int(rng.integers(0, 8))]} {WORDS[int(rng.integers(0, 8))]} #{i}",
                 md={'superseded_by': 'y'} if i % 5 == 0 else {}, session=['s1', 's2', None][i % 3],
                 t=T0 + float(rng.integers(0, 100)), imp=float(rng.integers(0, 10)) / 10) for i in range(60)]
    spec = [d if d['src'] in ('explicit', 'extracted') else {**d, 'md': {}} for d in spec]
    t = Team(policies=[ReadPolicy('main'), ReadPolicy('karen', pdm=('self', 'main')), ReadPolicy('bob-agent', edm=('self', 'karen')),
                       ReadPolicy('stranger'), GOD])
    items = ibuild(spec, 'iso')
    with ChromaStore(Settings(), EMB, t, path=tmp_path / 'c', mirror=mirror) as store:
        store.put(items)
        check_reads(store, items, 'iso', t)
        check_mutations(store, items, 'iso', t, 'u2', 'karen')


@pytest.mark.server
def test_server_fast_paths_equal_where_paths(tmp_path, monkeypatch):
    "Server mode (no mirror): get / touch by id without a where, and the vector fast path, equal the where paths."
    monkeypatch.setattr(C, '_FAST_K', {True: (1, 4), False: (1, 4)})
    with chroma_server(tmp_path / 'server') as url:
        with ChromaStore(Settings(), EMB, team(), server_url=url) as s:
            assert s._use_mirror is False
            m, k = MemoryScope('eve', 'main'), MemoryScope('eve', 'karen')
            s.put([MemoryItem.new([m, k][i % 2], SOURCES[i % len(SOURCES)], f'서울 tea {i}', id=f'e{i}', created_at=T0 + i) for i in range(30)])
            for sc, flt, kk in itertools.product([m, k], [Filter(), Filter(layers='edm'), Filter(since=T0 + 25)], [1, 3, 8]):
                s._fast_search = False
                want = s.search(sc, '서울 tea', k=kk, filter=flt)
                s._fast_search = True
                assert same_hits(s.search(sc, '서울 tea', k=kk, filter=flt), want)
            assert {x.id for x in s.get(k, [f'e{i}' for i in range(30)])} == {x.id for x in s.list(k, filter=Filter(include_superseded=True))}
            assert s.touch(k, [f'e{i}' for i in range(30)], T0 + 99) == s.count(k, Filter(include_superseded=True))
        with pytest.raises(StoreError, match='mirror=True'):
            ChromaStore(Settings(), EMB, team(), server_url=url, mirror=True)
