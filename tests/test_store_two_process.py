"""One embedded Chroma path, two real processes: the second gets `StoreLockedError` at once (naming the path, the
holder's pid and server mode) while the first holds the store, and nothing the first writes is lost."""
from __future__ import annotations
import json, os, signal, subprocess, sys, textwrap, time
from pathlib import Path

import pytest

from jarvis_memory.scope import MemoryScope
from jarvis_memory.settings import Settings
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.store import Filter, StoreLockedError
from jarvis_memory.chroma import ChromaStore

COMMON = """
import json, sys, time
from jarvis_memory.scope import MemoryScope, MemoryItem, Team
from jarvis_memory.settings import Settings
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.store import Filter, StoreLockedError
from jarvis_memory.chroma import ChromaStore
PATH = sys.argv[1]
S = MemoryScope('alice', 'main', 's1')
def items(lo, hi):
    return [MemoryItem.new(S, 'turn', f'U: 질문 {i}\\nA: 답 {i}', id=f'turn-{i}', created_at=1.7e9 + i,
                           metadata={'n': i}) for i in range(lo, hi)]
def say(*a): print(*a, flush=True)
"""

WRITER = COMMON + """
with ChromaStore(Settings(), HashingEmbedder(64), Team(), path=PATH) as st:
    st.put(items(0, 200))
    say('ready', st.count(S))
    assert sys.stdin.readline().strip() == 'go'     # hold the store until the test says go
    for lo in range(200, 500, 50): st.put(items(lo, lo + 50))
    say('done', st.count(S))
"""

INTRUDER = COMMON + """
try:
    st = ChromaStore(Settings(), HashingEmbedder(64), Team(), path=PATH)
except StoreLockedError as e:
    say('locked', json.dumps(str(e))); sys.exit(3)
st.put(items(1000, 1010)); st.close()
say('opened and wrote'); sys.exit(0)
"""

READER = COMMON + """
with ChromaStore(Settings(), HashingEmbedder(64), Team(), path=PATH) as st:
    got = st.list(S, order_by='created_at', descending=False)
    say(json.dumps([[it.id, it.content, it.metadata['n']] for it in got]))
    say(json.dumps([it.id for it, _ in st.search(S, 'U: 질문 123\\nA: 답 123', k=1)]))
"""


def run(code, path, **kw):
    return subprocess.run([sys.executable, '-c', code, str(path)], capture_output=True, text=True, timeout=300, **kw)


def expected(lo, hi): return [[f'turn-{i}', f'U: 질문 {i}\nA: 답 {i}', i] for i in range(lo, hi)]


def test_second_process_is_refused_and_nothing_is_lost(tmp_path):
    path = tmp_path / 'chroma'
    w = subprocess.Popen([sys.executable, '-c', WRITER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert w.stdout.readline().split() == ['ready', '200'], w.stderr.read()
        t = time.time()
        r = run(INTRUDER, path)
        assert r.returncode == 3, (r.stdout, r.stderr)
        assert time.time() - t < 60                                    # refused at once, not after waiting
        msg = json.loads(r.stdout.split('locked ', 1)[1])
        assert str(path.resolve()) in msg and f'pid {w.pid}' in msg and 'chroma run' in msg, msg
        w.stdin.write('go\n'); w.stdin.flush()
        assert w.stdout.readline().split() == ['done', '500']
        assert w.wait(120) == 0, w.stderr.read()
    finally:
        if w.poll() is None: w.kill(); w.wait()
    # after the first process ends, a new process opens the path and reads everything the first wrote
    r = run(READER, path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert json.loads(lines[0]) == expected(0, 500)
    assert json.loads(lines[1]) == ['turn-123']
    # and so does this process
    with ChromaStore(Settings(), HashingEmbedder(64), path=path) as st:
        assert st.count(MemoryScope('alice', 'main')) == 500
        assert st.count(MemoryScope('alice', 'main'), Filter(has_vector=False)) == 0


def test_lock_is_released_when_the_holder_dies(tmp_path):
    "A crashed holder (SIGKILL) leaves a stale pid file but no lock: the next process opens the store."
    path = tmp_path / 'chroma'
    w = subprocess.Popen([sys.executable, '-c', WRITER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert w.stdout.readline().split() == ['ready', '200'], w.stderr.read()
        os.kill(w.pid, signal.SIGKILL)
        w.wait(30)
    finally:
        if w.poll() is None: w.kill(); w.wait()
    r = run(INTRUDER, path)
    assert r.returncode == 0 and 'opened and wrote' in r.stdout, (r.stdout, r.stderr)
    r = run(READER, path)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.splitlines()[0])
    assert got[:200] == expected(0, 200)                               # what the killed process had written survives
    assert [g[0] for g in got[200:]] == [f'turn-{i}' for i in range(1000, 1010)]


def test_same_process_shares_the_lock(tmp_path):
    "Several stores of one process on one path share the lock; it is released when the last one closes."
    path = tmp_path / 'chroma'
    a = ChromaStore(Settings(), HashingEmbedder(64), path=path)
    b = ChromaStore(Settings(), HashingEmbedder(64), path=path)
    a.close()
    assert run(INTRUDER, path).returncode == 3
    b.close()
    r = run(INTRUDER, path)
    assert r.returncode == 0, r.stderr
