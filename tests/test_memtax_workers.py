"""The Memory Tax with its memory arms in worker processes (`run_memtax(workers=2)`, `memtax --workers`) computes what one
process computes: the same blocks shown for every question and arm, the same tables, the same causes of tax.

Runs on two conversations of our own benchmark (data/jarvis_dialogues.json, Korean and English) with the default
offline embedder (USE) and the committed extraction answers; each worker is a fresh interpreter."""
import io
from pathlib import Path

from jarvis_memory.memtax import run_memtax, _workers, _fresh, _job_cost
from jarvis_memory.benchmarks import load_benchmark
from jarvis_memory.arms import ARMS, MemtaxError, arm

import pytest

DATA = Path(__file__).resolve().parent.parent / 'data' / 'jarvis_dialogues.json'


def run(workers):
    buf = io.StringIO()
    res = run_memtax(str(DATA), budget=800, arms='rag,turns+src', conversations=CONVS, out=None, progress=False,
                     stream=buf, workers=workers)
    return res, buf.getvalue()


def first_two():
    from jarvis_memory.benchmarks import Benchmark
    b = Benchmark.from_json(DATA)
    ko = next(c.id for c in b.conversations if c.meta['language'] == 'ko')
    en = next(c.id for c in b.conversations if c.meta['language'] == 'en')
    return f"{ko},{en}"


CONVS = first_two()


def test_two_processes_show_what_one_shows():
    one, out1 = run(1)
    two, out2 = run(2)
    assert 'rag, replay, consolidation and recall summed over 2 processes' in out2 and 'summed over' not in out1   # the workers ran rag too
    assert len(one.common) > 20
    for arm in ('rag', 'turns+src'):
        assert set(one.shown[arm]) == set(two.shown[arm])
        for q, shown in one.shown[arm].items():
            assert [(s.text, s.kind, s.turn_ids, s.source_ids, s.ref) for s in shown] == [(s.text, s.kind, s.turn_ids, s.source_ids, s.ref) for s in two.shown[arm][q]], (arm, q)
    assert one.table == two.table
    assert one.taxes == two.taxes
    assert set(one.extraction) == set(two.extraction) == set(CONVS.split(','))


def test_workers_rule():
    assert _workers(2, 10, None, None, ['turns+src']) == 2
    assert _workers(8, 3, None, None, ['turns+src']) == 3            # never more processes than conversations
    assert _workers(2, 10, object(), None, ['turns+src']) == 1       # a given embedder stays in this process
    assert _workers(2, 10, None, object(), ['turns+src']) == 1       # so does a given LLM
    assert _workers(2, 10, None, None, ['my-arm']) == 1              # an arm registered here is unknown to a new process
    assert 1 <= _workers(0, 10, None, None, []) <= 4                 # 0: one per CPU, at most 4
    for bad in (-1, 1.5, True, '2'):
        with pytest.raises(MemtaxError, match='workers'): _workers(bad, 10, None, None, [])


def test_job_cost():
    "The pool takes conversations longest first: a job's cost counts its lines and its questions once per memory arm."
    bench, _ = load_benchmark(str(DATA))
    jobs = [(c, bench.questions_for(c.id)) for c in bench.conversations]
    for conv, qs in jobs:
        assert _job_cost((conv, qs), ['raw', 'turns']) == len(conv.turns) + 2 * len(qs)
        assert _job_cost((conv, qs), ['turns+src']) == len(conv.turns) + len(qs)
    costs = sorted(_job_cost(j, ['turns+src']) for j in jobs)
    assert costs[0] < costs[-1]                                       # the benchmark's jobs differ: the order matters


def test_only_package_arms_go_to_workers():
    "A new interpreter imports the package and nothing else: an arm registered here (even one that shadows a package arm) stays here."
    assert _fresh('rag') and _fresh('turns+src')
    assert not _fresh('no-such-arm')
    @arm('my-plain')
    def my_plain(conversation, questions, embedder, settings=None): return {q.id: [] for q in questions}
    try:
        assert not _fresh('my-plain')
        buf = io.StringIO()
        res = run_memtax(str(DATA), budget=800, arms='my-plain,turns+src', conversations=CONVS, out=None,
                         progress=False, stream=buf, workers=2)
        out = buf.getvalue()         # the memory arms in the workers, rag and my-plain in this process
        assert 'replay, consolidation and recall summed over 2 processes' in out and 'rag, replay' not in out
        assert set(res.shown['my-plain']) == set(res.shown['rag']) == set(res.shown['turns+src']) and len(res.common) > 20
    finally:
        ARMS.pop('my-plain')
