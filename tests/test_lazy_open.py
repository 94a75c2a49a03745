"""Opening without Chroma (issue 15 item 1, nbs/05_chroma.ipynb "Opening without Chroma"): a store reopened from its
snapshots answers reads — and a whole `observe` — without importing chromadb; what it defers (touches) still reaches
Chroma, at `close` and at interpreter exit without one; a store that cannot open Chroma fails with the same
`StoreUnavailable` at first use; a reader never sees more than before (SPEC S-1.6).

Run in fresh processes: this test process has imported chromadb long ago. Timing is bench/cold_start.py's and the
independent probe's, never asserted here."""
from __future__ import annotations
import json, os, subprocess, sys, textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
T0 = 1_700_000_000.0

COMMON = """
import json, sys
from jarvis_memory.settings import Settings
from jarvis_memory.scope import MemoryScope, MemoryItem, ReadPolicy, Team
from jarvis_memory.service import MemoryService
T0 = 1_700_000_000.0
def settings(path, team): return Settings(path=path, team_dir=team, embedding_provider='hashing', embedding_dim=64)
MAIN, KAREN = MemoryScope('alice', 'main', 's-main'), MemoryScope('alice', 'karen', 's-karen')
"""


def run(code: str, *args) -> dict:
    r = subprocess.run([sys.executable, '-c', COMMON + textwrap.dedent(code), *map(str, args)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope='module')
def store_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp('lazy')
    (d / 'team').mkdir()
    (d / 'team' / 'policies.json').write_text(json.dumps({'karen': {'edm': ['self'], 'pdm': ['self']}}))
    run("""
    svc = MemoryService.open(settings(sys.argv[1], sys.argv[2]))
    items = [MemoryItem.new(MAIN if i % 2 else KAREN, 'turn', f'Caroline went to the support group on day {i}', id=f'r{i}',
                            created_at=T0 + 60 * i, importance=0.5) for i in range(40)]
    items.append(MemoryItem.new(MAIN, 'explicit', '거주지: 서울', id='home', created_at=T0, importance=0.9))
    svc.store.put(items)
    svc.observe(MAIN, [{'role': 'user', 'content': 'warm up'}], now=T0 + 5000)   # builds BM25 terms: the snapshot keeps them
    svc.close()
    print(json.dumps({'ok': True}))
    """, d / 'store', d / 'team')
    return d


def test_a_reopened_store_observes_without_chromadb(store_dir):
    got = run("""
    from jarvis_memory.chroma import ChromaStore
    seen = {}
    _touch = ChromaStore.touch
    def touch(self, *a, **kw):              # observe's last step: was chromadb imported before it?
        seen.setdefault('chromadb_before_touch', 'chromadb' in sys.modules)
        return _touch(self, *a, **kw)
    ChromaStore.touch = touch
    svc = MemoryService.open(settings(sys.argv[1], sys.argv[2]))
    after_open = 'chromadb' in sys.modules or 'jsonschema' in sys.modules
    o = svc.observe(MAIN, [{'role': 'user', 'content': 'When did Caroline go to the support group?'}], now=T0 + 9000)
    ko = svc.observe(MAIN, [{'role': 'user', 'content': '서울에서?'}], now=T0 + 9000)
    k = svc.observe(KAREN, [{'role': 'user', 'content': 'When did Caroline go to the support group?'}], now=T0 + 9000)
    nobody = svc.observe(MemoryScope('nobody', 'main', 's'), [{'role': 'user', 'content': 'anything?'}], now=T0 + 9000)
    out = dict(after_open=after_open, before_touch=seen['chromadb_before_touch'],
               main=sorted(it.id for it in o.shown), ko=[it.id for it in ko.shown][:3],
               karen=sorted(it.id for it in k.shown), nobody=len(nobody.shown))
    svc.close()
    print(json.dumps(out))
    """, store_dir / 'store', store_dir / 'team')
    assert got['after_open'] is False and got['before_touch'] is False
    assert got['main'] and all(int(i[1:]) % 2 == 1 for i in got['main'] if i.startswith('r'))   # main's own turns only
    assert 'home' in got['ko']
    assert got['karen'] and all(int(i[1:]) % 2 == 0 for i in got['karen'] if i.startswith('r'))  # karen's episodes: hers only
    assert got['nobody'] == 0


def test_deferred_touches_reach_chroma_at_exit_without_close(store_dir):
    "observe's touches wait in the mirror; a process that ends without `close` (and before Chroma opened) journals them."
    run("""
    svc = MemoryService.open(settings(sys.argv[1], sys.argv[2]))
    o = svc.observe(MAIN, [{'role': 'user', 'content': 'When did Caroline go to the support group?'}], now=T0 + 77777)
    print(json.dumps({'shown': [it.id for it in o.shown]}))
    """, store_dir / 'store', store_dir / 'team')          # no close: the process just ends
    got = run("""
    svc = MemoryService.open(settings(sys.argv[1], sys.argv[2]))     # applies what the exit journaled
    print(json.dumps({'touched': sorted(it.id for it in svc.store.list(MAIN) if it.last_accessed == T0 + 77777)}))
    svc.close()
    """, store_dir / 'store', store_dir / 'team')
    assert got['touched'], "no row carries the exit's last_accessed: the deferred touches were lost"


def test_a_store_that_cannot_open_chroma_says_so_at_first_use(store_dir, tmp_path):
    import shutil
    bad = tmp_path / 'bad'
    shutil.copytree(store_dir / 'store', bad)
    (bad / 'chroma.sqlite3').write_bytes(b'not a database' * 100)
    got = run("""
    from jarvis_memory.store import StoreUnavailable
    svc = MemoryService.open(settings(sys.argv[1], sys.argv[2]))
    try: svc.store.list(MAIN); out = {'error': None}
    except StoreUnavailable as e: out = {'error': str(e)}
    print(json.dumps(out))
    """, bad, store_dir / 'team')
    assert got['error'] and 'cannot open the Chroma store at' in got['error'] and str(bad) in got['error']
