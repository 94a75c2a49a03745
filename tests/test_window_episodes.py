"""Property tests for jarvis_memory.window (S-3) and jarvis_memory.episodes (S-4) on generated input."""
from __future__ import annotations
import re, unicodedata

import pytest
from hypothesis import given, settings as hsettings, strategies as st, HealthCheck

from jarvis_memory.scope import MemoryScope
from jarvis_memory.settings import Settings
from jarvis_memory.window import HistoryError, check_history, split_turns, window, window_turn_numbers
from jarvis_memory.episodes import (TurnRecord, answer_pieces, clean_text, turn_items, stale_piece_ids, piece_id, legacy_turn_ids,
                                    turn_text)

S = MemoryScope('alice', 'main', 's1')
FAST = hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- histories

@st.composite
def histories(draw, pending_last=True):
    "A valid history: turns with tool rounds; the last turn may end with calls still waiting."
    h = [{'role': 'system', 'content': 'sys'}] if draw(st.booleans()) else []
    n = draw(st.integers(0, 8))
    for t in range(1, n + 1):
        h.append({'role': 'user', 'content': draw(st.sampled_from(['질문', 'question', '그거 다시', '']))+f' {t}'})
        rounds = draw(st.integers(0, 3))
        for r in range(rounds):
            k = draw(st.integers(1, 3))
            ids = [f'call_{j}' if draw(st.booleans()) else f't{t}r{r}c{j}' for j in range(k)]
            ids = [f'{cid}_{r}' for cid in ids]          # unique within the turn
            h.append({'role': 'assistant', 'content': None, 'tool_calls': [
                {'id': cid, 'type': 'function', 'function': {'name': draw(st.sampled_from(['web', 'calc', 'mail'])), 'arguments': '{}'}}
                for cid in ids]})
            last = t == n and r == rounds - 1 and pending_last and draw(st.booleans())
            order = draw(st.permutations(ids))
            answered = order[:draw(st.integers(0, len(order)))] if last else order
            h += [{'role': 'tool', 'tool_call_id': cid, 'content': draw(st.sampled_from(['ok', 'Error: x', '맑음']))} for cid in answered]
            if last: return h
        if draw(st.booleans()) or t < n: h.append({'role': 'assistant', 'content': f'answer {t}'})
    return h


@FAST
@given(histories(), st.integers(1, 6))
def test_window_is_a_valid_suffix_of_whole_turns(h, k):
    w = window(h, k)
    check_history(w)                                          # calls and results stay together
    lead = [m for m in h[:next((i for i, m in enumerate(h) if m['role'] != 'system'), len(h))]]
    assert w[:len(lead)] == lead
    rest = w[len(lead):]
    assert rest == h[len(h) - len(rest):] if rest else True   # a suffix of the history
    turns = split_turns(h)
    users = [m for m in rest if m['role'] == 'user']
    assert len(users) == min(k, len(turns))
    assert window_turn_numbers(h, k) == {t.number for t in turns[-k:]}
    if len(turns) > k: assert rest[0]['role'] == 'user'        # the cut is at a turn start


@FAST
@given(histories(pending_last=False), st.data())
def test_dropping_a_past_result_names_the_call(h, data):
    turns = split_turns(h)
    results = [i for i, m in enumerate(h) if m['role'] == 'tool']
    if not results: return
    i = data.draw(st.sampled_from(results))
    cid = h[i]['tool_call_id']
    broken = h[:i] + h[i+1:]
    is_last = i > turns[-1].start
    trailing = all(m['role'] == 'tool' for m in broken[i:])
    if is_last and trailing: check_history(broken)            # the current turn may still wait for it
    else:
        with pytest.raises(HistoryError, match=re.escape(repr(cid))): check_history(broken)


# ---------------------------------------------------------------- pieces

para_text = st.one_of(
    st.text(alphabet='가나다라마바사 .\n', min_size=1, max_size=900),
    st.text(alphabet='abc de.?!\n', min_size=1, max_size=900),
    st.text(alphabet='가', min_size=1, max_size=1500))
answers = st.lists(para_text, min_size=1, max_size=12).map(lambda ps: '\n\n'.join(ps))
configs = st.builds(lambda n, h, m: Settings(turn_chars=n, part_head_chars=h, max_parts=m),
                    st.integers(60, 1500), st.integers(1, 400), st.integers(0, 4))


@FAST
@given(answers, st.text(max_size=500), configs, st.sampled_from(['ko', 'en']))
def test_pieces_fit_and_are_exact_stretches_in_order(answer, utterance, cfg, lang):
    try: a, u = clean_text(answer), clean_text(utterance)
    except Exception: return
    ps = answer_pieces(answer, utterance, cfg, lang)
    assert len(ps) <= cfg.max_parts
    if len(a) <= cfg.turn_chars or cfg.max_parts == 0: assert ps == []; return
    assert ps, "a long answer gets at least one piece"
    prev_end = cfg.turn_chars
    for k, p in enumerate(ps, start=2):
        assert len(p) <= cfg.turn_chars
        label = f'답({k}): ' if lang == 'ko' else f'Answer ({k}): '
        head, sep, body = p.partition('\n' + label)
        assert sep and head.startswith('U: ') and u.startswith(head[3:]) and len(head) - 3 <= cfg.part_head_chars
        start = a.find(body, max(0, prev_end - cfg.turn_chars))
        assert start >= 0, "body is an exact stretch of the answer"
        assert not a[prev_end:start].strip(), "no text lost between the previous part and this piece"
        prev_end = start + len(body)


@FAST
@given(answers, configs)
def test_pieces_are_deterministic_and_stale_ids_complete(answer, cfg):
    try: rec = TurnRecord(S, 3, '질문', answer, at=0)
    except Exception: return
    a, b = turn_items(rec, cfg), turn_items(rec, cfg)
    assert [(i.id, i.content, i.metadata) for i in a] == [(i.id, i.content, i.metadata) for i in b]
    n = len(a) - 1
    assert a[0].metadata['pieces'] == n
    assert {i.id for i in a[1:]} | set(stale_piece_ids(rec, n, cfg)) == ({piece_id(S, 3, k) for k in range(1, cfg.max_parts + 1)}
                                                                     | set(legacy_turn_ids(S, 3, cfg.max_parts)))   # pre-issue-14 ids go too
    assert turn_text(a[0]) == (rec.utterance[:cfg.turn_chars], rec.answer[:cfg.turn_chars])


@FAST
@given(st.text())
def test_clean_text_idempotent_and_clean(t):
    try: c = clean_text(t)
    except Exception:
        assert re.search('[\ud800-\udfff]', t); return
    assert clean_text(c) == c
    assert not any(unicodedata.category(ch) == 'Cc' and ch not in '\n\t' for ch in c)
    assert c == unicodedata.normalize('NFC', c)
