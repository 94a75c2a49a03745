"""Writes that wait (`ChromaStore.deferred` and the write journal, nbs/05_chroma.ipynb, issue 15 item 2).

Inside a `deferred` block writes reach the mirror at once and Chroma together when the block ends; outside blocks an
embedded store's writes wait in the journal until `write_behind` rows wait. What must hold: any mix of writes and
reads leaves Chroma exactly as the same writes sent one by one (`write_behind=0`, no block); reads see every write;
a process killed inside a block loses that block's writes and nothing else, a process killed outside blocks loses
nothing it was told was written, and a consolidation killed inside its block is redone by the next one."""
from __future__ import annotations
import json, os, signal, subprocess, sys, tempfile, textwrap
from pathlib import Path

import numpy as np
from hypothesis import example, given, settings as hsettings, strategies as st

from jarvis_memory import chroma, mirror
from jarvis_memory.chroma import ChromaStore, collection_name
from jarvis_memory.consolidation import Consolidation
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.episodes import TurnRecord
from jarvis_memory.llm import FakeLLM
from jarvis_memory.scope import MemoryItem, MemoryScope, SUPERSEDED
from jarvis_memory.settings import Settings
from jarvis_memory.store import Filter

ROOT = Path(__file__).resolve().parents[1]
SC = MemoryScope('dana', 'main', 'd1')
IDS = [f'r{i}' for i in range(5)]
T0 = 1.7e9


def raw_rows(s: ChromaStore) -> dict:
    "Every row of dana's collection as Chroma holds it once nothing waits: {id: (document, metadata, embedding)}."
    s.flush()
    r = s._client.get_collection(collection_name('dana')).get(include=['documents', 'metadatas', 'embeddings'])
    return {i: (d, m, np.round(np.asarray(e, dtype=np.float64), 6).tolist()) for i, d, m, e in
            zip(r['ids'], r['documents'], r['metadatas'], r['embeddings'])}


def seen(s: ChromaStore) -> list:
    "What the store shows: every row, superseded ones included, with content and item metadata, by id (`order_by=None`"
    "promises no order: a store rebuilt from Chroma after a kill lists rows in Chroma's order, not the writer's)."
    return sorted((it.id, it.content, it.metadata, it.superseded, it.rehearsal) for it in
                  s.list(SC, filter=Filter(include_superseded=True), order_by=None))


op = st.one_of(
    st.tuples(st.just('put'), st.sampled_from(IDS), st.sampled_from(['home: Seoul', 'home: Busan', 'likes tea', '차를 좋아함']),
              st.dictionaries(st.sampled_from(['a', 'b', 'topic']), st.sampled_from(['x', 'y', 'home']), max_size=2)),
    st.tuples(st.just('patch'), st.lists(st.sampled_from(IDS), min_size=1, max_size=3, unique=True),
              st.dictionaries(st.sampled_from(['a', 'b', SUPERSEDED]), st.one_of(st.none(), st.sampled_from(['x', 'r0', 'r1'])),
                              min_size=1, max_size=2)),
    st.tuples(st.just('delete'), st.lists(st.sampled_from(IDS), min_size=1, max_size=2, unique=True)),
    st.tuples(st.just('rehearse'), st.lists(st.sampled_from(IDS), min_size=1, max_size=2, unique=True)),
    st.tuples(st.just('read'), st.sampled_from(['list', 'vectors', 'search', 'count'])))


def apply(s: ChromaStore, ops: list, reads: list, at: int = 0):
    for n, o in enumerate(ops, at):
        if o[0] == 'put': s.put([MemoryItem.new(SC, 'explicit', o[2], id=o[1], created_at=T0 + n, metadata=o[3])])
        elif o[0] == 'patch': s.update_metadata(SC, o[1], o[2])
        elif o[0] == 'delete': s.delete(SC, o[1])
        elif o[0] == 'rehearse': s.rehearse(SC, o[1])
        elif o[1] == 'list': reads.append(seen(s))
        elif o[1] == 'vectors':
            reads.append([(it.id, np.round(it.embedding, 6).tolist()) for it in s.get(SC, IDS, include_embeddings=True)])
        elif o[1] == 'search': reads.append([(it.id, round(c, 6)) for it, c in s.search(SC, 'home: Seoul', k=3)])
        else: reads.append(s.count(SC, Filter(include_superseded=True)))


@hsettings(max_examples=30, deadline=None)
@given(st.lists(op, min_size=1, max_size=14), st.integers(0, 14), st.integers(1, 6))
def test_a_block_leaves_chroma_as_the_writes_one_by_one(ops, cut, behind):
    # The same writes one by one (a), in a block (b: some before it, journaled, the rest inside), and journaled
    # outside blocks with Chroma getting them every `behind` rows (c): Chroma's rows, what the store shows, and every
    # read made along the way are the same.
    with tempfile.TemporaryDirectory() as d:
        a = ChromaStore(Settings(path=f'{d}/a', write_behind=0), HashingEmbedder(32))
        b = ChromaStore(Settings(path=f'{d}/b'), HashingEmbedder(32))
        c = ChromaStore(Settings(path=f'{d}/c', write_behind=behind), HashingEmbedder(32))
        ra, rb, rc = [], [], []
        apply(a, ops, ra)
        apply(b, ops[:cut], rb)
        with b.deferred(): apply(b, ops[cut:], rb, cut)
        apply(c, ops, rc)
        assert rb == ra and rc == ra
        assert seen(b) == seen(a) and seen(c) == seen(a)
        if any(o[0] == 'put' for o in ops): assert raw_rows(b) == raw_rows(a) == raw_rows(c)
        a.close(); b.close(); c.close()
        b = ChromaStore(Settings(path=f'{d}/b'), HashingEmbedder(32))        # and after a restart
        a = ChromaStore(Settings(path=f'{d}/a'), HashingEmbedder(32))
        c = ChromaStore(Settings(path=f'{d}/c'), HashingEmbedder(32))
        assert seen(b) == seen(a) == seen(c)
        a.close(); b.close(); c.close()


def same_reads(x: list, y: list) -> bool:
    "Reads equal; a search's results by cosine (within 1e-5: Chroma's and numpy's float32 arithmetic differ in the last"
    "bits) and by id where the row is the only one at its cosine above the cut (rows with one text tie, and which of"
    "them come first, or make the cut, is the index's choice)."
    if len(x) != len(y): return False
    for u, v in zip(x, y):
        if not (isinstance(u, list) and u and isinstance(u[0], tuple) and isinstance(u[0][1], float)):
            if u != v: return False
            continue
        cu, cv = [c for _, c in u], [c for _, c in v]
        if len(u) != len(v) or not np.allclose(cu, cv, atol=1e-5): return False
        for (i, c), (j, _) in zip(u, v):
            alone = sum(abs(c - d) < 1e-4 for d in cu) == 1 and c > cu[-1] + 1e-4
            if alone and i != j: return False
    return True


@hsettings(max_examples=25, deadline=None)
@given(st.lists(op, min_size=1, max_size=14), st.integers(1, 6))
@example([('put', 'r0', 'home: Seoul', {}), ('put', 'r1', 'likes tea', {}), ('read', 'search'), ('put', 'r2', 'home: Busan', {}),
          ('delete', ['r0']), ('put', 'r1', 'home: Seoul', {}), ('patch', ['r2'], {'a': 'x'}), ('read', 'search')], 6)
def test_hnsw_search_counts_waiting_writes_without_sending(ops, behind):
    # Past `exact_rows` (0 here: always Chroma's index) a search with writes waiting answers as the same search does
    # once they are sent (`_Deferred.nearest`), and sends nothing itself.
    with tempfile.TemporaryDirectory() as d:
        a = ChromaStore(Settings(path=f'{d}/a', write_behind=0, exact_rows=0), HashingEmbedder(32))
        c = ChromaStore(Settings(path=f'{d}/c', write_behind=behind, exact_rows=0), HashingEmbedder(32))
        ra, rc, sent = [], [], []
        search, settle = c.search, chroma._Deferred.settle
        def searching(*args, **kw):
            sent.append(0)
            try: return search(*args, **kw)
            finally: sent.append(None)
        def counted(self):
            n = settle(self)
            if sent and sent[-1] == 0: sent[-1] = n            # inside a search
            return n
        c.search = searching
        chroma._Deferred.settle, small = counted, mirror._SMALL
        mirror._SMALL = 0                                    # no group searched exactly in the mirror: the index answers
        try:
            apply(c, ops, rc)
            mirror._SMALL = small
            apply(a, ops, ra)
        finally: chroma._Deferred.settle, mirror._SMALL = settle, small
        assert same_reads(rc, ra), (rc, ra)
        assert not any(sent), sent                           # no search sent a waiting row
        if any(o[0] == 'put' for o in ops): assert raw_rows(c) == raw_rows(a)
        a.close(); c.close()


KILL = textwrap.dedent("""
    import os, signal, sys
    from jarvis_memory.scope import MemoryScope, MemoryItem, SUPERSEDED
    from jarvis_memory.settings import Settings
    from jarvis_memory.embeddings import HashingEmbedder
    from jarvis_memory.chroma import ChromaStore
    s = ChromaStore(Settings(), HashingEmbedder(32), path=sys.argv[1])
    SC = MemoryScope('dana', 'main', 'd1')
    s.put([MemoryItem.new(SC, 'explicit', f'kept {i}', id=f'kept{i}', created_at=1.7e9 + i) for i in range(3)])
    with s.deferred():
        s.put([MemoryItem.new(SC, 'explicit', f'lost {i}', id=f'lost{i}', created_at=1.7e9 + 10 + i) for i in range(3)])
        s.update_metadata(SC, ['kept0'], {SUPERSEDED: 'lost0'})
        s.delete(SC, ['kept1'])
        assert [it.id for it in s.list(SC)][:3] == ['lost2', 'lost1', 'lost0']
        if sys.argv[2] == 'inside': print('written', flush=True); os.kill(os.getpid(), signal.SIGKILL)
    print('written', flush=True)
    os.kill(os.getpid(), signal.SIGKILL)                 # no close, no finalizer: as a crash or `kill -9`
""")


def run_killed(code: str, *args, said: str = 'written'):
    "Run `code` in a fresh process that kills itself (SIGKILL) after printing `said`."
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(ROOT), os.environ.get('PYTHONPATH', '')])}
    r = subprocess.run([sys.executable, '-c', code, *map(str, args)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == -signal.SIGKILL and r.stdout.split() == [said], (r.returncode, r.stdout, r.stderr[-2000:])


def killed(path, where): run_killed(KILL, path, where)


def test_a_kill_inside_a_block_loses_that_block_only(tmp_path):
    killed(tmp_path / 'c', 'inside')
    with ChromaStore(Settings(), HashingEmbedder(32), path=tmp_path / 'c') as s:
        assert [it.id for it in s.list(SC, filter=Filter(include_superseded=True))] == ['kept2', 'kept1', 'kept0']
        assert not s.get(SC, ['kept0'])[0].superseded
        assert sorted(raw_rows(s)) == ['kept0', 'kept1', 'kept2']


def test_a_kill_after_a_block_keeps_it(tmp_path):
    killed(tmp_path / 'c', 'after')
    with ChromaStore(Settings(), HashingEmbedder(32), path=tmp_path / 'c') as s:
        assert [it.id for it in s.list(SC)] == ['lost2', 'lost1', 'lost0', 'kept2']
        assert s.get(SC, ['kept0'])[0].superseded and s.get(SC, ['kept1']) == []


JOURNALED = textwrap.dedent("""
    import json, os, signal, sys
    sys.path.insert(0, sys.argv[3])
    from test_deferred import apply
    from jarvis_memory.settings import Settings
    from jarvis_memory.embeddings import HashingEmbedder
    from jarvis_memory.chroma import ChromaStore
    s = ChromaStore(Settings(write_behind=int(sys.argv[4])), HashingEmbedder(32), path=sys.argv[1])
    ops = [tuple(o) for o in json.loads(sys.argv[2])]
    apply(s, ops, [])
    print('written', flush=True)
    os.kill(os.getpid(), signal.SIGKILL)                 # no close, no finalizer
""")


@hsettings(max_examples=8, deadline=None)
@given(st.lists(op, min_size=1, max_size=14), st.integers(2, 6))
def test_a_kill_outside_blocks_loses_nothing_written(ops, behind):
    # Writes outside blocks, some sent to Chroma (every `behind` rows), the rest waiting in the journal, then a kill:
    # the next open (which replays the journal) shows and holds what the same writes made one by one.
    with tempfile.TemporaryDirectory() as d:
        run_killed(JOURNALED, f'{d}/k', json.dumps(ops), ROOT / 'tests', behind)
        a = ChromaStore(Settings(path=f'{d}/a', write_behind=0), HashingEmbedder(32))
        apply(a, ops, [])
        k = ChromaStore(Settings(path=f'{d}/k'), HashingEmbedder(32))
        assert seen(k) == seen(a)
        if any(o[0] == 'put' for o in ops): assert raw_rows(k) == raw_rows(a)
        a.close(); k.close()


CONSOLIDATE = textwrap.dedent("""
    import os, signal, sys
    import jarvis_memory.consolidation as C
    from jarvis_memory.consolidation import Consolidation
    from jarvis_memory.embeddings import HashingEmbedder
    from jarvis_memory.episodes import TurnRecord
    from jarvis_memory.llm import FakeLLM
    from jarvis_memory.scope import MemoryScope
    from jarvis_memory.settings import Settings
    from jarvis_memory.chroma import ChromaStore
    s = Settings(path=sys.argv[1])
    core = Consolidation(ChromaStore(s, embedder=HashingEmbedder(32)), s, clock=lambda: 2e9)
    sc = MemoryScope('p', 'main', 's')
    core.record(TurnRecord(sc, 1, '나는 서울에 살아.', '알겠어요.', at=1e9))
    core.record(TurnRecord(sc, 2, '나는 고양이를 키워.', '좋네요.', at=1e9 + 60))
    write = C.Consolidation._write_extracted
    n = [0]
    def dying(self, *a, **kw):                           # the second fact's write never comes: killed between writes
        n[0] += 1
        if n[0] == 2: print('killed', flush=True); os.kill(os.getpid(), signal.SIGKILL)
        return write(self, *a, **kw)
    C.Consolidation._write_extracted = dying
    core.consolidate(sc, FakeLLM([{'facts': [{'key': '거주지', 'value': '서울', 'importance': 0.8},
                                             {'key': '반려동물', 'value': '고양이', 'importance': 0.7}]}]), session_id='s')
""")


def test_a_consolidation_killed_midway_is_redone(tmp_path):
    # Killed after its first fact: neither fact nor the episodes' "consolidated" flag reached Chroma, so the
    # episodes are still pending and the next consolidation writes both facts.
    run_killed(CONSOLIDATE, tmp_path / 'c', said='killed')
    s = Settings(path=str(tmp_path / 'c'))
    core = Consolidation(ChromaStore(s, embedder=HashingEmbedder(32)), s, clock=lambda: 2e9)
    sc = MemoryScope('p', 'main', 's')
    facts = lambda: sorted(f.content for f in core.store.list(sc, filter=Filter(sources=('extracted',))))
    assert facts() == []
    assert len(core.pending_episodes(sc, 's')) == 2
    core.consolidate(sc, FakeLLM([{'facts': [{'key': '거주지', 'value': '서울', 'importance': 0.8},
                                             {'key': '반려동물', 'value': '고양이', 'importance': 0.7}]}]), session_id='s')
    assert facts() == ['거주지: 서울', '반려동물: 고양이']
    assert core.pending_episodes(sc, 's') == []
    core.close()
