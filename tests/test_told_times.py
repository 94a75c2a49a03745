"""Recall through a real store reads the times a line tells of (issue 13 item 3; `19_recall` `_timely`): a line is in the
temporal leg when one of its own time expressions, resolved against the day it was said, falls in the question's
range, and a question that asks "when" without naming a time takes the lines that tell of any time. Checked end to end
(`recall.recall` over an embedded Chroma store, both the gathered candidates and the source turns of facts), in Korean
and English; the unit cases are in the notebook."""
from __future__ import annotations
import datetime as _dt, tempfile

import pytest

from jarvis_memory import recall as R
from jarvis_memory.chroma import ChromaStore
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.scope import MemoryScope
from jarvis_memory.service import MemoryService
from jarvis_memory.settings import Settings

UTC = _dt.timezone.utc
at = lambda m, d, h=9: _dt.datetime(2026, m, d, h, tzinfo=UTC).timestamp()     # 1 December 2026 is a Tuesday
ME = MemoryScope('ann', 'main', 's1')

LINES = {   # name: (said at, text)
    'plan_en': (at(12, 1), 'U: I see Dr. Patel next Tuesday.\nA: Noted, Dr. Patel on Tuesday.'),
    'past_en': (at(11, 10), 'U: I saw Dr. Patel last Tuesday.\nA: How did it go with Dr. Patel?'),
    'none_en': (at(12, 3), 'U: Dr. Patel called about the parking.\nA: Dr. Patel, noted.'),
    'busy_en!': (at(12, 4), 'U: Dr. Patel is next door this week, so the week is busy.\nA: Next door, this week: noted.'),   # more query words, newer
    'plan_ko': (at(12, 1, 10), 'U: 다음 주 화요일에 정형외과 가요.\nA: 정형외과 예약 기억할게요.'),
    'past_ko': (at(11, 10, 10), 'U: 지난주 화요일에 정형외과 다녀왔어요.\nA: 정형외과 어떠셨어요?'),
    'none_ko': (at(12, 3, 10), 'U: 정형외과 주차가 불편해요.\nA: 정형외과 주차 말씀이시죠.'),
}


@pytest.fixture(scope='module')
def store():
    s = Settings(path=tempfile.mkdtemp(), embedding_provider='hashing')
    svc = MemoryService(ChromaStore(s, embedder=HashingEmbedder()), s, clock=lambda: at(12, 5))
    ids = {name: svc.write(ME, 'turn', text, at=t).id for name, (t, text) in LINES.items()}
    yield svc.store, s, ids
    svc.store.close()


def timely(store, query: str, lang: str) -> dict:
    st, s, ids = store
    got = R.collect(st, ME, query, s, now=at(12, 5, 12))
    by_id = {c.id: c for c in got.candidates}
    names = [n for n in ids if n.endswith(lang)]
    assert all(ids[n] in by_id for n in names), (query, [n for n in names if ids[n] not in by_id])   # all found by BM25
    return {n: by_id[ids[n]].timely for n in names}


def test_a_line_that_tells_of_the_asked_time_is_timely(store):
    # Saturday 5 December: "next week" is 7-13 December; the plan said on 1 December tells of Tuesday 8 December.
    assert timely(store, 'What do I have with Dr. Patel next week?', 'en') == {'plan_en': True, 'past_en': False, 'none_en': False}
    assert timely(store, '다음 주에 정형외과 일정 있어?', 'ko') == {'plan_ko': True, 'past_ko': False, 'none_ko': False}
    # early November: the visit said on 10 November happened on Tuesday 3 November (said a week later, out of any
    # range of the days it was said in)
    assert timely(store, 'What happened with Dr. Patel on 3 November?', 'en') == {'plan_en': False, 'past_en': True, 'none_en': False}


def test_a_when_question_takes_the_lines_that_tell_a_time(store):
    assert timely(store, 'When do I see Dr. Patel?', 'en') == {'plan_en': True, 'past_en': True, 'none_en': False}
    assert timely(store, '정형외과 언제 가요?', 'ko') == {'plan_ko': True, 'past_ko': True, 'none_ko': False}


def test_a_question_without_time_has_no_temporal_leg(store):
    assert timely(store, 'What about Dr. Patel?', 'en') == {'plan_en': False, 'past_en': False, 'none_en': False}
    assert timely(store, '정형외과 어때요?', 'ko') == {'plan_ko': False, 'past_ko': False, 'none_ko': False}


def test_the_plan_leads_the_block_for_next_week(store, monkeypatch):
    # The newer line shares more of the question's words ("next", "week") but tells of this week: without the times a
    # line tells of, it ranks first.
    st, s, ids = store
    q = dict(query='What do I have with Dr. Patel next week?', settings=s, now=at(12, 5, 12), k=1, budget=None)
    monkeypatch.setattr(R, '_told_times', lambda text, when: ())
    assert [sc.item.id for sc in R.recall(st, ME, **q).ranked] == [ids['busy_en!']]
    monkeypatch.undo()
    assert [sc.item.id for sc in R.recall(st, ME, **q).ranked] == [ids['plan_en']]


def test_the_explorer_reads_the_same_told_times_as_observe():
    # A fact's source turn tells the time ("다음 주 화요일"); the question asks when. The explorer fetches source turns
    # itself (`probe`), and must read them as `collect` does, or its replay ranks them differently from `observe`.
    from jarvis_memory.explorer import probe
    s = Settings(path=tempfile.mkdtemp(), embedding_provider='hashing')
    svc = MemoryService(ChromaStore(s, embedder=HashingEmbedder()), s, clock=lambda: at(12, 5))
    try:
        turn = svc.write(ME, 'turn', 'U: 다음 주 화요일에 정형외과 가요.\nA: 알겠어요.', at=at(12, 1))
        svc.write_fact(ME, 'extracted', '일정: 무릎 진료', metadata={'from_episode': turn.id}, at=at(12, 1, 10))
        q, now = '무릎 진료 언제야?', at(12, 5, 12)
        want = [(c.id, c.timely) for c in R.collect(svc.store, ME, q, s, now=now).sources]
        assert want == [(turn.id, True)]
        assert [(c.id, c.timely) for c in probe(svc, ME, q, now=now).sources] == want
    finally:
        svc.store.close()
