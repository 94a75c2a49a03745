"""The mirror snapshot (issue 15 item 1, nbs/04_mirror.ipynb and nbs/05_chroma.ipynb): an embedded store reopened from
its snapshot reads exactly as one rebuilt from Chroma; a damaged or stale snapshot is never trusted; a crash after a
write (the process killed, no close) leaves no snapshot that looks current; the read clause applies to restored
rows as to any (SPEC S-1.6); deleted text does not survive in a snapshot (issue 14 finding 8).

Timing is measured by bench/cold_start.py and bench/recall_latency.py, never asserted here."""
from __future__ import annotations
import itertools, json, logging, os, shutil, signal, subprocess, sys, textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import jarvis_memory.mirror as M
from jarvis_memory.scope import MemoryScope, MemoryItem, ReadPolicy, Team
from jarvis_memory.settings import Settings
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.store import Filter, _gkey
from jarvis_memory.mirror import _Mirror
from jarvis_memory.chroma import ChromaStore, _snap_file

EMB = HashingEmbedder(64)
T0 = 1_700_000_000.0
ROOT = Path(__file__).resolve().parent.parent
USER = 'alice'
AGENTS = ('main', 'karen', 'bob-agent')
MAIN, KAREN, BOB = (MemoryScope(USER, a, f's-{a}') for a in AGENTS)


def team():
    return Team(policies=[ReadPolicy('main'), ReadPolicy('karen', edm=('self',), pdm=('self', 'main')),
                          ReadPolicy('bob-agent', edm=('self', 'karen'))])


def open_store(path, **kw) -> ChromaStore:
    return ChromaStore(Settings(), EMB, team(), path=path, **kw)


TEXTS = ['서울 날씨 맑음', 'Seoul tea time with Melanie', '부산 바다 여행', '서울역 가는 길', 'a plan for the camping trip',
         '등산 코스: 북한산', '차', '날씨 tea', '거주지: 서울', 'Caroline went to the support group yesterday.',
         '딸 이름: 하은', '하은이랑 공원에 갔다. 서울 날씨가 좋았다.']
SOURCES = ['turn', 'explicit', 'thought', 'extracted', 'task_pattern', 'journal', 'turn_part', 'housing_profile', 'explicit', 'turn']


def fill(store, n=150):
    "Rows of three agents, every layer, Korean and English, then every kind of write a live store sees."
    items = []
    for i in range(n):
        sc = (MAIN, KAREN, BOB)[i % 3]
        items.append(MemoryItem.new(sc, SOURCES[i % len(SOURCES)], f"{TEXTS[i % len(TEXTS)]} {i}", id=f'r{i}',
                                    created_at=T0 + 60 * (i % 37), importance=(i % 10) / 10,
                                    metadata={'task_type': ['chat', 'budget'][i % 2], 'speaker': ['Caroline', 'Melanie'][i % 2],
                                              **({'tags': ['a', 'b']} if i % 7 == 0 else {})}))
    store.put(items)
    store.put([MemoryItem.new(MAIN, 'turn', '서', id='one-char', created_at=T0 + 5)])
    store.update_metadata(MAIN, ['r1', 'r4'], {'superseded_by': 'r3'})
    store.rehearse(MAIN, ['r0', 'r3'], 2)
    store.touch(KAREN, ['r1', 'r10', 'r13'], T0 + 999)
    store.delete(MAIN, ['r6', 'r9', 'r30'])
    store.put([replace(store.get(MAIN, ['r12'])[0], content='부산 날씨 흐림 rewritten')])


READS = [Filter(), Filter(include_superseded=True), Filter(layers='edm'), Filter(layers=['semantic', 'pdm']),
         Filter(exclude_sources=['thought'], since=T0 + 300), Filter(metadata={'task_type': 'budget'}), Filter(agent_ids=['karen'])]
QUERIES = ['서울에서 뭐 했어?', 'Melanie tea', '하은이 누구야', 'support group', '부산 날씨', '차']


def reads(store) -> dict:
    "Every kind of read, for every agent and a few filters: what a restart must give back unchanged."
    out = {}
    q = EMB.embed_one('서울 날씨', query=True)
    ids = [f'r{i}' for i in range(0, 160, 3)] + ['one-char', 'nope']
    for sc, flt in itertools.product((MAIN, KAREN, BOB), READS):
        k = (sc.agent_id, repr(flt))
        out[k + ('list',)] = [it.id for it in store.list(sc, filter=flt)]
        out[k + ('list-imp',)] = [it.id for it in store.list(sc, filter=flt, order_by='importance', limit=7)]
        out[k + ('count',)] = store.count(sc, flt)
        for t in (['서울'], ['tea', 'Seoul'], ['서'], ['울 날'], ['nothing']):
            out[k + ('kw', *t)] = [it.id for it in store.keyword(sc, t, filter=flt)]
        for qq in QUERIES:
            out[k + ('lex', qq)] = [(it.id, s) for it, s in store.lexical(sc, qq, k=8, filter=flt)]
        out[k + ('search',)] = [(it.id, round(s, 6)) for it, s in store.search(sc, embedding=q, k=6, filter=flt)]
    for sc in (MAIN, KAREN, BOB):
        out[(sc.agent_id, 'get')] = store.get(sc, ids)
        for qq in QUERIES: out[(sc.agent_id, 'lexs', qq)] = store.lexical_scores(sc, qq, ids)
        out[(sc.agent_id, 'cos')] = {i: round(c, 6) for i, c in store.cosines(sc, ids, q).items()}
    return out


def mirror_of(store) -> _Mirror:
    return store._mirror(store._col(USER))


def state(m: _Mirror):
    "Rows, each group's sort keys and speakers' names, and which rows hold one character, by id."
    live = {i: (m.docs[rn], m.metas[rn]) for i, rn in m.rn.items()}
    return (live, {key: (g.by_time, g.by_imp) for key, g in m.groups.items() if g.by_time},
            {key: +c for key, c in m.names.items() if +c}, {m.ids[rn] for rn in m.short})


def assert_exact(store):
    "The store's mirror equals a fresh load from Chroma, its numpy columns follow its rows, its BM25 terms those of a fresh build,"
    "its vectors Chroma's (a search first: a mirror read from Chroma fetches them at its first exact search)."
    store.search(MAIN, embedding=EMB.embed_one('서울 날씨', query=True), k=3)
    store.flush()
    c = store._col(USER)
    m = store._mirror(c)
    fresh = _Mirror.load('fresh', c.col)
    assert state(m) == state(fresh)
    for rn, i in enumerate(m.ids):
        if i is None: assert m.gcode[rn] == -1
        else: assert m.gcode[rn] == m.codes[_gkey(m.metas[rn])] and m.ctime[rn] == m.metas[rn]['created_at']
    lx, fx = m.lexicon(), fresh.lexicon()
    assert sorted(lx.ids) == sorted(fx.ids) and all(lx.doc_terms(i) == fx.doc_terms(i) for i in fx.ids)
    r = c.col.get(include=['embeddings'])                      # every vector the mirror holds is its row's, as Chroma has it
    held = {i: m.vec[m.rn[i]] for i in r['ids'] if m.rn[i] in m.vec}
    assert held, "the mirror holds no vectors: exact search was not exercised"
    for i, e in zip(r['ids'], r['embeddings']):
        if i in held: assert np.allclose(held[i], np.asarray(e) / np.linalg.norm(e), atol=1e-6), i


def snapshot_path(store) -> Path:
    return _snap_file(store.path, str(store._col(USER).col.id))


# ---------------------------------------------------------------------------------------------- same answers
def test_reopened_from_snapshot_reads_as_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setattr(M, '_DELTA_ROWS', 8)                  # several keyword segments, renumbered around deleted rows
    path = tmp_path / 'c'
    with open_store(path) as s:
        fill(s)
        want = reads(s)                                        # (this built the BM25 index: its terms go in the snapshot)
        snap = snapshot_path(s)
        assert not snap.exists()                               # written at close, not before
    assert snap.exists()
    loads = []
    monkeypatch.setattr(_Mirror, 'load', classmethod(lambda cls, *a, _l=_Mirror.load.__func__: loads.append(1) or _l(cls, *a)))
    with open_store(path) as s:
        m = mirror_of(s)
        assert (loads, m.on_disk, m.lex, m.lex_saved is not None) == ([], True, None, True)   # restored, BM25 not yet in use
        assert reads(s) == want
    assert loads == []
    snap.unlink()                                              # the reference: rebuilt from Chroma
    with open_store(path) as s:
        assert reads(s) == want and loads == [1]
        assert_exact(s)


def test_writes_after_a_restore_keep_the_mirror_exact(tmp_path):
    "Each kind of write on a restored mirror (BM25 terms still unused): the mirror stays equal to Chroma, and so do restarts."
    path = tmp_path / 'c'
    with open_store(path) as s: fill(s); reads(s)
    steps = [lambda s: s.put([MemoryItem.new(MAIN, 'turn', f'서울 새 기록 {i}', id=f'n{i}', created_at=T0 + 5000 + i) for i in range(3)]),
             lambda s: s.put([replace(s.get(MAIN, ['r0'])[0], content='내용을 바꿨다 Seoul')]),
             lambda s: s.update_metadata(MAIN, ['r3'], {'about': 'Melanie', 'superseded_by': 'r0'}),
             lambda s: s.delete(MAIN, ['r15', 'n1']),
             lambda s: s.rehearse(KAREN, ['r1'], 3),
             lambda s: s.touch(BOB, ['r2', 'r5'], T0 + 7777)]        # deferred (S-6.6): Chroma changes at close, the snapshot then
    for n, step in enumerate(steps):
        with open_store(path) as s:
            m = mirror_of(s)
            assert m.on_disk and m.lex is None
            step(s)
            if n < len(steps) - 1:
                assert not m.on_disk and not snapshot_path(s).exists()    # removed before the write reached Chroma
            assert m.lex is None                                          # a write alone never tokenises the whole store
            got = reads(s)
            assert_exact(s)
        with open_store(path) as s:
            assert mirror_of(s).on_disk and reads(s) == got


# ---------------------------------------------------------------------------------------------- never trusted when bad
def damage(kind: str, f: Path):
    if kind.startswith('vectors-'):                            # the vectors file the snapshot names
        f, kind = next(f.parent.glob(f'{f.stem}.*.vec')), kind[len('vectors-'):]
        if kind == 'missing': f.unlink(); return
    b = bytearray(f.read_bytes())
    if kind == 'truncated': f.write_bytes(bytes(b[:len(b) // 3]))
    elif kind == 'empty': f.write_bytes(b'')
    elif kind == 'junk': f.write_bytes(b'{"format": 1}' * 40)
    elif kind.startswith('flip'):
        at = {'flip-header': 20, 'flip-digest': None, 'flip-payload': len(b) // 2, 'flip-last': len(b) - 1}[kind]
        if at is None:                                         # the SHA-256 right after the header
            at = M._HEAD.size + M._HEAD.unpack_from(bytes(b))[1] + 3
        b[at] ^= 0x10
        f.write_bytes(bytes(b))


@pytest.mark.parametrize('kind', ['truncated', 'empty', 'junk', 'flip-header', 'flip-digest', 'flip-payload', 'flip-last',
                                  'vectors-missing', 'vectors-truncated', 'vectors-flip-payload', 'vectors-flip-last'])
def test_damaged_snapshot_is_rebuilt(tmp_path, kind, caplog):
    path = tmp_path / 'c'
    with open_store(path) as s: fill(s); want = reads(s); snap = snapshot_path(s)
    damage(kind, snap)
    with caplog.at_level(logging.INFO, logger='jarvis_memory.chroma'), open_store(path) as s:
        m = mirror_of(s)
        assert not m.on_disk                                   # not trusted: read from Chroma
        assert reads(s) == want
        assert_exact(s)
    assert 'mirror snapshot' in caplog.text and ('damaged' in caplog.text or 'not current' in caplog.text), caplog.text
    with open_store(path) as s: assert mirror_of(s).on_disk and reads(s) == want     # and written again, whole


def test_another_collections_snapshot_is_not_trusted(tmp_path):
    "Bob's snapshot copied over alice's: same format, valid checksum, wrong collection -> stale."
    path = tmp_path / 'c'
    bob = MemoryScope('bob', 'main', 'b1')
    with open_store(path) as s:
        fill(s); s.put([MemoryItem.new(bob, 'explicit', '거주지: 부산', id='b0', created_at=T0)])
        want, bsnap, asnap = reads(s), _snap_file(s.path, str(s._col('bob').col.id)), snapshot_path(s)
        s.list(bob)
    shutil.copy(bsnap, asnap)
    with open_store(path) as s:
        assert not mirror_of(s).on_disk and reads(s) == want
        assert [it.id for it in s.list(bob)] == ['b0']


# ---------------------------------------------------------------------------------------------- crashes
CRASH = textwrap.dedent("""
    import json, os, signal, sys
    from jarvis_memory.scope import MemoryScope, MemoryItem, ReadPolicy, Team
    from jarvis_memory.settings import Settings
    from jarvis_memory.embeddings import HashingEmbedder
    from jarvis_memory.store import Filter
    from jarvis_memory.chroma import ChromaStore
    team = Team(policies=[ReadPolicy('main'), ReadPolicy('karen', edm=('self',), pdm=('self', 'main')), ReadPolicy('bob-agent', edm=('self', 'karen'))])
    s = ChromaStore(Settings(), HashingEmbedder(64), team, path=sys.argv[1])
    MAIN, KAREN = MemoryScope('alice', 'main', 's-main'), MemoryScope('alice', 'karen', 's-karen')
    m = s._mirror(s._col('alice'))
    print('restored' if m.on_disk else 'rebuilt', flush=True)
    op = sys.argv[2]
    if op == 'put': s.put([MemoryItem.new(MAIN, 'turn', f'U: 크래시 직전 {i}\\nA: 네', id=f'crash{i}', created_at=1.7e9 + 9000 + i) for i in range(5)])
    elif op == 'delete': s.delete(MAIN, ['r0', 'r3'])
    elif op == 'patch': s.update_metadata(MAIN, ['r3'], {'superseded_by': 'r0', 'about': 'Caroline'})
    elif op == 'rehearse': s.rehearse(KAREN, ['r1'], 5)
    elif op == 'touch':                                  # deferred touches written (as at 20,000 ids or the next write after 30 s)
        from jarvis_memory.chroma import _flush_all
        s.touch(KAREN, ['r1', 'r4'], 1.7e9 + 4242); _flush_all(s._client, s._shared)
    elif op == 'rewrite': s.put([MemoryItem.new(MAIN, 'turn', '완전히 새로운 내용 Seoul', id='r0', created_at=1.7e9)])
    print('written', flush=True)
    os.kill(os.getpid(), signal.SIGKILL)                 # no close, no finalizer: as a crash or `kill -9`
""")


def crash(path, op):
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(ROOT), os.environ.get('PYTHONPATH', '')])}
    r = subprocess.run([sys.executable, '-c', CRASH, str(path), op], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == -signal.SIGKILL, (r.returncode, r.stdout, r.stderr[-2000:])
    return r.stdout.split()


def changed(s, op) -> bool:
    "Does the store show the write the crashed process made?"
    if op == 'put': return [it.id for it in s.keyword(MAIN, ['크래시'])] == [f'crash{i}' for i in range(4, -1, -1)]
    if op == 'delete': return s.get(MAIN, ['r0', 'r3']) == []
    if op == 'patch': return s.get(MAIN, ['r3'])[0].superseded and 'r3' not in [it.id for it in s.list(MAIN)]
    if op == 'rehearse': return s.get(KAREN, ['r1'])[0].rehearsal == 5
    if op == 'touch': return s.get(KAREN, ['r1'])[0].last_accessed == 1.7e9 + 4242
    if op == 'rewrite': return s.get(MAIN, ['r0'])[0].content == '완전히 새로운 내용 Seoul' and \
                               'r0' in [it.id for it, _ in s.lexical(MAIN, 'Seoul 새로운', k=5)]


@pytest.mark.parametrize('op', ['put', 'delete', 'patch', 'rehearse', 'touch', 'rewrite'])
@pytest.mark.parametrize('lost_unlink', [False, True])
def test_crash_after_a_write_leaves_no_current_looking_snapshot(tmp_path, op, lost_unlink):
    """A process restores the mirror, writes, and is killed (SIGKILL: no close). The next start must see the write:
    the snapshot was removed before the write; and if that removal were lost (the old file put back, as after a
    power cut that loses the directory update), Chroma's write sequence in the stamp still marks it stale."""
    path = tmp_path / 'c'
    with open_store(path) as s:
        fill(s); reads(s); snap = snapshot_path(s)
    old = snap.read_bytes()
    assert crash(path, op) == ['restored', 'written']
    assert not snap.exists()
    if lost_unlink: snap.write_bytes(old)
    with open_store(path) as s:
        m = mirror_of(s)
        assert not m.on_disk                                   # rebuilt from Chroma
        assert changed(s, op), op
        assert_exact(s)
    with open_store(path) as s:                                # and the next start restores the new snapshot
        assert mirror_of(s).on_disk and changed(s, op)


def test_a_crash_before_any_write_keeps_the_snapshot(tmp_path):
    "Reads only, then killed: nothing changed in Chroma, so the snapshot stays current and is used."
    path = tmp_path / 'c'
    with open_store(path) as s: fill(s); want = reads(s)
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(ROOT), os.environ.get('PYTHONPATH', '')])}
    code = CRASH.replace("op = sys.argv[2]", "s.list(MAIN); s.keyword(MAIN, ['서울']); op = sys.argv[2]")
    r = subprocess.run([sys.executable, '-c', code, str(path), 'none'], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == -signal.SIGKILL and r.stdout.split() == ['restored', 'written'], r.stderr[-2000:]
    with open_store(path) as s:
        assert mirror_of(s).on_disk and reads(s) == want


# ---------------------------------------------------------------------------------------------- rights and text
def test_read_clause_applies_to_restored_rows(tmp_path):
    "S-1.6: through a restored mirror each agent reads what Chroma's where clause gives it, and no more."
    path = tmp_path / 'c'
    with open_store(path) as s: fill(s); reads(s)
    with open_store(path) as s, open_store(path, mirror=False) as bare:
        assert mirror_of(s).on_disk
        s.flush()
        for sc, flt in itertools.product((MAIN, KAREN, BOB), READS):
            assert [it.id for it in s.list(sc, filter=flt)] == [it.id for it in bare.list(sc, filter=flt)], (sc, flt)
            assert s.keyword(sc, ['서울', 'tea'], filter=flt) == bare.keyword(sc, ['서울', 'tea'], filter=flt)
            assert {it.id for it, _ in s.lexical(sc, '서울 tea', k=100, filter=flt)} <= {it.id for it in bare.list(sc, filter=flt)}
        karen_turns = {it.id for it in bare.list(KAREN, filter=Filter(layers='edm', agent_ids=['karen']))}
        assert karen_turns and not karen_turns & {it.id for it in s.list(MAIN, filter=Filter(include_superseded=True))}
        assert not karen_turns & {it.id for it, _ in s.lexical(MAIN, 'Seoul 서울 tea 부산 날씨', k=200)}
        assert s.get(MemoryScope('mallory', 'main'), ['r0', 'r1']) == []          # another user: not even a collection


def test_deleted_text_leaves_the_snapshot(tmp_path):
    "Issue 14 finding 8: a forgotten row's text is in no snapshot file once it is deleted; scrub removes every snapshot."
    path = tmp_path / 'c'
    on_disk = lambda: [p.name for p in (path / 'jarvis_mirror').glob('*') if b'QZXW' in p.read_bytes()]
    with open_store(path) as s:
        fill(s); s.put([MemoryItem.new(MAIN, 'turn', 'U: 비밀번호는 QZXW77\nA: 네', id='secret', created_at=T0)])
    assert len(on_disk()) == 1
    with open_store(path) as s:
        assert s.delete(MAIN, ['secret']) == 1
        assert on_disk() == []                                 # removed before the delete reached Chroma
    assert on_disk() == [] and len(list((path / 'jarvis_mirror').glob('*.bin'))) == 1
    with open_store(path) as s:
        s.put([MemoryItem.new(MAIN, 'turn', 'QZXW again', id='s2', created_at=T0)]); s.flush()
        assert len(on_disk()) == 1
        s.delete(MAIN, ['s2']); assert s.scrub()
        assert list((path / 'jarvis_mirror').glob('*')) == []


def vector_files(path) -> list:
    return sorted((path / 'jarvis_mirror').glob('*.vec'))


def test_vectors_file_is_named_again_until_a_vector_changes(tmp_path):
    """The vectors are a file of their own (04_mirror): a session that only reads and touches rewrites the rows' snapshot at
    close but names the same vectors file (not rewritten); a put writes a new one and the old one goes; a delete removes
    it before Chroma sees the delete (no vector of a deleted row stays in a file); dropping the user removes it."""
    path = tmp_path / 'c'
    with open_store(path) as s: fill(s); want = reads(s)
    (v0,) = vector_files(path); ino = v0.stat().st_ino
    with open_store(path) as s:
        assert mirror_of(s).on_disk and reads(s) == want
        s.touch(MAIN, ['r0', 'r3'], T0 + 4444)
        snap = snapshot_path(s)
    assert snap.exists() and vector_files(path) == [v0] and v0.stat().st_ino == ino      # touched rows: the same vectors file
    with open_store(path) as s:
        assert s.get(MAIN, ['r0'])[0].last_accessed == T0 + 4444 and mirror_of(s).vec_saved[1]['file'] == v0.name
        s.put([MemoryItem.new(MAIN, 'turn', '새 벡터 new vector', id='nv', created_at=T0 + 9000)])
        assert vector_files(path) == [v0]                      # (a new row: the old file is still right for the old rows)
    (v1,) = vector_files(path)
    assert v1 != v0
    with open_store(path) as s:
        assert 'nv' in [it.id for it, _ in s.search(MAIN, embedding=EMB.embed_one('새 벡터 new vector', query=True), k=3)]
        gone = np.asarray(s._col(USER).col.get(ids=['r3'], include=['embeddings'])['embeddings'][0], np.float32)
        unit = (gone / np.linalg.norm(gone)).astype('<f4').tobytes()
        assert unit in v1.read_bytes()                         # (the check below can fail)
        s.delete(MAIN, ['r3'])
        assert vector_files(path) == []                        # before the delete reached Chroma
    (v2,) = vector_files(path)
    assert unit not in v2.read_bytes()
    with open_store(path) as s:
        assert s.get(MAIN, ['r3']) == [] and mirror_of(s).on_disk
        assert_exact(s)
        s.drop_user(USER)
        assert vector_files(path) == []


def test_snapshot_parts_made_by_other_code_are_rebuilt(tmp_path, monkeypatch):
    "A snapshot written by other code (another tokenizer or keyword index) keeps its rows but not those parts."
    path = tmp_path / 'c'
    with open_store(path) as s: fill(s); want = reads(s)
    monkeypatch.setattr(M, '_code_stamps', lambda: {'segments': 'other', 'lexical': 'other'})
    with open_store(path) as s:
        m = mirror_of(s)
        assert m.on_disk and m.lex_saved is None and not m.lex_on_disk
        assert reads(s) == want
