"""The recall block a reader sees (issue 12, item 5; S-12.3): grouped by session, dated in words, same items, same budget.

For random rankings — turn episodes of several sessions (named speakers or not, an opening with no user line, a
line with no answer, pieces), facts with and without `about`, core facts, Korean or English — and random budgets,
`arrange` must:
- show a prefix of the ranking chosen by the budget rule on the text the model sees, session headers included: the
  lines fill the budget exactly, unless the next line opens a session whose header would leave no room for it;
- print core facts, then the recall block's facts by rank, then the episodes by session in time order, each session
  headed once, above its first line, by its date in words in the block's language (no ISO dates);
- keep `recall` best first and `blocks()` equal to the lines it shows;
- show a line once in its session: an episode shows only the lines that no line of the same speaker shown above it
  (by rank) in its session holds, and takes no line when none is left.
The old block fails all of these (one ISO date per line, rank order, no headers)."""
from __future__ import annotations
import datetime as _dt, re
from collections import Counter

from hypothesis import given, settings as hsettings, strategies as st, HealthCheck

import jarvis_memory.recall as R
from jarvis_memory.recall import arrange, RECALL_HEADER, CORE_HEADER
from jarvis_memory.scope import MemoryScope, MemoryItem
from jarvis_memory.scoring import Candidate
from jarvis_memory.settings import Settings

NOW = 1_760_000_000.0
DAY = 86400.0
WORDS = {'ko': ('허리', '병원', '예약', '아들', '부산', '이사', '물리치료', '혈압약', '토요일', '제주도'),
         'en': ('pottery', 'Lisbon', 'flight', 'sister', 'charity', 'race', 'passport', 'dentist', 'Saturday', 'cello')}
MONTHS = ('January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November',
          'December')
NAMES = (None, ('Caroline', 'Melanie'), ('Melanie', 'Caroline'))
HEADER = {'en': re.compile(r'On \d{1,2} (January|February|March|April|May|June|July|August|September|October|November|December) \d{4}:'),
          'ko': re.compile(r'\d{4}년 \d{1,2}월 \d{1,2}일:')}
SETTINGS = Settings()


@st.composite
def rankings(draw):
    "(candidates with distinct relevances, core facts, budget, the language the words were drawn from)."
    lang = draw(st.sampled_from(('ko', 'en')))
    text = lambda lo=1, hi=6: ' '.join(draw(st.lists(st.sampled_from(WORDS[lang]), min_size=lo, max_size=hi)))
    items, n = [], 0
    for s in range(draw(st.integers(1, 4))):
        sc = MemoryScope('u', 'main', f's{s}')
        start = NOW - draw(st.integers(1, 400)) * DAY + draw(st.integers(0, 86399))
        names = draw(st.sampled_from(NAMES))
        for t in range(draw(st.integers(1, 4))):
            at = start + 600 * t
            kind = draw(st.sampled_from(('turn', 'turn', 'opening', 'unanswered', 'piece')))
            u = '' if kind == 'opening' else text()
            a = '' if kind == 'unanswered' else text()
            meta = {'turn': t}
            if names: meta |= {'speaker': names[0], 'answer_speaker': names[1]}
            if kind == 'piece':
                label = '답(2):' if lang == 'ko' else 'Answer (2):'
                it = MemoryItem.new(sc, 'turn_part', f'U: {u}\n{label} {a}', id=f'p{n}', created_at=at, metadata={**meta, 'piece': 1})
            else:
                it = MemoryItem.new(sc, 'turn', f'U: {u}\nA: {a}', id=f't{n}', created_at=at, metadata={**meta, 'utterance_chars': len(u)})
            items.append(it); n += 1
    for f in range(draw(st.integers(0, 4))):
        about = draw(st.sampled_from((None, 'Caroline')))
        items.append(MemoryItem.new(MemoryScope('u', 'main', 's0'), 'extracted', f'topic{f}: {text(1, 3)}', id=f'f{f}',
                                    created_at=NOW - draw(st.integers(1, 400)) * DAY, metadata={'about': about} if about else {}))
    core = [MemoryItem.new(MemoryScope('u', 'main'), 'explicit', f'core{c}: {text(1, 2)}', id=f'c{c}', created_at=NOW - c * DAY)
            for c in range(draw(st.integers(0, 2)))]
    rel = draw(st.permutations(range(len(items))))
    cands = [Candidate(it, 0.2 + 0.7 * r / max(1, len(items)), 0.0) for it, r in zip(items, rel)]
    budget = draw(st.one_of(st.none(), st.integers(20, 1500)))
    return cands, core, budget, lang, draw(st.integers(0, 10**6))


def day(t: float, lang: str) -> str:
    "The date as the gold answers write it (this test's own reading of 'in words')."
    d = _dt.datetime.fromtimestamp(t, _dt.timezone.utc)
    return f"{d.year}년 {d.month}월 {d.day}일" if lang == 'ko' else f"{d.day} {MONTHS[d.month - 1]} {d.year}"


def key(item):
    "The session (and UTC day) an episode is shown under; None for a fact."
    return None if item.kind == 'semantic' else (item.session_id or '', day(item.created_at, 'en'))


def when(ln): return (ln.item.created_at, ln.item.metadata.get('turn', 0), ln.item.metadata.get('piece', 0), ln.item.id)


def expected_lines(res, lang) -> list[tuple[str, str]]:
    "(item id, line body) of the whole ranking by this test's reading: core facts, then each ranked memory; an episode with the lines that no line of the same speaker shown above it in its session holds (the same text or a longer one), none when nothing is left."
    told, out = {}, [(it.id, R.block_line(it, lang)) for it in res.core]
    for s in res.ranked:
        it = s.item
        if key(it) is None: out.append((it.id, R.block_line(it, lang))); continue
        seen, kept = told.setdefault(key(it), []), []
        for w, t in R.said(it, lang):
            who, norm = re.sub(r' \(\d+\)$', '', w), ' '.join(t.split())
            if not any(who == w2 and norm in t2 for w2, t2 in seen): seen.append((who, norm)); kept.append((w, t))
        if kept: out.append((it.id, R.episode_line(kept)))
    return out


def test_block_shows_the_budgeted_prefix_by_session():
    stats = Counter()

    @hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(rankings())
    def run(case):
        check(case, stats)
    run()
    # not vacuous: both languages, several sessions, cut lines and lines a header left out, facts and core facts
    assert all(stats[k] > 0 for k in ('ko', 'en', 'sessions>1', 'cut', 'header-no-room', 'facts', 'core', 'repeated', 'line left out')), dict(stats)


def check(case, stats):
    "The drawn budget, and one that ends inside a session header (that line must not be shown at all)."
    cands, core, budget, lang, pick = case
    full = arrange(cands, NOW, SETTINGS, core=core, k=10**6).all_lines()
    heads = [i for i, ln in enumerate(full) if ln.head and i > 0]
    budgets = [budget]
    if heads:
        i = heads[pick % len(heads)]
        budgets.append(sum(len(ln.text) for ln in full[:i]) + 1 + pick % (len(full[i].head) + 1))
    for b in budgets: check_one(cands, core, b, lang, stats)


def check_one(cands, core, budget, lang, stats):
    res = arrange(cands, NOW, SETTINGS, core=core, k=10**6, budget=budget)
    full, lines = res.all_lines(), res.lines
    rec = [ln for ln in lines if ln.block == 'recall']
    facts = [ln for ln in rec if key(ln.item) is None]
    eps = [ln for ln in rec if key(ln.item) is not None]
    keys = [key(ln.item) for ln in eps]
    starts = [i for i, k in enumerate(keys) if i == 0 or keys[i - 1] != k]
    # the text the model reads: dates in words, one header per session shown, no ISO date
    text = '\n'.join(res.blocks().values())
    assert not re.search(r'\d{4}-\d{2}-\d{2}', text), text
    assert len(starts) == len(set(keys))                        # each session's lines together
    heads = [l for l in text.split('\n') if HEADER[lang].fullmatch(l)]
    assert heads == [(f"{day(eps[i].item.created_at, lang)}:" if lang == 'ko' else f"On {day(eps[i].item.created_at, lang)}:")
                     for i in starts], (heads, text)
    if rec: assert res.blocks()['recall'] == '\n'.join([RECALL_HEADER, *(ln.text for ln in rec)])
    if any(ln.block == 'core' for ln in lines): assert res.blocks()['core'].startswith(CORE_HEADER + '\n- core')
    # printed: core, facts by rank, then sessions in time order, the turns of a session in the order said
    blocks = [ln.block for ln in lines]
    assert blocks == sorted(blocks, key=lambda b: b != 'core')
    assert rec == facts + eps
    rank = {s.id: i for i, s in enumerate(res.ranked)}
    assert [rank[ln.item.id] for ln in facts] == sorted(rank[ln.item.id] for ln in facts)
    assert [when(eps[i]) for i in starts] == sorted(when(eps[i]) for i in starts)
    for i, ln in enumerate(eps):
        grp = [x for x in eps if key(x.item) == keys[i]]
        assert [when(x) for x in grp] == sorted(when(x) for x in grp)
        head = ln.text.split('\n', 1)[0] if i in starts else ''
        assert ln.head == head and (not head or HEADER[lang].fullmatch(head)), (ln.head, head)
    # which memories: a prefix of the ranking, chosen on the text with its headers
    m = len(lines)
    assert sorted(ln.item.id for ln in lines) == sorted(ln.item.id for ln in full[:m])
    assert [s.id for s in res.recall] == [ln.item.id for ln in full[:m] if ln.block == 'recall']
    shown = sum(len(ln.text) for ln in lines)
    total = sum(len(ln.text) for ln in full)
    if budget is None or total <= budget:
        assert m == len(full) and shown == total and not any(ln.cut for ln in lines)
    else:
        nxt = full[m] if m < len(full) else None
        assert shown == budget or (shown < budget and nxt is not None and nxt.head and budget - shown <= len(nxt.head) + 1), \
            (shown, budget, nxt)
        stats['header-no-room'] += shown < budget
        assert sum(ln.cut for ln in lines) <= 1
    # each line is the memory's block line less the lines told above it (cut at most), in the language of the block's words
    assert R.block_language([*core, *(s.item for s in res.ranked)]) == lang
    expected = expected_lines(res, lang)
    assert [i for i, _ in expected] == [ln.item.id for ln in full]
    assert res.repeated == [s.id for s in res.ranked if s.id not in dict(expected)]
    stats['repeated'] += bool(res.repeated)
    for ln in lines:
        body = ln.text[len(ln.head) + 1:] if ln.head else ln.text
        want = dict(expected)[ln.item.id]
        stats['line left out'] += want != R.block_line(ln.item, lang)
        assert body == want or (ln.cut and want.startswith(body) and body), (body, want)
        assert ln.full_chars == len(want) + (len(ln.head) + 1 if ln.head else 0)
    stats[lang] += 1; stats['sessions>1'] += len(starts) > 1; stats['cut'] += any(ln.cut for ln in lines)
    stats['facts'] += bool(facts); stats['core'] += any(ln.block == 'core' for ln in lines)
