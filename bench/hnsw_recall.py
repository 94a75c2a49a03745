"""Recall@k of the store's HNSW settings vs Chroma's defaults (not a test; prints figures).

    .venv/bin/python bench/hnsw_recall.py [--n 10000] [--dim 384] [--queries 200] [--k 20]

Data: n random unit vectors (the hardest case: all cosines near 0), and two query sets: fresh random unit
vectors, and perturbed copies of stored vectors (closer to real recall, where a relevant memory exists).
Exact top-k by numpy; also a filtered search (a `where` that keeps one third of the rows, like a policy clause).
"""
from __future__ import annotations
import argparse, tempfile, time

import chromadb
import numpy as np

from jarvis_memory.chroma import HNSW_CONFIG


def unit(x): return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--n', type=int, default=10_000)
    ap.add_argument('--dim', type=int, default=384)
    ap.add_argument('--queries', type=int, default=200)
    ap.add_argument('--k', type=int, default=20)
    ap.add_argument('--seed', type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    X = unit(rng.standard_normal((a.n, a.dim)))
    ids = [f'v{i}' for i in range(a.n)]
    part = [{'part': i % 3} for i in range(a.n)]
    qsets = {'random': unit(rng.standard_normal((a.queries, a.dim))),
             'near-item': unit(X[rng.integers(0, a.n, a.queries)] + 0.6 * unit(rng.standard_normal((a.queries, a.dim))))}
    client = chromadb.PersistentClient(tempfile.mkdtemp(), settings=chromadb.config.Settings(anonymized_telemetry=False))
    configs = {'chroma defaults': None, 'store HNSW_CONFIG': HNSW_CONFIG}
    print(f"n={a.n} dim={a.dim} queries={a.queries} k={a.k}; store config: {HNSW_CONFIG}")
    results = {}
    for name, cfg in configs.items():
        kw = {} if cfg is None else {'configuration': cfg}
        col = client.create_collection(name.replace(' ', '-').replace('_', '-').lower(), embedding_function=None, **kw)
        t = time.time()
        bs = client.get_max_batch_size()
        for s in range(0, a.n, bs):
            col.add(ids=ids[s:s+bs], embeddings=X[s:s+bs], metadatas=part[s:s+bs])
        t_ins = time.time() - t
        for qname, Q in qsets.items():
            for filt in (None, {'part': 0}):
                mask = np.ones(a.n, bool) if filt is None else np.array([p['part'] == 0 for p in part])
                sims = Q @ X.T
                sims[:, ~mask] = -np.inf
                truth = np.argsort(-sims, axis=1)[:, :a.k]
                t = time.time()
                r = col.query(query_embeddings=Q, n_results=a.k, where=filt, include=[])
                t_q = (time.time() - t) / len(Q) * 1000
                rec = np.mean([len({int(i[1:]) for i in got} & set(tr.tolist())) / a.k for got, tr in zip(r['ids'], truth)])
                results[(name, qname, filt is not None)] = rec
                print(f"{name:18s} insert {t_ins:6.1f}s  queries={qname:9s} filter={'1/3' if filt else 'none':4s}  "
                      f"recall@{a.k} {rec:.3f}  {t_q:6.2f} ms/query")
    print()
    for qname in qsets:
        for f in (False, True):
            d, s = results[('chroma defaults', qname, f)], results[('store HNSW_CONFIG', qname, f)]
            print(f"ratio store/defaults  queries={qname:9s} filter={'1/3' if f else 'none':4s}: {s:.3f} / {d:.3f} = {s / d:.2f}x")


if __name__ == '__main__':
    main()
