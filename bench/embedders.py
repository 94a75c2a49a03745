"""USE against multilingual-e5-small (in process, `E5Embedder`): embedding speed, and dense retrieval alone.

    .venv/bin/python bench/embedders.py [--data data/jarvis_dialogues.json] [--conversations N]

Speed: wall time of one query, one 155-character line, one 3,100-character answer, and per text in a batch of
64 (after a warm-up). Retrieval: every line of a conversation ranked by cosine with each question (query mode) and
the share of questions whose every gold line is in the top k, per category and per language (of the question). Nothing of recall takes part: this isolates the embedder. `--data` takes any benchmark `memtax` reads
(default: our own dialogues; LoCoMo with `--data locomo:../shared/data/locomo/locomo10.json`). Not a test: it prints, and
`nbs/02_embeddings.ipynb` quotes it.
"""
import argparse, time
from collections import defaultdict
import numpy as np
from jarvis_memory.benchmarks import load_benchmark
import jarvis_memory.locomo   # registers the LoCoMo format
from jarvis_memory.embeddings import UseEmbedder, E5Embedder
from jarvis_memory.language import text_language

ap = argparse.ArgumentParser()
ap.add_argument('--data', default='data/jarvis_dialogues.json')
ap.add_argument('--conversations', type=int, default=0, help='only the first N conversations (0: all)')
ap.add_argument('--k', default='3,5,10,20', help='cut-offs of the top-k share')
a = ap.parse_args()
bench, _ = load_benchmark(a.data)
convs = bench.conversations[:a.conversations or None]
ks = [int(k) for k in a.k.split(',')]
line = ("Melanie: Wow, Caroline! That's great! I just signed up for a pottery class yesterday. It's like therapy for me, "
        "letting me express myself and get creative.")
for name, emb in (('use', UseEmbedder()), ('e5', E5Embedder())):
    emb.embed(['warm up'])
    def wall(f, n=5):
        t = time.perf_counter()
        for _ in range(n): f()
        return (time.perf_counter() - t) / n * 1000
    q = wall(lambda: emb.embed(['What activities does Melanie partake in?'], query=True))
    p, L = wall(lambda: emb.embed([line])), wall(lambda: emb.embed([(line + ' ') * 20][:1]), 2)
    b = wall(lambda: emb.embed([f'{line} ({i})' for i in range(64)]), 1) / 64
    print(f"{name}: query {q:.1f} ms, {len(line)}-char line {p:.1f} ms, {len(line) * 20}-char answer {L:.0f} ms, batch of 64 {b:.1f} ms per text")
    hits = defaultdict(list)
    for c in convs:
        ids, texts = [t.id for t in c.turns], [t.text for t in c.turns]
        qs = [x for x in bench.questions_for(c.id) if x.evidence]
        if not qs or not texts: continue
        S = emb.embed([x.question for x in qs], query=True) @ emb.embed(texts).T
        for x, s in zip(qs, S):
            rank = {ids[j]: r for r, j in enumerate(np.argsort(-s))}
            ev = [e for e in x.evidence if e in rank]
            if not ev: continue
            worst = max(rank[e] for e in ev)
            for g in ('all', f'category {x.category}', f'lang {text_language(x.question)}'): hits[g].append(worst)
    for g in sorted(hits, key=lambda g: (g != 'all', g)):
        v = hits[g]
        print(f"  {g:12} n {len(v):4}  " + '  '.join(f"all gold in top {k}: {np.mean([r < k for r in v]):.3f}" for k in ks))
