"""The core facts block reads the newest facts only when the most important ones do not decide it (`recall._settled`):
for random stores (importances with many ties, passing and ungrounded facts, superseded topics) and small pools, the
block equals the one chosen from both reads, now and as of earlier times; and the shortcut is taken (it is not a
test that passes because the second read always happens)."""
from __future__ import annotations
import random, tempfile

import pytest

from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.scope import MemoryScope
from jarvis_memory.service import MemoryService
from jarvis_memory.settings import Settings
from jarvis_memory.chroma import ChromaStore
from jarvis_memory.store import Filter
from jarvis_memory import recall as R
from jarvis_memory.scoring import core_facts

T0 = 1_760_000_000.0
DAY = 86400.0


def both_reads(store, scopes, settings, until=None):
    "The block as chosen before the shortcut: the most important and the newest facts of every scope."
    k = settings.core_facts
    flt, n, pool = Filter(layers=('semantic',), until=until, include_superseded=until is not None), max(settings.pool_size, k), []
    for sc in scopes:
        pool += R._as_of(store, sc, store.list(sc, filter=flt, order_by='importance', limit=n) + store.list(sc, filter=flt, order_by='created_at', limit=n), until)
    return core_facts(pool, k)


def check_store(seed: int, calls: list):
    "One random store: the block equals `both_reads` now and as of two earlier times; `calls` gets each `_settled` answer."
    rng = random.Random(seed)
    pool, k = rng.choice((2, 3, 5)), rng.choice((1, 2, 3))
    s = Settings(path=tempfile.mkdtemp(), embedding_provider='hashing', pool_size=pool, core_facts=k)
    svc = MemoryService(ChromaStore(s, embedder=HashingEmbedder()), s, clock=lambda: T0)
    scopes = [MemoryScope(u, 'main', 's1') for u in ('ann', 'bob')[:rng.choice((1, 2))]]
    times = []
    for i in range(rng.randint(0, 14)):
        sc, at = rng.choice(scopes), T0 - rng.uniform(0, 100) * DAY
        topic = rng.choice(('거주지', 'job', 'pet', f'note{i}', f'hobby{i}'))        # shared topics supersede each other
        meta = rng.choice(({}, {'fact_kind': 'passing'}, {'grounded': False}, {'fact_kind': 'lasting', 'grounded': True}))
        svc.write_fact(sc, 'extracted', f'{topic}: value {i}', importance=rng.choice((0.5, 0.6, 0.6, 0.8, 0.9, 0.9)), metadata=meta, at=at)
        times.append(at)
    for until in (None, *(rng.sample(times, min(2, len(times))))):
        got = R.core_block(svc.store, scopes, s, until)
        want = both_reads(svc.store, scopes, s, until)
        assert [f.id for f in got] == [f.id for f in want], (seed, until)
    svc.store.close()


def test_core_block_equals_both_reads(monkeypatch):
    calls = []
    real = R._settled
    monkeypatch.setattr(R, '_settled', lambda *a: calls.append(real(*a)) or calls[-1])
    for seed in range(16): check_store(seed, calls)
    assert True in calls and False in calls, calls        # both ways were taken, so both were compared


def test_the_shortcut_is_taken():
    "With more facts than the pool and distinct importances, the newest facts are not read (the second `list` is skipped)."
    s = Settings(path=tempfile.mkdtemp(), embedding_provider='hashing', pool_size=4, core_facts=2)
    svc = MemoryService(ChromaStore(s, embedder=HashingEmbedder()), s, clock=lambda: T0)
    sc = MemoryScope('ann', 'main', 's1')
    for i in range(10): svc.write_fact(sc, 'extracted', f'topic{i}: value {i}', importance=0.5 + i * 0.04, at=T0 - i * DAY)
    reads = []
    real = svc.store.list
    svc.store.list = lambda *a, **kw: reads.append(kw.get('order_by')) or real(*a, **kw)
    got = R.core_block(svc.store, [sc], s)
    assert reads == ['importance'] and [f.content for f in got] == ['topic9: value 9', 'topic8: value 8']
    svc.store.list = real
    assert [f.id for f in got] == [f.id for f in both_reads(svc.store, [sc], s)]
    svc.store.close()
