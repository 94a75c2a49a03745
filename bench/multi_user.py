"""Many users in one embedded store (issue 15 item 4): open time, cold and warm `observe`, RSS and disk (not a test; prints).

    .venv/bin/python bench/multi_user.py [--shapes 100x1000 1000x100 1000x1000] [--sample 40] [--workdir DIR]

For each shape USERSxITEMS, one embedded Chroma store (a fresh directory) gets USERS users of ITEMS memories each,
then a *new process* (as after a restart) opens it and serves `observe` to randomly chosen users:

- `open`: `ChromaStore(...)` + `MemoryService(...)` (models are loaded before, and reported separately);
- `cold`: the first `observe` of a user in this process (its mirror comes from the snapshot the filling process wrote
  at close, or from Chroma), p50 / p95 over `--sample` random users;
- `warm`: `observe` again for users already served (a different question), p50 / p95;
- RSS of the measuring process after opening and after serving the sample; the store's size on disk.

**How the users are filled (honest note).** Each user's items are a window of ITEMS consecutive items, at a random
offset, of the deterministic 20,000-item stream of bench/recall_latency.py (facts with supersession, turn episodes
with pieces, task patterns, thoughts; Korean and English), re-owned by that user. Users therefore share texts (a
window repeats other users' content), but every user has its own Chroma collection, index and mirror, which is what
this measures. The stream's vectors are embedded once with USE (cached on disk); the fill is one `put` per user.
The query embedding is computed before timing, as in bench/recall_latency.py.
"""
from __future__ import annotations
import argparse, json, os, random, shutil, statistics, subprocess, sys, tempfile, time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from recall_latency import item_stream, histories, pct, timed2, T_END            # noqa: E402

STREAM = 20_000


def rss_mb() -> float:
    for line in Path('/proc/self/status').read_text().splitlines():
        if line.startswith('VmRSS:'): return int(line.split()[1]) / 1024
    return float('nan')


def du_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob('*') if f.is_file()) / 2**20


def setup():
    from jarvis_memory.scope import ReadPolicy, Team
    from jarvis_memory.settings import Settings
    from jarvis_memory.language import query_terms
    from jarvis_memory.embeddings import UseEmbedder
    settings = Settings()
    team = Team(policies=[ReadPolicy('main'), ReadPolicy('karen', pdm=('self', 'main'))])
    query_terms('서울에서 맛집 추천해줘')                       # load Kiwi now, not inside a timed step
    return settings, team, UseEmbedder()


def fill(path: Path, users: int, items: int, cache_dir: str) -> float:
    from jarvis_memory.chroma import ChromaStore
    from jarvis_memory.embeddings import cached
    settings, team, emb = setup()
    stream = item_stream(STREAM, settings)
    vecs = cached(emb, cache_dir).embed([it.content for it in stream])
    r = random.Random(users * 7919 + items)
    t0 = time.perf_counter()
    store = ChromaStore(settings, emb, team, path=path)
    for u in range(users):
        off = r.randrange(0, STREAM - items + 1)
        uid = f"user-{u:05d}"
        store.put([replace(it, user_id=uid, metadata=dict(it.metadata), embedding=vecs[off + j])
                   for j, it in enumerate(stream[off:off + items])])
        if (u + 1) % 100 == 0:                                # bound the filling process's memory (mirrors of every user)
            store.close(); store = ChromaStore(settings, emb, team, path=path)
            print(f"    {u + 1} users filled, {time.perf_counter() - t0:.0f} s", flush=True)
    store.close()
    return time.perf_counter() - t0


def measure(path: Path, users: int, sample: int) -> dict:
    "In a fresh process: open the store, serve `sample` random users cold, then warm; times, RSS."
    t0 = time.perf_counter()
    settings, team, emb = setup()
    from jarvis_memory.scope import MemoryScope, LOAD_SECONDS
    from jarvis_memory.chroma import ChromaStore
    from jarvis_memory.service import MemoryService
    from jarvis_memory.core import previous_exchange
    from jarvis_memory.language import recall_query
    imports = time.perf_counter() - t0
    hs = histories()
    qs = [recall_query(h[-1]['content'], previous_exchange(h, skip_last=True), query_chars=settings.query_chars,
                       min_chars=settings.deixis_min_chars) for h in hs]
    qv = {q: emb.embed_one(q, query=True) for q in qs}
    rss0 = rss_mb()
    t0 = time.perf_counter()
    store = ChromaStore(settings, emb, team, path=path)
    svc = MemoryService(store, settings, clock=lambda: T_END)
    open_s = time.perf_counter() - t0
    rss_open = rss_mb()
    r = random.Random(12345)
    chosen = r.sample(range(users), min(sample, users))
    obs = lambda u, i: svc.observe(MemoryScope(f"user-{u:05d}", 'main', f"live-{u}"), hs[i % len(hs)], now=T_END,
                                   query_embedding=qv[qs[i % len(hs)]])
    cold, cold_cpu, first = [], [], None
    for k, u in enumerate(chosen):
        w, c, o = timed2(lambda: obs(u, k))
        cold.append(w); cold_cpu.append(c)
        if first is None: first = open_s + w
    warm, warm_cpu = [], []
    for rep in range(3):
        for k, u in enumerate(chosen):
            w, c, o = timed2(lambda: obs(u, k + 1 + rep))
            warm.append(w); warm_cpu.append(c)
    rss_end = rss_mb()
    store.close()
    ms = lambda x: 1000 * x
    return dict(imports=imports, models={k: round(v, 2) for k, v in LOAD_SECONDS.items()}, open=open_s, first=first,
                cold50=ms(statistics.median(cold)), cold95=ms(pct(cold, 95)), cold_cpu50=ms(statistics.median(cold_cpu)),
                warm50=ms(statistics.median(warm)), warm95=ms(pct(warm, 95)), warm_cpu50=ms(statistics.median(warm_cpu)),
                rss_base=rss0, rss_open=rss_open, rss_end=rss_end, served=len(chosen))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--shapes', nargs='+', default=['100x1000', '1000x100', '1000x1000'], help='USERSxITEMS per store')
    ap.add_argument('--sample', type=int, default=40, help='random users served cold, then 3 times warm')
    ap.add_argument('--cache-dir', default=str(Path(tempfile.gettempdir()) / 'jarvis_memory-bench-cache'))
    ap.add_argument('--workdir', default=None, help='where the stores go (default: a temporary directory, removed)')
    ap.add_argument('--keep', action='store_true', help='keep the stores (a rerun with the same --workdir measures only)')
    ap.add_argument('--measure', default=None, help=argparse.SUPPRESS)     # internal: PATH:USERS, in a fresh process
    args = ap.parse_args()
    if args.measure:
        p, u = args.measure.rsplit(':', 1)
        print(json.dumps(measure(Path(p), int(u), args.sample))); return
    tmp = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix='jm-multi-'))
    tmp.mkdir(parents=True, exist_ok=True)
    rows = []
    for shape in args.shapes:
        users, items = map(int, shape.lower().split('x'))
        path = tmp / f"store-{users}x{items}"
        fill_s = None
        if not (path / 'chroma.sqlite3').exists():
            print(f"filling {users} users x {items} items ...", flush=True)
            fill_s = fill(path, users, items, args.cache_dir)
        out = subprocess.run([sys.executable, __file__, '--measure', f"{path}:{users}", '--sample', str(args.sample)],
                             capture_output=True, text=True)
        if out.returncode: sys.exit(f"measuring {shape} failed:\n{out.stderr[-3000:]}")
        m = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(dict(users=users, items=items, fill=fill_s, disk=du_mb(path), **m))
        print(f"  {shape}: measured", flush=True)
        if not args.keep: shutil.rmtree(path, ignore_errors=True)
    print(f"\nmodels (loaded once per process, before the store opens): {rows[0]['models']}; load average now "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.sample} random users, cold then 3 x warm")
    print(f"{'users':>6} {'items/u':>7} {'rows':>9} {'disk':>8} {'fill':>7} {'open':>7} {'open+1st':>8} "
          f"{'cold p50':>9} {'cold p95':>9} {'warm p50':>9} {'warm p95':>9} {'warm cpu':>9} {'RSS open':>9} {'RSS end':>8}")
    for r in rows:
        fill_s = '-' if r['fill'] is None else f"{r['fill']:.0f} s"
        print(f"{r['users']:>6} {r['items']:>7} {r['users'] * r['items']:>9,} {r['disk']:>5.0f} MB {fill_s:>7} {r['open']:>5.2f} s"
              f" {r['first']:>6.2f} s {r['cold50']:>6.1f} ms {r['cold95']:>6.1f} ms {r['warm50']:>6.1f} ms {r['warm95']:>6.1f} ms"
              f" {r['warm_cpu50']:>6.1f} ms {r['rss_open']:>6.0f} MB {r['rss_end']:>5.0f} MB")
    print("RSS end - RSS open over the users served is the memory a served user's mirror holds")
    for r in rows:
        print(f"  {r['users']}x{r['items']}: {(r['rss_end'] - r['rss_open']) / r['served']:.2f} MB per served user;"
              f" RSS before opening {r['rss_base']:.0f} MB (models, imports)")
    if not args.workdir: shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()
