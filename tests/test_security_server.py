"""Issue 14, findings 3 and 4 in server mode: two processes, two agents, one `chroma run` server (127.0.0.1).

Each process records 200 turns in the *same* user and session numbers as the other, tries to write the other agent's
next turn id first (refused), and writes 30 same-topic facts against the other. Nothing acknowledged is lost, no
agent blocks the other, and every topic ends with exactly one active fact (S-2.5)."""
from __future__ import annotations
import json, subprocess, sys

import pytest

from jarvis_memory.scope import MemoryScope, Team
from jarvis_memory.settings import Settings
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.store import Filter
from jarvis_memory.chroma import ChromaStore
from servers import chroma_server

pytestmark = pytest.mark.server

WRITER = r"""
import json, sys, time
from jarvis_memory.scope import MemoryScope, ItemError, Team
from jarvis_memory.settings import Settings
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.chroma import ChromaStore
from jarvis_memory.service import MemoryService
from jarvis_memory.episodes import turn_id, TurnRecord
url, me, other, start = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
s = Settings()
svc = MemoryService(ChromaStore(s, HashingEmbedder(64), Team(), server_url=url), s)
while time.time() < start: time.sleep(0.01)          # both processes start writing together
acked, refused, facts = [], 0, []
for n in range(1, 201):
    sc = MemoryScope('shared', me, 's1')
    try:
        svc.write(MemoryScope('shared', me, 's1'), 'turn', 'squat', id=turn_id(MemoryScope('shared', other, 's1'), n + 1))
    except ItemError: refused += 1
    acked += [it.id for it in svc.record(TurnRecord(sc, n, f'{me} 질문 {n}', f'{me} 답 {n}', at=1.7e9 + n))]
for r in range(30):
    facts.append(svc.write_fact(MemoryScope(f'topic-{r}', me), 'explicit', f'거주지: {me} 도시 {r}', at=1.7e9).id)
print(json.dumps({'acked': acked, 'refused': refused, 'facts': facts}), flush=True)
svc.close()
"""


@pytest.fixture(scope='module')
def server_url(tmp_path_factory):
    with chroma_server(tmp_path_factory.mktemp('chroma-security')) as url:
        yield url


def test_two_processes_lose_nothing_and_leave_one_active_fact(server_url):
    import time
    start = time.time() + 8
    procs = {a: subprocess.Popen([sys.executable, '-c', WRITER, server_url, a, b, str(start)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for a, b in (('main', 'karen'), ('karen', 'main'))}
    out = {}
    for a, p in procs.items():
        so, se = p.communicate(timeout=600)
        assert p.returncode == 0, se[-2000:]
        out[a] = json.loads(so.strip().splitlines()[-1])
    with ChromaStore(Settings(), HashingEmbedder(64), Team(), server_url=server_url) as st:
        for a in ('main', 'karen'):
            acked = out[a]['acked']
            assert len(acked) == 200 and out[a]['refused'] == 200                 # every squat refused
            got = st.get(MemoryScope('shared', a), acked)
            assert len(got) == 200 and all(it.agent_id == a for it in got)       # nothing acknowledged lost
            assert st.count(MemoryScope('shared', a), Filter(agent_ids=(a,), sources=('turn',))) == 200
        for r in range(30):
            u = MemoryScope(f'topic-{r}', 'main')
            assert len(st.list(u, filter=Filter(metadata={'topic': '거주지'}))) == 1, r
            assert st.count(u, Filter(include_superseded=True)) == 2
