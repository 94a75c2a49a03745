"""Speed of ChromaStore reads over one user with many rows (not a test; prints figures).

    .venv/bin/python bench/store_list_speed.py [--n 10000] [--server]

Measures put, then list(limit=20) by created_at / importance with a cold and a warm sort-key cache, list of
everything, keyword, count, search, and the naive alternative (pull every row's metadata and sort in Python).
"""
from __future__ import annotations
import argparse, contextlib, sys, tempfile, time
from pathlib import Path

import numpy as np

from jarvis_memory.scope import MemoryScope, MemoryItem, ReadPolicy, Team
from jarvis_memory.settings import Settings
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.store import Filter
from jarvis_memory.chroma import ChromaStore, collection_name

WORDS = '서울 부산 날씨 예산 등산 커피 회의 보고서 여행 운동 budget plan trip meeting report coffee'.split()


def timed(label, f, n=3):
    ts, r = [], None
    for _ in range(n):
        t = time.perf_counter(); r = f(); ts.append(time.perf_counter() - t)
    print(f"  {label:48s} {min(ts) * 1000:8.1f} ms (best of {n})  -> {len(r) if hasattr(r, '__len__') else r}")
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--n', type=int, default=10_000)
    ap.add_argument('--server', action='store_true', help='use a real `chroma run` server instead of embedded')
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    team = Team(policies=[ReadPolicy('main'), ReadPolicy('karen', pdm=('self', 'main'))])
    emb = HashingEmbedder(384)
    agents, sources = ['main', 'karen'], ['turn', 'turn_part', 'thought', 'extracted', 'explicit', 'task_pattern']
    items = []
    for i in range(a.n):
        s = MemoryScope('alice', agents[i % 2], f's{i // 50}')
        words = ' '.join(rng.choice(WORDS, 12))
        items.append(MemoryItem.new(s, sources[i % len(sources)], f'U: {words} #{i}\nA: {words[::-1]}', id=f'm{i}',
                                    created_at=1.7e9 + float(rng.integers(0, 10**7)), importance=float(rng.random()),
                                    metadata={'task_type': ['chat', 'budget', 'travel'][i % 3]}))
    tmp = Path(tempfile.mkdtemp())
    with contextlib.ExitStack() as stack:
        if a.server:
            sys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'tests'))
            from servers import chroma_server
            loc = dict(server_url=stack.enter_context(chroma_server(tmp / 'server')))
        else:
            loc = dict(path=tmp / 'chroma')
        print(f"{a.n} items of one user, {'server' if a.server else 'embedded'}, HashingEmbedder(384)")
        st = ChromaStore(Settings(), emb, team, **loc)
        t = time.perf_counter()
        for s in range(0, a.n, 1000): st.put(items[s:s + 1000])
        print(f"  put {a.n} items in batches of 1000 (incl. embedding)     {time.perf_counter() - t:8.1f} s")
        st.close()
        st = ChromaStore(Settings(), emb, team, **loc)                      # fresh process state: cold sort-key cache
        m = MemoryScope('alice', 'main', 's1')
        timed('list(limit=20) newest, COLD sort-key cache', lambda: st.list(m, limit=20), n=1)
        timed('list(limit=20) newest, warm', lambda: st.list(m, limit=20))
        timed("list(order_by='importance', limit=20), warm", lambda: st.list(m, order_by='importance', limit=20))
        timed("list(limit=20, filter=Filter(layers='edm'))", lambda: st.list(m, limit=20, filter=Filter(layers='edm')))
        timed('list() everything readable (docs + metadata)', lambda: st.list(m), n=1)
        timed("keyword(['서울', '예산'], limit=20)", lambda: st.keyword(m, ['서울', '예산'], limit=20))
        timed("keyword(['#123'])", lambda: st.keyword(m, ['#123']))
        timed('count(scope)', lambda: st.count(m))
        timed("search('서울 날씨 예산', k=20)", lambda: st.search(m, '서울 날씨 예산', k=20))
        col = st._client.get_collection(collection_name('alice'), embedding_function=st._ef())
        def naive():
            r = col.get(include=['metadatas'])
            return sorted(zip(r['ids'], r['metadatas']), key=lambda p: -p[1]['created_at'])[:20]
        timed('naive: get every row\'s metadata, sort in Python', naive, n=1)
        st.close()


if __name__ == '__main__':
    main()
