"""The `rag` arm's baseline on LoCoMo-10 (SPEC S-12.3): evidence and answer-containment rates per category.

Usage (from the project root):
    .venv/bin/python bench/memtax_rag_baseline.py [--locomo PATH] [--budget 5120] [--embedder use|hashing]
                                                  [--cache-dir DIR] [--out reports/memtax_rag.json]

Reads LoCoMo from ../shared/data/locomo/locomo10.json beside the project unless --locomo is given (download:
https://github.com/snap-research/locomo data/locomo10.json, CC BY-NC 4.0, Maharana et al., ACL 2024). Prints the
load report, the per-category table (all questions, and without the audit's disputed ones) and timings, and
writes the per-question results as JSON (under reports/, which git ignores). With --cache-dir the embeddings
are cached on disk (S-12.4), so a rerun embeds nothing and gives the same numbers.
"""
from __future__ import annotations
import argparse, json, sys, time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))      # run from a source checkout without installing

from jarvis_memory.embeddings import Embedder, HashingEmbedder, UseEmbedder, cached
from jarvis_memory.benchmarks import BenchmarkError
from jarvis_memory.locomo import load_locomo, load_audit
from jarvis_memory.metrics import evaluate, aggregate, format_table, construction_loss, gold_turns
from jarvis_memory.arms import run_arm, rag_chunks, RAG_CHUNK_CHARS
from jarvis_memory.settings import Settings


class Timed(Embedder):
    "Wraps an embedder and adds up the seconds and texts it embeds."
    def __init__(self, inner: Embedder):
        self.inner, self.seconds, self.texts = inner, 0.0, 0
        self.name, self.dim = inner.name, inner.dim
    def _embed(self, texts, query):
        t0 = time.perf_counter()
        v = self.inner.embed(texts, query=query)
        self.seconds += time.perf_counter() - t0
        self.texts += len(texts)
        return v


COLS = ['group', 'n', 'n_evidence', 'all_evidence', 'evidence_recall', 'session_recall', 'answer_hit', 'items', 'chars', 'cut_items']


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--locomo', default=None, help='locomo10.json or its directory (default: ../shared/data/locomo)')
    ap.add_argument('--budget', type=int, default=Settings().budget_chars)
    ap.add_argument('--embedder', choices=['use', 'hashing'], default='use')
    ap.add_argument('--cache-dir', default=None, help='cache embeddings on disk here (S-12.4)')
    ap.add_argument('--out', default=str(ROOT / 'reports' / 'memtax_rag.json'))
    a = ap.parse_args(argv)

    t = {}
    t0 = time.perf_counter()
    try:
        bench = load_locomo(a.locomo)
    except BenchmarkError as e:
        print(e, file=sys.stderr); return 2
    t['load'] = time.perf_counter() - t0
    print(bench.report, '\n')
    try: print(load_audit(bench), '\n')
    except BenchmarkError as e: print('audit not applied:', e, '\n')

    t0 = time.perf_counter()
    chunks = {c.id: rag_chunks(c, RAG_CHUNK_CHARS) for c in bench.conversations}
    t['chunk'] = time.perf_counter() - t0
    n = [len(v) for v in chunks.values()]
    lens = [len(x.text) for v in chunks.values() for x in v]
    print(f"chunks: {sum(n)} ({min(n)}-{max(n)} per conversation), {sum(lens) / len(lens):.0f} characters on average, "
          f"max {max(lens)}, turns per chunk {sum(len(x.turn_ids) for v in chunks.values() for x in v) / sum(n):.1f}")
    loss = construction_loss({k: [x.text for x in v] for k, v in chunks.items()}, gold_turns(bench))
    print(f"construction loss: {loss.lost} of {loss.gold} gold turns\n")

    t0 = time.perf_counter()
    inner = UseEmbedder() if a.embedder == 'use' else HashingEmbedder()
    emb = Timed(cached(inner, a.cache_dir))
    emb.embed(['warm up'])                       # model load is not part of the arm's time
    t['model load'] = time.perf_counter() - t0
    emb.seconds, emb.texts = 0.0, 0

    settings = Settings().replace(budget_chars=a.budget)
    t0 = time.perf_counter()
    shown = run_arm('rag', bench, emb, settings)
    t['rag arm (total)'] = time.perf_counter() - t0
    t['  of which embedding'] = emb.seconds
    t0 = time.perf_counter()
    res = evaluate(bench, shown, 'rag')
    t['metrics'] = time.perf_counter() - t0

    print(f"rag, {emb.name}, budget {a.budget} characters, LoCoMo-10 ({len(res)} questions)\n")
    print(format_table(aggregate(res, bench.categories), COLS), '\n')
    undisputed = [r for r in res if 'disputed' not in r.flags]
    print(f"without the audit's disputed answers ({len(res) - len(undisputed)} dropped):\n")
    print(format_table(aggregate(undisputed, bench.categories), COLS), '\n')
    print('timings (s):', ', '.join(f'{k.strip()} {v:.2f}' for k, v in t.items()), f"| {emb.texts} texts embedded")

    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({'arm': 'rag', 'embedder': emb.name, 'budget': a.budget, 'locomo_sha256': bench.report.sha256,
                               'results': [asdict(r) for r in res]}, ensure_ascii=False), encoding='utf-8')
    print('per-question results:', out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
