"""Our own Korean/English multi-session benchmark, data/jarvis_dialogues.json (issue 12, item 7; S-12.3).

These tests read the real file: they fail if the data loses a conversation style, a question, a probe, or if a
gold turn id stops naming the user's own line before the point where the question is asked."""
from collections import Counter
from pathlib import Path

import pytest

from jarvis_memory.benchmarks import Benchmark

PATH = Path(__file__).resolve().parent.parent / 'data' / 'jarvis_dialogues.json'
STYLES = ('care-call', 'assistant', 'work')
MIN_CONVS = {('ko', s): 2 for s in STYLES} | {('en', s): 1 for s in STYLES}
MIN_QUESTIONS = {'ko': 80, 'en': 40}
MIN_PROBES = {'ko': 25, 'en': 10}
CATEGORIES = {1, 2, 3, 4, 5}


@pytest.fixture(scope='module')
def bench():
    return Benchmark.from_json(PATH)   # parses and validates the jarvis-benchmark/1 format


def order_of(conv):
    "turn id -> position in the conversation."
    return {t.id: i for i, t in enumerate(conv.turns)}


def lang(b, q): return b.conversation(q.conversation_id).meta['language']


def test_file_is_compact_and_declares_categories(bench):
    assert PATH.stat().st_size < 400_000
    assert set(bench.categories) == CATEGORIES
    assert bench.licence.startswith('Apache-2.0')


def test_conversations_per_language_and_style(bench):
    got = Counter((c.meta['language'], c.meta['style']) for c in bench.conversations)
    for key, n in MIN_CONVS.items():
        assert got[key] >= n, (key, got)
    assert set(got) <= set(MIN_CONVS), got


def test_speakers_meta_and_turn_ids(bench):
    for c in bench.conversations:
        user, agent = c.meta['user'], c.meta['agent']
        assert c.speakers == [user, agent] and user != agent
        for n, s in enumerate(c.sessions, 1):
            assert s.id == f'S{n}'
            for k, t in enumerate(s.turns, 1):
                assert t.id == f'D{n}:{k}', (c.id, t.id)
                assert t.speaker in (user, agent) and t.text.strip(), (c.id, t.id)
        assert any(s.turns[0].speaker == agent for s in c.sessions), f'{c.id}: no session opened by the agent'


def test_sessions_dated_and_increasing(bench):
    for c in bench.conversations:
        assert len(c.sessions) >= 4, c.id
        times = [s.time for s in c.sessions]
        assert all(isinstance(t, int) for t in times), c.id
        assert all(a < b for a, b in zip(times, times[1:])), (c.id, times)
        assert all(s.date.strip() for s in c.sessions)
        for s in c.sessions:
            assert 8 <= len(s.turns) <= 20, (c.id, s.id, len(s.turns))


def test_question_counts_per_language(bench):
    per_lang = Counter(lang(bench, q) for q in bench.questions)
    for l, n in MIN_QUESTIONS.items():
        assert per_lang[l] >= n, per_lang
    for l in MIN_QUESTIONS:
        cats = {q.category for q in bench.questions if lang(bench, q) == l}
        assert cats == CATEGORIES, (l, cats)
    # every conversation is asked about
    assert {q.conversation_id for q in bench.questions} == {c.id for c in bench.conversations}


def test_questions_have_gold(bench):
    for q in bench.questions:
        assert q.category in CATEGORIES, q.id
        assert q.answer and q.answer.strip(), q.id
        assert q.evidence, q.id
        assert q.meta.get('language') == lang(bench, q), q.id


def test_evidence_is_the_users_own_earlier_line(bench):
    for q in bench.questions:
        c = bench.conversation(q.conversation_id)
        turns, pos = c.turn_sessions(), order_of(c)
        for e in q.evidence:
            assert turns[e][1].speaker == c.meta['user'], (q.id, e)
        if 'asked_after' in q.meta:
            a = q.meta['asked_after']
            assert a in pos, (q.id, a)
            assert all(pos[e] < pos[a] for e in q.evidence), (q.id, q.evidence, a)


def probes(b, l=None):
    return [q for q in b.questions if q.meta.get('probe') == 'agent-initiative' and (l is None or lang(b, q) == l)]


def test_probe_counts(bench):
    for l, n in MIN_PROBES.items():
        assert len(probes(bench, l)) >= n, (l, len(probes(bench, l)))
    # category 5 is exactly the probes
    assert {q.id for q in bench.questions if q.category == 5} == {q.id for q in probes(bench)}


def test_every_conversation_has_probes(bench):
    per_conv = Counter(q.conversation_id for q in probes(bench))
    for c in bench.conversations:
        assert per_conv[c.id] >= 3, (c.id, per_conv[c.id])


def test_mid_conversation_questions(bench):
    "Questions asked mid-conversation (not probes) are the user's own line at `asked_after`; each language has some."
    mid = [q for q in bench.questions if 'asked_after' in q.meta and 'probe' not in q.meta]
    for l in MIN_QUESTIONS:
        assert sum(lang(bench, q) == l for q in mid) >= 3, l
    for q in mid:
        c = bench.conversation(q.conversation_id)
        s, t = c.turn_sessions()[q.meta['asked_after']]
        assert t.speaker == c.meta['user'] and t.text == q.question, q.id


def test_probes_follow_the_convention(bench):
    for q in probes(bench):
        c = bench.conversation(q.conversation_id)
        turns, pos = c.turn_sessions(), order_of(c)
        a, g = q.meta['asked_after'], q.meta['agent_line']
        assert a in pos and g in pos, q.id
        (sa, ta), (sg, tg) = turns[a], turns[g]
        # the user's line, then directly the agent's line that refers back, in the same session
        assert ta.speaker == c.meta['user'] and tg.speaker == c.meta['agent'], q.id
        assert pos[g] == pos[a] + 1 and sa.id == sg.id, q.id
        # the query is only what the user just said
        assert q.question == ta.text, q.id
        # the gold is a user line from an earlier session
        session_no = {s.id: i for i, s in enumerate(c.sessions)}
        for e in q.evidence:
            assert session_no[turns[e][0].id] < session_no[sa.id], (q.id, e)


def test_probe_queries_are_often_contentless(bench):
    "Many probes are asked after a short reply ('네', 'ok'): the memory must come from the agent's context, not the query."
    for l in MIN_PROBES:
        short = [q for q in probes(bench, l) if len(q.question) <= 12]
        assert len(short) >= 5, (l, [q.question for q in short])


def test_traps_are_present(bench):
    for l in MIN_QUESTIONS:
        traps = Counter(q.meta.get('trap') for q in bench.questions if lang(bench, q) == l)
        for t in ('negation', 'other-person', 'healed', 'self-correction'):
            assert traps[t] >= 1, (l, t, traps)
