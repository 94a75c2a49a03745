"""Nothing a session holds is dropped (issue 12, item 4; S-4.1).

Real care calls and assistant chats start with the agent (a greeting, a proactive reminder), send two assistant
messages in a row, or end on a user line that gets no answer. Before issue 12 `record_turn` stored none of the
first, only the last of the second, and refused the third. Each case below is written through the production path
(`MemoryService.record_turn`, or the MCP tool), then recalled from a later session and read in the recall block
with who said it. Each test fails on the code before the change (the first two lose the text, the third cannot
store the line at all). The last test guards the benchmark replay, which never dropped a line: it checks every
line of every session of our own benchmark lands in a stored turn of each side."""
from __future__ import annotations
import json
from pathlib import Path

import pytest

from jarvis_memory.benchmarks import Benchmark
from jarvis_memory.chroma import ChromaStore
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.episodes import turn_text
from jarvis_memory.mcp_server import MemoryTools
from jarvis_memory.scope import ItemError, MemoryScope
from jarvis_memory.scoring import Candidate, Exclusion
from jarvis_memory.recall import arrange
from jarvis_memory.service import MemoryService
from jarvis_memory.settings import Settings
from jarvis_memory.store import Filter
import jarvis_memory.memory_arms as ma

T0 = 1_760_000_000.0          # 9 October 2025
DAY = 86400.0
ROOT = Path(__file__).resolve().parent.parent


def U(t): return {'role': 'user', 'content': t}
def A(t): return {'role': 'assistant', 'content': t}


@pytest.fixture
def svc(tmp_path):
    s = Settings(path=str(tmp_path / 'chroma'), team_dir=str(tmp_path / 'team'), cache_dir=str(tmp_path / 'cache'),
                 embedding_provider='hashing')
    service = MemoryService(ChromaStore(s, embedder=HashingEmbedder()), s, clock=lambda: T0)
    yield service
    service.close()


def turns_of(svc, scope):
    "{turn number: (utterance, answer)} of the turn episodes stored in `scope`'s session."
    items = svc.store.list(scope, filter=Filter(sources=('turn',), session_id=scope.session_id), order_by=None)
    return {it.metadata['turn']: turn_text(it) for it in items}


def recall_block(svc, scope, question) -> str:
    "The `[장기 기억]` block `observe` shows for `question`, asked alone in `scope`'s session."
    return svc.observe(scope, [U(question)], now=T0).blocks.get('recall', '')


def test_assistant_first(svc):
    "A call the agent opens with a reminder: the reminder is turn 0, recalled later as the assistant's line."
    call = MemoryScope('grandma', 'care', 'call-1')
    reminder = '어르신, 내일 오후 3시에 정형외과 예약 있으세요. 잊지 마세요.'
    svc.record_turn(call, [A(reminder), U('네'), A('네, 내일 아침에 다시 알려 드릴게요.')], at=T0 - 2 * DAY)
    assert turns_of(svc, call) == {0: ('', reminder), 1: ('네', '네, 내일 아침에 다시 알려 드릴게요.')}
    block = recall_block(svc, call.with_session('call-2'), '정형외과 예약이 몇 시였지?')
    assert f'- 비서: {reminder}' in block, block
    assert '2025년 10월 7일:' in block, block                       # under the day it was said, in the call's language


def test_assistant_first_before_anyone_answers(svc):
    "The harness records the opening as soon as it is said; turn 1 later rewrites it under the same id, never twice."
    s = MemoryScope('minji', 'main', 's1')
    greet = 'Good morning! Your flight to Lisbon leaves at 9:40 tomorrow.'
    first = svc.record_turn(s, [A(greet)], at=T0 - DAY)
    assert [(it.metadata['turn'], turn_text(it)) for it in first] == [(0, ('', greet))]
    again = svc.record_turn(s, [A(greet), U('Thanks, which terminal?'), A('Terminal 1.')], at=T0 - DAY + 60)
    assert [it.metadata['turn'] for it in again] == [1, 0] and again[1].id == first[0].id
    assert set(turns_of(svc, s)) == {0, 1}
    block = recall_block(svc, s.with_session('s2'), 'When does my flight to Lisbon leave?')
    assert f'- Assistant: {greet}' in block, block


def test_two_assistant_messages_in_a_row(svc):
    "An answer followed by a second assistant message before the user speaks again: both stay in the turn."
    s = MemoryScope('minji', 'main', 's1')
    h = [U('내일 일정 알려줘'), A('내일 오전 10시에 팀 회의가 있어요.'), A('참, 오후 4시에 치과 예약도 있어요.')]
    svc.record_turn(s, h, at=T0 - DAY)
    assert turns_of(svc, s) == {1: ('내일 일정 알려줘', '내일 오전 10시에 팀 회의가 있어요.\n\n참, 오후 4시에 치과 예약도 있어요.')}
    block = recall_block(svc, s.with_session('s2'), '팀 회의 몇 시였지?')
    assert '비서: 내일 오전 10시에 팀 회의가 있어요.' in block, block
    # and two in a row at the start of a session: the whole opening is turn 0
    c = MemoryScope('minji', 'main', 's3')
    svc.record_turn(c, [A('안녕하세요!'), A('어제 말씀하신 독감 예방접종은 금요일 오전에 예약했어요.'), U('고마워')], unanswered=True)
    assert turns_of(svc, c)[0] == ('', '안녕하세요!\n\n어제 말씀하신 독감 예방접종은 금요일 오전에 예약했어요.')


def test_user_line_with_no_answer_at_the_end(svc):
    "A call that ends on the user's line: stored as said, recalled as the user's line."
    s = MemoryScope('grandma', 'care', 'call-1')
    h = [A('어르신, 오늘 기분은 어떠세요?'), U('좋아요. 아들이 다음 주 토요일에 온대요')]
    items = svc.record_turn(s, h, at=T0 - DAY, unanswered=True)
    assert [(it.metadata['turn'], it.metadata['outcome']) for it in items] == [(1, 'success'), (0, 'success')]
    assert turns_of(svc, s)[1] == ('좋아요. 아들이 다음 주 토요일에 온대요', '')
    block = recall_block(svc, s.with_session('call-2'), '아들 언제 온다고 했지?')
    # a reply that says more than the question it answers stands alone (`recall.asked`, issue 12)
    assert '- 사용자: 좋아요. 아들이 다음 주 토요일에 온대요' in block, block
    with pytest.raises(ItemError, match='no answer yet'):            # still refused unless the caller says so
        svc.record_turn(s, h, at=T0 - DAY)


def test_mcp_tool_records_each_case(svc):
    "The MCP `record_turn` tool: an empty user_message records an assistant message alone, an empty assistant_message a lone user line."
    t = MemoryTools(svc, 'grandma', 'care', 'call-1')
    t.record_turn('', '어르신, 내일 오후 3시에 정형외과 예약 있으세요.')
    t.record_turn('네 알겠어요', '예약 시간 늦지 않게 챙겨 드릴게요.')
    t.record_turn('', '혈압약도 꼭 드세요.')
    t.record_turn('아들이 다음 주에 온대요', '')
    assert turns_of(svc, t.scope) == {0: ('', '어르신, 내일 오후 3시에 정형외과 예약 있으세요.'),
                                      1: ('네 알겠어요', '예약 시간 늦지 않게 챙겨 드릴게요.\n\n혈압약도 꼭 드세요.'),
                                      2: ('아들이 다음 주에 온대요', '')}


def test_contentless_lone_messages_are_stored_but_never_shown(svc):
    "A greeting alone and a '네' the call ended on say nothing: stored (nothing is lost) but excluded like any contentless turn."
    s = MemoryScope('grandma', 'care', 'call-1')
    h = [A('안녕하세요!'), U('여보세요?'), A('네.'), U('네')]
    svc.record_turn(s, h, at=T0 - DAY, unanswered=True)       # turn 2 ('네', unanswered) ...
    svc.record_turn(s, h[:3], at=T0 - DAY)                     # ... turn 1 and the opening (turn 0)
    assert turns_of(svc, s) == {0: ('', '안녕하세요!'), 1: ('여보세요?', '네.'), 2: ('네', '')}
    stored = svc.store.list(s, filter=Filter(sources=('turn',)), order_by=None)
    assert len(svc.recall_episodes(s, since='2025-10-01')) == 3          # found by the episode filter (S-10)
    res = arrange([Candidate(it, 0.9, 1.0) for it in stored], T0, svc.settings)   # even as perfect hits ...
    assert res.ranked == [] and {res.excluded[it.id] for it in stored} == {Exclusion.CONTENTLESS}   # ... never a slot


def test_opening_in_the_window_is_not_repeated(svc):
    "S-3.3: while the opening is in the window, its episode (turn 0) is left out of the recall block."
    s = MemoryScope('minji', 'main', 's1')
    h = [A('내일 오후 3시 정형외과 예약 잊지 마세요.'), U('정형외과 예약 알려줘서 고마워'), A('천만에요.')]
    opening = [it for it in svc.record_turn(s, h, at=T0 - 60) if it.metadata['turn'] == 0][0]
    o = svc.observe(s, h + [U('정형외과 예약 몇 시야?')], now=T0)
    assert opening.id in {c.id for c in o.candidates}
    assert o.excluded[opening.id] == Exclusion.IN_WINDOW
    assert opening.id not in {x.id for x in o.recall}


@pytest.mark.parametrize('path', ['data/jarvis_dialogues.json', 'data/sample_benchmark.json'])
def test_benchmark_replay_keeps_every_line(path):
    "The benchmark replay (`memory_arms`) stores every line of every session on each side, agent-first sessions included."
    bench = Benchmark.from_json(ROOT / path)
    s = Settings()
    opened_by_other = 0
    for conv in bench.conversations:
        speakers = list(dict.fromkeys([*conv.speakers, *(t.speaker for t in conv.turns)]))
        for sess in conv.sessions:
            for sp in speakers:
                scope = MemoryScope(ma.side_user(conv.id, sp), ma.AGENT, sess.id)
                recs = ma.side_records(sess, sp, 0.0)
                opened_by_other += bool(recs) and not recs[0].utterance
                stored = ' '.join(' '.join(it.content.split()) for r in recs for it in ma._side_items(scope, r, s))
                lost = [t.id for t in sess.turns if ' '.join(t.full_text.split()) not in stored]
                assert lost == [], (conv.id, sess.id, sp, lost)
    assert opened_by_other > 0                                  # the case is in the data: sessions the other side opened
