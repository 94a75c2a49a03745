"""Warm `observe` on the independent probe's store in one process: CPU p50 per pass, the rows validated after the restart, and an optional cProfile (not a test; prints).

    .venv/bin/python bench/warm_observe.py [--items 10000] [--workdir DIR] [--passes 3] [--profile tottime|cumulative]

The store is the one `bench/cold_start.py` builds and keeps under `--workdir` (the probe's LoCoMo lines as one
user's memories, every 10th an explicit fact, USE vectors cached on disk). This process reopens it, as after a
restart, embeds 100 LoCoMo questions (shuffled as the probe shuffles them) before any clock starts, then times
`MemoryService.observe` with the query vector given over those questions, `--passes` times: process CPU time, p50 of
each pass. The first pass meets most rows for the first time; the count of `MemoryItem`s it validated says how many
rows the mirror had to check again after the restart (`valid`, kept in the snapshot: nbs/04_mirror.ipynb).
`--profile` runs one more pass under cProfile and prints its top 35 functions. For an A/B, run it on two checkouts
in turn (`git stash`), alternating: the figures move ±10% between runs on a shared 2-core machine.
"""
from __future__ import annotations
import argparse, cProfile, importlib.util, json, os, pstats, random, statistics, tempfile, time
from pathlib import Path

_here = Path(__file__).resolve().parent


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--items', type=int, default=10000)
    ap.add_argument('--workdir', default=str(Path(tempfile.gettempdir()) / 'jarvis_memory-cold-start'))
    ap.add_argument('--cache-dir', default=str(Path(tempfile.gettempdir()) / 'jarvis_memory-bench-cache'))
    ap.add_argument('--passes', type=int, default=3)
    ap.add_argument('--profile', choices=('tottime', 'cumulative'), default=None)
    a = ap.parse_args()
    spec = importlib.util.spec_from_file_location('cold_start', _here / 'cold_start.py')
    cold = importlib.util.module_from_spec(spec); spec.loader.exec_module(cold)
    path = Path(a.workdir) / f'store-{a.items}-use'
    if not path.exists():
        t = time.perf_counter(); cold.build(path, a.items, a.cache_dir, 'use')
        print(f"built {path} in {time.perf_counter() - t:.0f} s")

    from jarvis_memory.settings import Settings
    from jarvis_memory.scope import MemoryScope, MemoryItem
    from jarvis_memory.service import MemoryService
    lc = json.load(open(os.environ.get('LOCOMO') or _here.parent.parent / 'shared' / 'data' / 'locomo' / 'locomo10.json'))
    questions = [q['question'] for conv in lc for q in conv['qa']]
    random.Random(7).shuffle(questions)
    questions = questions[:100]
    svc = MemoryService.open(Settings.from_env(path=str(path)))
    try:
        vecs = [svc.query_vector(q) for q in questions]
        scope, now = MemoryScope(cold.USER, 'main', 's-warm'), 1.6e9 + a.items * 60 + 3600
        checked, post_init = [0], MemoryItem.__post_init__
        def counting(self): checked[0] += 1; return post_init(self)
        MemoryItem.__post_init__ = counting                 # items validated in full (not the mirror's trusted rows)
        def one_pass() -> float:
            cpu = []
            for q, v in zip(questions, vecs):
                c = time.process_time()
                svc.observe(scope, [{'role': 'user', 'content': q}], now=now, query_embedding=v)
                cpu.append(time.process_time() - c)
            return statistics.median(cpu) * 1000
        try:
            p50s = [one_pass()]
            first = checked[0]
            p50s += [one_pass() for _ in range(a.passes - 1)]
        finally: MemoryItem.__post_init__ = post_init
        print(f"{a.items} items: observe CPU p50 by pass " + ' / '.join(f"{x:.2f}" for x in p50s) + " ms; "
              f"items validated in the first pass (100 observes after the restart): {first}")
        if a.profile:
            pr = cProfile.Profile(); pr.enable(); one_pass(); pr.disable()
            pstats.Stats(pr).sort_stats(a.profile).print_stats(35)
    finally:
        svc.close()


if __name__ == '__main__':
    main()
