"""Speed and output of fact extraction (consolidation, SPEC S-7.2/S-7.3) on the local GGUF models, through a real
`llama_cpp.server`, with and without schema-constrained decoding.

Run from /work/main (prints figures and the extracted facts; asserts nothing):
    .venv/bin/python bench/extraction_speed.py                       # both models, modes schema and free
    .venv/bin/python bench/extraction_speed.py qwen2.5-coder-1.5b --modes schema free
    .venv/bin/python bench/extraction_speed.py --locomo-sessions 0   # only the hand-written sessions
Needs llama-cpp-python[server] and the model wheels (see nbs/06_llm.ipynb, "Local models for the server tests").

Modes (the prompt is always `jarvis_memory.consolidation.extraction_messages`):
    schema  response_format {'type': 'json_object', 'schema': FACTS_SCHEMA}: llama.cpp compiles the schema into a
            grammar and constrains every sampled token (what `LLM.chat(schema=...)` sends to llama-cpp-python)
    json    response_format {'type': 'json_object'}: a generic JSON grammar, no schema
    free    no response_format: plain decoding of the JSON-only prompt; the answer is validated in the client
Per session the prompt is evaluated once first (max_tokens=1) and timed on its own; llama-cpp-python keeps it, so
each mode's timed call then pays only for decoding, whatever the order of the modes. For each answer: decode time,
completion tokens (the server's usage), whether it passes `FACTS_SCHEMA` (`parse_answer`), and the facts
consolidation would keep (`salvage_facts` + `check_facts`, copies of the prompt example marked).

Sessions: four short hand-written ones (two Korean, one English, one LoCoMo-like English talk extracted `about`
a named speaker) and the two speakers of LoCoMo-10's first `--locomo-sessions` sessions, read at run time from
../shared/data/locomo/locomo10.json (or $LOCOMO10_JSON) — typical LoCoMo size, used for the projection of
272 sessions x 2 speakers = 544 extraction calls. On a shared 2-core machine timings swing with the load:
the load average is printed with them, and so is the server's own CPU time per call (read from /proc), which
depends much less on what else runs: on an idle machine the wall time is about CPU time / threads.
"""
from __future__ import annotations
import argparse, json, os, re, signal, statistics, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / 'tests'), str(ROOT)]
import openai
from servers import llama_server
from jarvis_memory.llm import FACTS_SCHEMA, LLMBadOutput, find_gguf, parse_answer
from jarvis_memory.consolidation import (extraction_messages, salvage_facts, check_facts, ground_fact,
                                         EXTRACTION_MAX_TOKENS)
from jarvis_memory.language import conversation_language

SESSIONS = [
    ('ko-1', None, ['안녕! 나 다음 달에 부산으로 이사 가.', '그리고 나 땅콩 알레르기 있어서 땅콩 들어간 건 못 먹어.',
                    '요즘 회사에서 데이터 분석 일 하고 있어.', '오늘 저녁 뭐 먹지?']),
    ('ko-2', None, ['우리 집 고양이 이름은 나비야. 세 살이야.', '나 매주 토요일 아침에 테니스 쳐.',
                    '내년 봄에 결혼할 예정이야. 준비할 게 너무 많네.']),
    ('en-1', None, ['Hi! I just adopted a dog named Bori.', 'I work as a nurse at Seoul National University Hospital.',
                    "I'm lactose intolerant, so no milk for me.", "What's a good movie for tonight?"]),
    ('en-about', 'Caroline', ['Hey Mel! I went to an LGBTQ support group yesterday and it was so powerful.',
                              "I'm thinking of going into counseling as a career, to help people like me.",
                              "I've been painting a lot lately, mostly sunsets over the lake."]),
]
MODES = {'schema': {'type': 'json_object', 'schema': FACTS_SCHEMA}, 'json': {'type': 'json_object'}, 'free': None}
LOCOMO_SESSIONS = 272


def locomo_sessions(path: Path, n_sessions: int = 1):
    "The first `n_sessions` sessions of the first LoCoMo conversation, one extraction group per speaker."
    conv = json.loads(path.read_text())[0]['conversation']
    out = []
    for k in [f'session_{i}' for i in range(1, n_sessions + 1)]:
        for spk in dict.fromkeys(t['speaker'] for t in conv[k]):
            out.append((f'locomo-{k}-{spk}', spk, [t['text'] for t in conv[k] if t['speaker'] == spk]))
    return out


def server_pid(url: str) -> int | None:
    "Pid of the llama_cpp.server listening on `url`'s port (found by its command line)."
    port = url.rsplit(':', 1)[1].split('/')[0]
    for d in Path('/proc').iterdir():
        if not d.name.isdigit(): continue
        try: cmd = (d / 'cmdline').read_bytes().split(b'\0')
        except OSError: continue
        if b'llama_cpp.server' in cmd and b'--port' in cmd and cmd[cmd.index(b'--port') + 1] == port.encode(): return int(d.name)
    return None


def cpu_seconds(pid: int | None) -> float:
    "User + system CPU seconds used so far by process `pid` (all its threads)."
    if pid is None: return float('nan')
    f = (Path('/proc') / str(pid) / 'stat').read_text().rsplit(')', 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf('SC_CLK_TCK')


def timed(client, pid, **kw):
    t, c0 = time.time(), cpu_seconds(pid)
    r = client.chat.completions.create(**kw)
    return r, time.time() - t, cpu_seconds(pid) - c0


def prefill(client, model, messages, pid=None) -> dict:
    """Evaluate the prompt once (max_tokens=1): llama-cpp-python keeps it and reuses the common prefix, so the timed
    calls that follow pay only for decoding, whatever their order (the prompt is the same in every mode)."""
    r, dt, cpu = timed(client, pid, model=model, messages=messages, temperature=0.0, max_tokens=1)
    return dict(seconds=dt, cpu=cpu, tokens=r.usage.prompt_tokens)


def run(client, model, messages, mode, utterances, lang, pid=None) -> dict:
    kw = dict(model=model, messages=messages, temperature=0.0, max_tokens=EXTRACTION_MAX_TOKENS)
    if MODES[mode] is not None: kw['response_format'] = MODES[mode]
    r, dt, cpu = timed(client, pid, **kw)
    text = r.choices[0].message.content or ''
    try: parse_answer(text, FACTS_SCHEMA); valid = True
    except LLMBadOutput: valid = False
    raw = salvage_facts(text)
    kept, dropped = check_facts(raw) if raw is not None else ([], [])
    copies = [f for f in kept if ground_fact(f, ' '.join(utterances), lang).reason.value == 'example_copy']   # grounding's rule
    return dict(seconds=dt, cpu=cpu, completion=r.usage.completion_tokens, valid=valid, parsed=raw is not None,
                kept=kept, copies=copies, dropped=dropped, finish=r.choices[0].finish_reason, text=text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('models', nargs='*', default=['smollm2', 'qwen2.5-coder-1.5b'])
    ap.add_argument('--modes', nargs='+', default=['schema', 'free'], choices=list(MODES))
    ap.add_argument('--locomo-sessions', type=int, default=2, help='LoCoMo sessions (x2 speakers) to time; 0 = none')
    ap.add_argument('--threads', type=int, default=1, help='llama.cpp threads (1 is robust on a busy machine)')
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))    # a kill still stops the server (the `with` block)
    sessions = list(SESSIONS)
    lp = Path(os.environ.get('LOCOMO10_JSON', ROOT.parent / 'shared' / 'data' / 'locomo' / 'locomo10.json'))
    if a.locomo_sessions:
        if lp.exists(): sessions += locomo_sessions(lp, a.locomo_sessions)
        else: print(f'LoCoMo not found at {lp}; set LOCOMO10_JSON for the projection')
    rows = []
    for model in a.models:
        t0 = time.time()
        with llama_server(find_gguf(model), n_ctx=4096, n_threads=a.threads) as base:
            print(f'\n=== {model}: server up in {time.time() - t0:.1f} s, {a.threads} thread(s)', flush=True)
            c = openai.OpenAI(base_url=base + '/v1', api_key='x', max_retries=0, timeout=1800)
            pid = server_pid(base)
            for name, about, utts in sessions:
                msgs = extraction_messages(utts, about=about)
                lang = conversation_language([{'role': 'user', 'content': u} for u in utts])
                pre = prefill(c, model, msgs, pid)
                print(f"[{model} | prompt | {name}] {pre['tokens']} tokens evaluated in {pre['seconds']:.1f} s wall, "
                      f"{pre['cpu']:.1f} s CPU", flush=True)
                for mode in a.modes:
                    r = run(c, model, msgs, mode, [' '.join(u.split()) for u in utts], lang, pid)
                    rows.append((model, mode, name, pre, r))
                    print(f"[{model} | {mode:6} | {name}] decode {r['completion']} tok in {r['seconds']:.1f} s wall "
                          f"({r['completion'] / r['seconds']:.1f} tok/s), {r['cpu']:.1f} s CPU; schema-valid {r['valid']}, "
                          f"finish {r['finish']}, load {os.getloadavg()[0]:.2f}", flush=True)
                    for f in r['kept']:
                        print(f"      {f['key']}: {f['value']}  ({f['importance']}){'  [copy of the example: dropped]' if f in r['copies'] else ''}")
                    for f, why in r['dropped']: print(f"      dropped ({why}): {f}")
                    if not r['parsed']: print(f"      unparseable answer: {r['text'][:300]!r}")
    print('\n=== summary per extraction call (prompt evaluation + decoding)')
    print(f"{'model':<20} {'mode':<7} {'set':<7} {'n':>2} {'prompt':>7} {'prompt s':>8} {'compl':>6} {'decode s':>8} "
          f"{'tok/s':>6} {'total s':>7} {'CPU s':>6} {'valid':>6} {'facts':>5} {'copies':>6}")
    for model in a.models:
        for mode in a.modes:
            for kind in ('short', 'locomo'):
                rs = [(pre, r) for m, md, n, pre, r in rows if m == model and md == mode and n.startswith('locomo') == (kind == 'locomo')]
                if not rs: continue
                mean = lambda f: statistics.mean(f(p, r) for p, r in rs)
                tot, cpu = mean(lambda p, r: p['seconds'] + r['seconds']), mean(lambda p, r: p['cpu'] + r['cpu'])
                print(f"{model:<20} {mode:<7} {kind:<7} {len(rs):>2} {mean(lambda p, r: p['tokens']):>7.0f} "
                      f"{mean(lambda p, r: p['seconds']):>8.1f} {mean(lambda p, r: r['completion']):>6.0f} "
                      f"{mean(lambda p, r: r['seconds']):>8.1f} {sum(r['completion'] for _, r in rs) / sum(r['seconds'] for _, r in rs):>6.1f} "
                      f"{tot:>7.1f} {cpu:>6.1f} {sum(r['valid'] for _, r in rs):>3}/{len(rs):<2} "
                      f"{sum(len(r['kept']) - len(r['copies']) for _, r in rs):>5} {sum(len(r['copies']) for _, r in rs):>6}")
                if kind == 'locomo':
                    print(f"{'':<20} -> LoCoMo, 272 sessions x 2 speakers = 544 calls: {544 * tot / 3600:.1f} h at this wall "
                          f"time (load {os.getloadavg()[0]:.1f}); {544 * cpu / 3600:.1f} CPU-hours at {a.threads} thread(s)")


if __name__ == '__main__':
    main()
