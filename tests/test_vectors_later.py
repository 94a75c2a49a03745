"""A recorded turn's rows (the turn, a long answer's pieces) get their vectors after `record_turn` returns (issue 15, cheap
writes; `put(later=...)`, 05_chroma; `settings.turns_behind`).

Through the production path (`MemoryService.record_turn`): a process killed right after writing a long answer loses
none of its rows' vectors (the next open makes them, and a later session recalls a piece by its words alone), and
agents on several threads that record and recall at once never wait forever and leave no row without a vector.
The notebook's tests drive the store directly (a gated embedder, a rewrite while embedding, close); these drive the
service in a child process that is killed, and under threads."""
from __future__ import annotations
import json, signal, subprocess, sys, threading
from pathlib import Path

from jarvis_memory.chroma import ChromaStore, _vectors_file
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.scope import MemoryScope
from jarvis_memory.service import MemoryService
from jarvis_memory.settings import Settings
from jarvis_memory.store import Filter

T0 = 1_760_000_000.0
ROOT = Path(__file__).resolve().parent.parent
# A 3,000-character answer: the turn row holds its first 1,000 characters, two pieces the rest (S-4.4). The piece
# that holds the hot-air-balloon sentence is the only row with those words.
FILLER = 'We walked along the river and talked about the weekend plans for a long while. '
ANSWER = (FILLER * 16)[:1200] + 'At dawn we flew over Cappadocia in a hot-air balloon with Ahmet the pilot. ' + (FILLER * 24)[:1700]
QUESTION = 'Who piloted the hot-air balloon over Cappadocia?'


def settings(path: Path) -> Settings:
    return Settings(path=str(path / 'chroma'), team_dir=str(path / 'team'), cache_dir=str(path / 'cache'),
                    embedding_provider='hashing')


def open_service(path: Path) -> MemoryService:
    s = settings(path)
    return MemoryService(ChromaStore(s, embedder=HashingEmbedder()), s, clock=lambda: T0)


CHILD = r'''
import os, signal, sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {tests!r})
from test_vectors_later import open_service, ANSWER
from jarvis_memory.chroma import _vectors_file
from jarvis_memory.scope import MemoryScope
from pathlib import Path
svc = open_service(Path({path!r}))
items = svc.record_turn(MemoryScope('ayla', 'main', 'trip'), [{{'role': 'user', 'content': 'How was the trip?'}},
                                                               {{'role': 'assistant', 'content': ANSWER}}], at={t0})
print([it.source for it in items], _vectors_file(svc.store.path).exists(), flush=True)
os.kill(os.getpid(), signal.SIGKILL)            # right after record_turn returned: its rows' vectors not made yet
'''


def test_killed_after_record_turn(tmp_path):
    code = CHILD.format(root=str(ROOT), tests=str(ROOT / 'tests'), path=str(tmp_path), t0=T0)
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300)
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert r.stdout.strip() == "['turn', 'turn_part', 'turn_part'] True", r.stdout + r.stderr
    ids = json.loads(_vectors_file(tmp_path / 'chroma').read_text())['ids']
    assert len(ids) == 3                                            # the turn row and both pieces waited for their vectors
    with ChromaStore(settings(tmp_path), embedder=None, mirror=False) as raw:     # no embedder: nothing is made here
        assert raw.count(MemoryScope('ayla', 'main', 'x'), Filter(has_vector=False)) == 3
    svc = open_service(tmp_path)                                     # the next open makes them
    try:
        later = MemoryScope('ayla', 'main', 'next-week')
        hits = svc.store.search(later, QUESTION, k=3, filter=Filter(sources=('turn_part',)))
        assert any('Cappadocia' in it.content for it, _ in hits), hits
        assert svc.store.count(later, Filter(has_vector=False)) == 0
        assert 'Ahmet' in svc.observe(later, [{'role': 'user', 'content': QUESTION}], now=T0 + 7 * 86400).text
    finally:
        svc.close()
    assert not _vectors_file(tmp_path / 'chroma').exists()


def test_threads_record_and_recall(tmp_path):
    "Four agents' threads record long turns and recall at once: every call returns, and every row ends with a vector."
    svc = open_service(tmp_path)
    errors, done = [], []

    def agent(n: int):
        try:
            scope, h = MemoryScope(f'user-{n}', 'main', 's1'), []
            for j in range(6):
                h += [{'role': 'user', 'content': f'Tell me about day {j}'}, {'role': 'assistant', 'content': f'Day {j}. ' + ANSWER}]
                svc.record_turn(scope, h, at=T0 + j)
                svc.observe(MemoryScope(f'user-{n}', 'main', 's2'), [{'role': 'user', 'content': QUESTION}], now=T0 + 60)
            done.append(n)
        except Exception as e: errors.append(e)

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(4)]
    for t in threads: t.start()
    for t in threads: t.join(timeout=240)
    try:
        assert not any(t.is_alive() for t in threads), "a thread never returned"
        assert not errors, errors
        assert sorted(done) == [0, 1, 2, 3]
        for n in range(4):
            sc = MemoryScope(f'user-{n}', 'main', 'x')
            assert svc.store.count(sc, Filter(sources=('turn_part',))) == 12
            assert svc.store.count(sc, Filter(has_vector=False)) == 0
    finally:
        svc.close()
    assert not _vectors_file(tmp_path / 'chroma').exists()
