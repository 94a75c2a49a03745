"Property tests for the evaluation (S-12.3): the format round trip (benchmarks, nbs/30), the budget cut and answer rules (metrics, nbs/32), the rag chunking rule (arms, nbs/33)."
import tempfile
from pathlib import Path

from hypothesis import given, settings, strategies as st

from jarvis_memory.benchmarks import Benchmark, Conversation, Question, Session, Turn
from jarvis_memory.metrics import answer_parts, contains_answer, fit_budget, normalize_answer
from jarvis_memory.arms import _chunk_text, rag_chunks, turn_line

text = st.text(st.characters(blacklist_categories=('Cs',)), min_size=1, max_size=60).filter(str.strip)
speaker = st.sampled_from(['Ann', 'Bo', '민지'])


@st.composite
def conversations(draw):
    sessions = []
    for n in range(1, draw(st.integers(1, 4)) + 1):
        k = draw(st.integers(1, 8))
        turns = [Turn(f'D{n}:{i}', draw(speaker), draw(text), draw(st.none() | text)) for i in range(1, k + 1)]
        sessions.append(Session(f'S{n}', draw(st.sampled_from(['', 'd', '2:31 pm on 9 June, 2023'])), None, turns))
    return Conversation('c', ['Ann', 'Bo'], sessions)


@settings(max_examples=200, deadline=None)
@given(conversations(), st.integers(1, 300))
def test_rag_chunks_rule(conv, size):
    chunks = rag_chunks(conv, size)
    order = {t.id: (si, ti) for si, s in enumerate(conv.sessions) for ti, t in enumerate(s.turns)}
    # every turn is in some chunk; a chunk is a run of consecutive turns of one session
    assert {i for c in chunks for i in c.turn_ids} == set(order)
    for c in chunks:
        pos = [order[i] for i in c.turn_ids]
        assert len({si for si, _ in pos}) == 1 and f'S{pos[0][0] + 1}' == c.session_id
        assert [ti for _, ti in pos] == list(range(pos[0][1], pos[0][1] + len(pos)))
        assert len(c.text) <= size or len(c.turn_ids) == 1
        turns = {t.id: t for t in conv.turns}
        assert all(turn_line(turns[i]) in c.text for i in c.turn_ids)
    # consecutive chunks of a session: the next starts with the previous last turn exactly when the two fit
    for a, b in zip(chunks, chunks[1:]):
        if a.session_id != b.session_id:
            assert b.turn_ids[0] not in a.turn_ids
            continue
        s = conv.sessions[order[a.turn_ids[-1]][0]]
        turns = {t.id: t for t in s.turns}
        overlap = b.turn_ids[0] == a.turn_ids[-1]
        new = b.turn_ids[1] if overlap else b.turn_ids[0]
        assert order[new][1] == order[a.turn_ids[-1]][1] + 1          # no turn skipped
        fits = len(_chunk_text(s, [turn_line(turns[a.turn_ids[-1]]), turn_line(turns[new])])) <= size
        assert overlap == fits
        # the previous chunk was closed because the new turn did not fit
        assert len(_chunk_text(s, [turn_line(turns[i]) for i in a.turn_ids] + [turn_line(turns[new])])) > size


@settings(max_examples=300, deadline=None)
@given(st.lists(text, max_size=12), st.none() | st.integers(1, 400))
def test_fit_budget(items, budget):
    shown = fit_budget(items, budget)
    whole = ''.join(items)
    got = ''.join(s.text for s in shown)
    assert got == whole[:len(got)]                                   # rank order kept, nothing skipped
    assert len(got) == (len(whole) if budget is None else min(budget, len(whole)))
    assert all(not s.cut for s in shown[:-1])
    if shown and shown[-1].cut: assert budget is not None and len(got) == budget
    assert all(s.full_chars == len(items[i]) for i, s in enumerate(shown))


@settings(max_examples=100, deadline=None)
@given(conversations(), st.lists(st.tuples(text, st.none() | text, st.integers(1, 5)), max_size=5))
def test_round_trip(conv, qs):
    turn_ids = [t.id for t in conv.turns]
    questions = [Question(f'q{i}', 'c', q, a, cat, turn_ids[: i % 3]) for i, (q, a, cat) in enumerate(qs)]
    b = Benchmark('b', [conv], questions, {1: 'multi-hop', 5: 'adversarial'})
    with tempfile.TemporaryDirectory() as d:
        assert Benchmark.from_json(b.to_json(Path(d) / 'b.json')) == b


@given(text)
def test_normalize_idempotent_and_self_contained(s):
    n = normalize_answer(s)
    assert normalize_answer(n) == n
    if n: assert contains_answer(n, n)
    assert all(p == normalize_answer(p) for p in answer_parts(s, 'multi-hop'))
