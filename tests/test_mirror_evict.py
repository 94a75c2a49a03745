"""Many users in one embedded store (issue 15 item 4, nbs/05_chroma.ipynb "Many users"): with room for a single mirror,
every read of every user is what a store that keeps every mirror reads, along any interleaving of writes and reads
across users; deferred touches of a dropped mirror reach Chroma; a reopened store reads the same again.

Timing and memory are measured by bench/multi_user.py, never asserted here."""
from __future__ import annotations
from pathlib import Path

from hypothesis import given, settings as hsettings, strategies as st, HealthCheck

from jarvis_memory.scope import MemoryScope, MemoryItem
from jarvis_memory.settings import Settings
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.chroma import ChromaStore

EMB = HashingEmbedder(64)
T0 = 1_700_000_000.0
USERS = [MemoryScope(f'user-{i}', 'main', 's') for i in range(4)]
WORDS = ['서울', '날씨', 'tea', 'camping', '부산', '하은', 'trip', '공원']

op = st.one_of(
    st.tuples(st.just('put'), st.integers(0, 3), st.integers(0, 5), st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)),
    st.tuples(st.just('touch'), st.integers(0, 3), st.integers(0, 5), st.integers(1, 500)),
    st.tuples(st.just('delete'), st.integers(0, 3), st.integers(0, 5), st.just(None)),
    st.tuples(st.just('read'), st.integers(0, 3), st.just(0), st.sampled_from(WORDS)),
)


def reads(store, u, word):
    sc = USERS[u]
    return ([(it.id, it.content, it.last_accessed) for it in store.list(sc)],
            [(it.id, round(s, 6)) for it, s in store.lexical(sc, word)],
            [it.id for it, _ in store.search(sc, word, k=5)])


def apply(store, o):
    kind, u, n, arg = o
    sc = USERS[u]
    if kind == 'put': store.put([MemoryItem.new(sc, 'turn', ' '.join(arg) + f' {n}', id=f'i{n}', created_at=T0 + n)])
    elif kind == 'touch': store.touch(sc, [f'i{n}'], T0 + arg)
    elif kind == 'delete': store.delete(sc, [f'i{n}'])
    else: return reads(store, u, arg)


@hsettings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(op, min_size=5, max_size=40))
def test_one_mirror_reads_like_all_mirrors(tmp_path_factory, ops):
    a_dir, b_dir = tmp_path_factory.mktemp('one'), tmp_path_factory.mktemp('all')
    one = ChromaStore(Settings(mirror_users=1), EMB, path=a_dir)
    every = ChromaStore(Settings(), EMB, path=b_dir)
    try:
        for o in ops:
            assert apply(one, o) == apply(every, o), o
            assert len(one._shared.mirrors) <= 1
        for u in range(4): assert reads(one, u, '서울') == reads(every, u, '서울')
    finally:
        one.close(); every.close()
    with ChromaStore(Settings(), EMB, path=a_dir, mirror=False) as direct, ChromaStore(Settings(), EMB, path=b_dir) as again:
        for u in range(4): assert reads(direct, u, 'tea')[0] == reads(again, u, 'tea')[0]   # the touches reached Chroma
