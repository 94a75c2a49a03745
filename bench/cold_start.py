"""Cold start of an embedded store: open + first `observe` in a fresh process, with the models' load times apart (not a test; prints).

    .venv/bin/python bench/cold_start.py [--items 10000] [--workdir DIR] [--profile] [--repeat 2]

One user's store of N items (LoCoMo dialogue lines as journals, every 10th an explicit fact, as the independent
probe `shared/bench/perf_probe.py` builds it; USE vectors, cached on disk with `embeddings.cached`, or with
`--vectors random` random unit vectors of the same size, which changes nothing the mirror does) is built once
under `--workdir` (kept, so a rerun skips the fill). Then fresh Python processes each measure, in this order:

- `import`: importing `jarvis_memory.service` (numpy, fastcore, ...), then `jarvis_memory.chroma` (which no longer
  imports chromadb: a store opens Chroma on first need, see "Opening without Chroma" in nbs/05_chroma.ipynb);
- `USE load`: `get_embedder(settings)` and one query embedding (the probe's model load);
- `Kiwi load`: the Korean analyser and the English stemmer (`lexical_terms` of one Korean sentence);
- `open` (`ChromaStore(settings)`: Chroma's client) and `open + first observe` (then one `observe`, the query
  vector precomputed), as the
  store finds it on disk: `rebuild` with the mirror snapshot removed, `snapshot` with the one the previous
  process wrote at close (see nbs/04_mirror.ipynb); `chromadb` says whether the store had opened Chroma by then;
- `warm-up`: from the end of that first observe until Chroma is open in the thread its touch started, while the
  main thread runs `observe` back to back; those observes' wall p50 (`during`) against 50 once it is open (`after`):
  the import holds Python's interpreter lock (0 and nothing during when the first observe opened Chroma itself);
- `close`, which writes the deferred touches (opening Chroma if the first observe did not need it).

Import times depend on cached bytecode: uv (which `make install` uses) installs none, Python writes it at a
module's first import unless PYTHONDONTWRITEBYTECODE is set or site-packages is read-only; the run says which.

`--profile` runs the rebuild (and the snapshot start) under cProfile and prints the top functions by cumulative time.
"""
from __future__ import annotations
import argparse, json, os, random, shutil, subprocess, sys, tempfile, time
from dataclasses import replace
from pathlib import Path

import numpy as np

USER = 'perf-user'
_here = Path(__file__).resolve().parent

CHILD = r'''
import json, os, sys, time
t = time.perf_counter(); out = {}
from jarvis_memory.settings import Settings
from jarvis_memory.scope import MemoryScope
from jarvis_memory.service import MemoryService
out['import'] = time.perf_counter() - t
t = time.perf_counter()
from jarvis_memory.chroma import ChromaStore
out['import_chroma'] = time.perf_counter() - t
s = Settings.from_env()
t = time.perf_counter()
from jarvis_memory.embeddings import get_embedder
emb = get_embedder(s); q = emb.embed_one('When did Caroline go to the support group?', query=True)
out['use_load'] = time.perf_counter() - t
t = time.perf_counter()
from jarvis_memory.lexical import lexical_terms
lexical_terms('서울에서 맛집 추천해줘 and some English words')
out['kiwi_load'] = time.perf_counter() - t
prof = os.environ.get('COLD_PROFILE')
if prof:
    import cProfile; pr = cProfile.Profile(); pr.enable()
t = time.perf_counter()
store = ChromaStore(s, emb)
svc = MemoryService(store, s)
out['open'] = time.perf_counter() - t
svc.observe(MemoryScope('perf-user', 'main', 's-cold'), [{'role': 'user', 'content': 'When did Caroline go to the support group?'}],
            query_embedding=q)
out['open_observe'] = time.perf_counter() - t
out['chromadb'] = getattr(store._client, 'made', True)      # Chroma opened by then (True before lazy opening)
if prof:
    pr.disable()
    import pstats; pstats.Stats(pr, stream=sys.stderr).sort_stats('cumulative').print_stats(int(prof))
# observe back to back while Chroma opens in its thread (started by the first observe's touch), then 50 more
qs = ['What did Melanie paint recently?', 'Where did Caroline move from?', 'When is Jon opening his studio?',
      'What does Gina sell online?', 'How many kids does Melanie have?']
qv = [emb.embed_one(x, query=True) for x in qs]
def timed(i):
    c = time.perf_counter()
    svc.observe(MemoryScope('perf-user', 'main', 's-cold'), [{'role': 'user', 'content': qs[i % 5]}], query_embedding=qv[i % 5])
    return time.perf_counter() - c
warming = getattr(store._client, '_warming', None)
during = []
while warming is not None and warming.is_alive(): during.append(timed(len(during)))
out['warm'] = time.perf_counter() - t - out['open_observe']        # from the first observe's end until Chroma was open
after = sorted(timed(i) for i in range(50))
out['during_n'], out['during_p50'] = len(during), sorted(during)[len(during) // 2] if during else 0.0
out['after_p50'] = after[25]
t = time.perf_counter(); svc.close(); out['close'] = time.perf_counter() - t
print(json.dumps(out))
'''


def build(path: Path, n: int, cache_dir: str, vectors: str = 'use'):
    "The probe's store of `n` items (same texts, sources, importances and times), vectors from the cache."
    from jarvis_memory.settings import Settings
    from jarvis_memory.scope import MemoryScope, MemoryItem
    from jarvis_memory.embeddings import UseEmbedder, cached
    from jarvis_memory.chroma import ChromaStore
    rnd = random.Random(7)
    lc = json.load(open(os.environ.get('LOCOMO') or _here.parent.parent / 'shared' / 'data' / 'locomo' / 'locomo10.json'))
    lines = []
    for conv in lc:
        c = conv['conversation']
        for k in sorted(c, key=str):
            if k.startswith('session_') and isinstance(c[k], list):
                lines += [f"{t['speaker']}: {t['text']}" for t in c[k] if t.get('text')]
    sent = lambda i: lines[i % len(lines)] if i < len(lines) else f"{lines[i % len(lines)]} ({i // len(lines)})"
    items = []
    for i in range(n):
        src = 'explicit' if i % 10 == 0 else 'journal'
        content = f"{sent(i).split(':')[0]} {i % 300}: {sent(i).split(': ', 1)[-1]}" if src == 'explicit' else sent(i)
        items.append(MemoryItem.new(MemoryScope(USER, 'main', f's-{i // 20}'), src, content,
                                    importance=round(rnd.random(), 2), created_at=1.6e9 + i * 60))
    emb = UseEmbedder()
    if vectors == 'use': vecs = cached(emb, cache_dir).embed([it.content for it in items])
    else:                                                  # random unit vectors: the same index size, no hour of embedding
        vecs = np.random.default_rng(0).standard_normal((n, emb.dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    with ChromaStore(Settings(path=str(path)), emb) as st:
        for s in range(0, n, 1000):
            st.put([replace(it, embedding=v) for it, v in zip(items[s:s + 1000], vecs[s:s + 1000])])


def child(path: Path, profile: int = 0) -> dict:
    env = dict(os.environ, JARVIS_MEMORY__PATH=str(path), **({'COLD_PROFILE': str(profile)} if profile else {}))
    r = subprocess.run([sys.executable, '-c', CHILD], env=env, capture_output=True, text=True, timeout=1200,
                       cwd=path.parent)                   # not the project root: PYTHONPATH decides which package is measured
    if r.returncode: raise SystemExit(r.stderr[-3000:])
    if profile: print(r.stderr[:12000])
    return json.loads(r.stdout.strip().splitlines()[-1])


def bytecode_note() -> str:
    "Whether chromadb's modules have cached bytecode: without it every fresh process compiles them at import, which"
    "at least doubles the import (2.1-2.3 s against 1.1-1.3 s in `make install`'s venv on a 2-core machine, 2026-12-06)."
    import importlib.util
    spec = importlib.util.find_spec('chromadb')
    if spec is None or spec.origin is None: return 'chromadb is not installed'
    cached = Path(importlib.util.cache_from_source(spec.origin)).exists()
    off = bool(os.environ.get('PYTHONDONTWRITEBYTECODE'))     # what the children inherit (this process's -B they do not)
    return (f"chromadb's bytecode is {'cached' if cached else 'NOT cached: fresh processes compile its modules at import'}"
            + f"; {own_bytecode_note()}" + ('; PYTHONDONTWRITEBYTECODE is set, so none is written' if off else ''))


def own_bytecode_note() -> str:
    "How many of the jarvis_memory modules a cold start imports have bytecode older than their source: in a checkout edited where"
    "PYTHONDONTWRITEBYTECODE is set, each fresh process compiles them again (the service import 0.12 -> 0.22 s here,"
    "2026-12-07: a 10k cold start measured 0.42 s that was 0.23 s once the bytecode was current)."
    import importlib.util
    try: import jarvis_memory.service, jarvis_memory.chroma             # (the modules a cold start imports)
    except ImportError as e: return f'jarvis_memory is not importable: {e}'
    srcs = sorted({Path(m.__file__) for k, m in list(sys.modules.items()) if k.startswith('jarvis_memory.') and getattr(m, '__file__', None)})
    def stale(f):
        c = Path(importlib.util.cache_from_source(str(f)))
        return not c.exists() or c.stat().st_mtime < f.stat().st_mtime
    n = sum(map(stale, srcs))
    return f"jarvis_memory's bytecode is current for all {len(srcs)} modules" if not n else \
           f"jarvis_memory's bytecode is missing or older than the source for {n} of {len(srcs)} modules (compiled at every import)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--items', type=int, default=10000)
    ap.add_argument('--workdir', default=str(Path(tempfile.gettempdir()) / 'jarvis_memory-cold-start'))
    ap.add_argument('--cache-dir', default=str(Path(tempfile.gettempdir()) / 'jarvis_memory-bench-cache'))
    ap.add_argument('--vectors', choices=['use', 'random'], default='use',
                    help="the items' vectors: USE embeddings (cached), or random unit vectors (fast to build at 100k)")
    ap.add_argument('--repeat', type=int, default=2, help='fresh processes per case (the minimum is printed)')
    ap.add_argument('--profile', type=int, default=0, metavar='ROWS', help='cProfile the open + first observe, print ROWS lines')
    args = ap.parse_args()
    base = Path(args.workdir) / f"store-{args.items}{'' if args.vectors == 'use' else '-' + args.vectors}"
    if not (base / 'chroma.sqlite3').exists():
        t = time.perf_counter(); build(base, args.items, args.cache_dir, args.vectors)
        print(f"built {args.items} items in {time.perf_counter() - t:.0f} s at {base}")
    work = Path(args.workdir) / f"run-{base.name}"
    shutil.rmtree(work, ignore_errors=True); shutil.copytree(base, work)
    snap = work / 'jarvis_mirror'
    rows = {}
    for case in ('rebuild', 'snapshot'):
        got = []
        for _ in range(args.repeat):
            if case == 'rebuild': shutil.rmtree(snap, ignore_errors=True)
            got.append(child(work, args.profile if len(got) == 0 else 0))
        rows[case] = {k: (min if k != 'chromadb' else max)(g[k] for g in got) for k in got[0]}
        if case == 'snapshot' and not snap.exists(): rows[case]['note'] = 'no snapshot directory was written'
    shutil.rmtree(work, ignore_errors=True)
    print(f"{args.items} items, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; seconds, min of {args.repeat} fresh processes")
    print(bytecode_note())
    print(f"{'case':>9} {'import':>7} {'chroma':>7} {'USE load':>9} {'Kiwi load':>10} {'open':>6} {'open+1st observe':>17} {'chromadb':>9}"
          f" {'warm-up':>8} {'observes during':>16} {'p50 ms':>7} {'after':>6} {'close':>6}")
    for case, r in rows.items():
        print(f"{case:>9} {r['import']:>7.2f} {r['import_chroma']:>7.2f} {r['use_load']:>9.2f} {r['kiwi_load']:>10.2f} {r['open']:>6.2f} {r['open_observe']:>17.2f} {('yes' if r.get('chromadb') else 'no'):>9}"
              f" {r['warm']:>8.2f} {r['during_n']:>16} {r['during_p50'] * 1000:>7.1f} {r['after_p50'] * 1000:>6.1f} {r['close']:>6.2f}"
              + (f"  ({r['note']})" if 'note' in r else ''))
    print(json.dumps(rows))


if __name__ == '__main__': main()
