"""Where the vector pool's cosine floor (`Settings.vector_floor`, S-5.4) sits for an embedder, measured on our own data.

    .venv/bin/python bench/cosine_floor.py [--data data/jarvis_dialogues.json] [--provider use|e5|hashing]

A floor should let through what is related and keep out what is not. Our team-written benchmark gives both
without looking at any public benchmark's answers: a question and a line of *another* conversation are unrelated
by construction; a question and its own gold lines are related. The script prints percentiles of both cosine
distributions (question embedded in query mode without the speakers' names, as the vector leg embeds it
(`recall.query_vector`), lines in passage mode) and the share of gold pairs the floor
keeps out; then where USE's interference cosine (0.6, S-2.5) sits among unrelated line-line pairs, and this
embedder's cosine at that percentile (the rule of `Settings.interference_cosine`). Not a test: it prints, and the note of issue 13 quotes it.
"""
import argparse
import numpy as np
from jarvis_memory.benchmarks import Benchmark
from jarvis_memory.settings import Settings
from jarvis_memory.embeddings import get_embedder
from jarvis_memory.recall import without_speakers

ap = argparse.ArgumentParser()
ap.add_argument('--data', default='data/jarvis_dialogues.json')
ap.add_argument('--provider', default='use')
a = ap.parse_args()
s = Settings(embedding_provider=a.provider)
emb, b = get_embedder(s), Benchmark.from_json(a.data)
lines = [(c.id, t.id, t.text) for c in b.conversations for t in c.turns]
qs = [(q.conversation_id, q.question, set(q.evidence)) for q in b.questions]
unit = lambda m: m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
L = unit(np.asarray(emb.embed([t for _, _, t in lines]), dtype=np.float32))
spk = {c.id: {t.speaker for t in c.turns} for c in b.conversations}
Q = unit(np.asarray(emb.embed([without_speakers(q, spk[cid]) for cid, q, _ in qs], query=True), dtype=np.float32))
S = Q @ L.T
other = np.array([[lc != cid for lc, _, _ in lines] for cid, _, _ in qs])
gold = np.array([[lc == cid and lid in ev for lc, lid, _ in lines] for cid, _, ev in qs])
un, go = S[other], S[gold]
print(f"{a.data}: {len(qs)} questions, {len(lines)} lines, embedder {emb.name}")
print(f"unrelated pairs {un.size}: percentiles 50/90/95/99 = {np.round(np.percentile(un, [50, 90, 95, 99]), 3).tolist()}")
print(f"gold pairs {go.size}: percentiles 10/25/50/75 = {np.round(np.percentile(go, [10, 25, 50, 75]), 3).tolist()}")
print(f"floor {s.vector_floor}: keeps out {np.mean(un < s.vector_floor):.1%} of unrelated pairs and {np.mean(go < s.vector_floor):.1%} of gold pairs")
# The interference cosine (S-2.5) compares two stored texts, so its rule reads line-line pairs of different
# conversations: where USE's 0.6 sits among them, and this embedder's cosine at that same percentile.
cid = np.array([c for c, _, _ in lines])
apart = cid[:, None] != cid[None, :]
use = get_embedder(Settings())                     # the default embedder, whose 0.6 the rule reads
use_L = L if emb.name == use.name else unit(np.asarray(use.embed([t for _, _, t in lines]), dtype=np.float32))
pct = float(np.mean((use_L @ use_L.T)[apart] < 0.6)) * 100
print(f"interference: USE's 0.6 is the {pct:.1f}th percentile of unrelated line-line pairs; {emb.name} there: "
      f"{np.percentile((L @ L.T)[apart], pct):.3f} (setting: {s.interference_cosine})")
