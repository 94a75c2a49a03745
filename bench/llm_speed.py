"""Speed of the local GGUF models through a real `llama_cpp.server`, and two real extraction samples (S-7.3).

Run from /work/main (prints figures; asserts nothing):
    .venv/bin/python bench/llm_speed.py smollm2
    .venv/bin/python bench/llm_speed.py qwen2.5-coder-1.5b [--threads 1] [--show-prompt]
Needs llama-cpp-python[server] and the model wheels (see nbs/06_llm.ipynb, "Local models for the server tests").

Speeds are read from llama.cpp's own `llama_perf_context_print` lines in the server log (pure decode and
prompt-eval rates) next to the end-to-end rate seen by the client. On a shared 2-core machine they swing
with whatever else runs: report the load average printed with them.
"""
from __future__ import annotations
import argparse, glob, json, os, re, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / 'tests'), str(ROOT)]
import openai
from servers import llama_server
from jarvis_memory.llm import FACTS_SCHEMA, LLM, LLMError, find_gguf
from jarvis_memory.consolidation import extraction_messages
from jarvis_memory.settings import Settings

# The extraction prompt is consolidation's own (S-7.2/S-7.3), imported, never copied: a copy drifts.
SAMPLES = [['나 다음 달에 부산으로 이사 가. 그리고 땅콩 알레르기 있어.'],
           ['I just adopted a dog named Bori and I work as a nurse.']]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('model', choices=['smollm2', 'qwen2.5-coder-1.5b'])
    ap.add_argument('--threads', type=int, default=None)
    ap.add_argument('--show-prompt', action='store_true')
    a = ap.parse_args()
    before, t0 = set(glob.glob(os.path.join(tempfile.gettempdir(), 'server-*.log'))), time.time()
    with llama_server(find_gguf(a.model), n_threads=a.threads) as base:
        print(f'[{a.model}] server up in {time.time() - t0:.1f} s', flush=True)
        logs = [f for f in glob.glob(os.path.join(tempfile.gettempdir(), 'server-*.log')) if f not in before]
        c = openai.OpenAI(base_url=base + '/v1', api_key='x', max_retries=0, timeout=900)
        c.chat.completions.create(model=a.model, messages=[{'role': 'user', 'content': 'hi'}], max_tokens=4, temperature=0)
        for run in range(3):
            t = time.time()
            r = c.chat.completions.create(model=a.model, max_tokens=128, temperature=0,
                                          messages=[{'role': 'user', 'content': f'Write a long story about robot number {run} and a cat.'}])
            print(f'[{a.model}] end-to-end: {r.usage.completion_tokens} tokens in {time.time() - t:.2f} s '
                  f'= {r.usage.completion_tokens / (time.time() - t):.1f} tok/s', flush=True)
        c.chat.completions.create(model=a.model, max_tokens=1, temperature=0,
                                  messages=[{'role': 'user', 'content': ' '.join(f'Fact {i}: the user likes item {i}.' for i in range(80))}])
        llm = LLM(Settings(), base_url=base + '/v1', model=a.model, cache=False, timeout=900)
        for utts in SAMPLES:
            t = time.time()
            try: out = json.dumps(llm.chat(extraction_messages(utts), schema=FACTS_SCHEMA, max_tokens=300), ensure_ascii=False)
            except LLMError as e: out = f'{type(e).__name__}: {e}'
            print(f'[{a.model}] extraction in {time.time() - t:.1f} s: {utts[0]!r}\n    -> {out}', flush=True)
    text = ''.join(Path(f).read_text(errors='replace') for f in logs if a.model.split('-')[0][:4] in Path(f).read_text(errors='replace'))
    dec = [float(x) for n, x in re.findall(r'\seval time =.*?/\s+(\d+) runs.*?([\d.]+) tokens per second', text) if int(n) >= 100]
    pp = [float(x) for n, x in re.findall(r'prompt eval time =.*?/\s+(\d+) tokens.*?([\d.]+) tokens per second', text) if int(n) >= 300]
    print(f'[{a.model}] threads={a.threads or os.cpu_count()}: llama.cpp decode {dec} tok/s; prompt eval {pp} tok/s; '
          f'load average {os.getloadavg()[0]:.2f}')
    if a.show_prompt:
        for m in extraction_messages(SAMPLES[0]): print(f"--- {m['role']}\n{m['content']}")


if __name__ == '__main__':
    main()
