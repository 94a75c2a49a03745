"""Does leaving the speakers' names out of the vector leg's query find more evidence? (`19_recall` `query_vector`)

    .venv/bin/python bench/speaker_names.py [--data PATH] [--k 50]

For every question of a benchmark (default LoCoMo-10 through `load_locomo`; `--data` a benchmark JSON such as
data/jarvis_dialogues.json) and every gold line of it, the rank of that line among all lines of its conversation by
the cosine with the question (USE, question in query mode; a line embedded with the line after it, as a turn episode
pairs an utterance with its answer), with the question as asked and without the conversation's speakers' names
(`without_speakers`). Prints per category how many (question, gold line) pairs are among the `k` nearest with a cosine
over the vector floor (`Settings.vector_floor`): what the vector leg can hand to the fusion. Not a test: it prints.
"""
import argparse, collections
import numpy as np
from jarvis_memory.benchmarks import Benchmark
from jarvis_memory.embeddings import get_embedder
from jarvis_memory.locomo import load_locomo
from jarvis_memory.recall import without_speakers
from jarvis_memory.settings import Settings

ap = argparse.ArgumentParser()
ap.add_argument('--data', default=None)
ap.add_argument('--k', type=int, default=50)
a = ap.parse_args()
s = Settings()
emb, floor = get_embedder(s), s.vector_floor
b = Benchmark.from_json(a.data) if a.data else load_locomo()
qs_by = collections.defaultdict(list)
for q in b.questions: qs_by[q.conversation_id].append(q)
out = collections.defaultdict(collections.Counter)
for c in b.conversations:
    ts = c.turns
    idx = {t.id: i for i, t in enumerate(ts)}
    L = np.asarray(emb.embed([f"U: {t.full_text}\nA: {ts[i + 1].full_text if i + 1 < len(ts) else ''}" for i, t in enumerate(ts)]), np.float32)
    names = {t.speaker for t in ts}
    qs = [q for q in qs_by[c.id] if q.evidence]
    for how, texts in (('as asked', [q.question for q in qs]), ('without names', [without_speakers(q.question, names) for q in qs])):
        Q = np.asarray(emb.embed(texts, query=True), np.float32)
        S = Q @ L.T
        for q, row in zip(qs, S):
            top = set(np.argsort(-row)[:a.k].tolist())
            for e in q.evidence:
                if e not in idx: continue
                j = idx[e]
                out[how][b.category_name(q.category)] += 1
                out[how, 'found'][b.category_name(q.category)] += int(j in top and row[j] >= floor)
cats = list(out['as asked'])
print(f"{a.data or 'LoCoMo-10'}: (question, gold line) pairs among the {a.k} nearest lines with cosine >= {floor} ({emb.name})")
print('| query | ' + ' | '.join(cats) + ' | all |')
print('|---|' + '---|' * (len(cats) + 1))
for how in ('as asked', 'without names'):
    f, n = out[how, 'found'], out[how]
    print(f'| {how} | ' + ' | '.join(f'{f[k]} / {n[k]}' for k in cats) + f' | {sum(f.values())} / {sum(n.values())} |')
