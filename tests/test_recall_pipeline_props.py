"""One recall pipeline (issue 11, item 2): the Memory Tax `turns+src` arm shows exactly what `observe` shows.

For random stores (turn episodes with pieces, extracted facts pointing to turns, superseded facts, thought logs,
important old facts for the flashbulb slot) and random questions, the arm's lines under a budget — text, cut and
item, in order — equal the lines of `observe` with the same settings (`arm_settings`), no cap `k` and the same
budget, for a question asked alone in a new session. `test_the_property_can_fail` breaks one step of the arm at a
time (a cap on `k`, no source turns, another pool size) and shows the comparison catches each."""
from __future__ import annotations
import random, tempfile
from collections import Counter

import pytest
from hypothesis import given, settings as hsettings, strategies as st, HealthCheck

import jarvis_memory.memory_arms as ma
from jarvis_memory.benchmarks import Conversation, Question
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.scope import MemoryScope
from jarvis_memory.service import MemoryService
from jarvis_memory.settings import Settings
from jarvis_memory.chroma import ChromaStore

T0 = 1_760_000_000.0
DAY = 86400.0
WORDS = ('서울', '부산', '이사', '땅콩', '알레르기', '여행', '제주도', '여권', 'budget', 'peanuts', 'trip', 'Lisbon', 'pottery', '회의')
EMB = HashingEmbedder()


def build(seed: int, n_turns: int, n_facts: int, budget: int, pool: int):
    "A random store for one user (side 'Ann'), and the `ConversationMemory` the arms read it through."
    rng = random.Random(seed)
    s = Settings(path=tempfile.mkdtemp(), embedding_provider='hashing', budget_chars=budget, pool_size=pool)
    svc = MemoryService(ChromaStore(s, embedder=EMB), s, clock=lambda: T0)
    ann, raw = MemoryScope('conv-ann', 'memtax'), MemoryScope('conv-ann-raw', 'memtax')
    words = lambda k: ' '.join(rng.choice(WORDS) for _ in range(k))
    turns, hist = [], {}
    for i in range(n_turns):
        sid = f's{i % 4}'
        h = hist.setdefault(sid, [])
        long = rng.random() < 0.2
        answer = ('\n\n'.join(f'{j}. ' + words(30) for j in range(8)) if long else words(rng.randint(1, 6)))
        h += [{'role': 'user', 'content': words(rng.randint(1, 5))}, {'role': 'assistant', 'content': answer}]
        turns.append(svc.record_turn(ann.with_session(sid), h, at=T0 - rng.uniform(0, 300) * DAY)[0])
    for i in range(n_facts):
        src = rng.choice(turns) if turns else None
        meta = {'from_episode': src.id} if src is not None and rng.random() < 0.8 else {}
        topic = rng.choice(('거주지', 'allergy', 'trip', f'topic{i}'))          # shared topics supersede each other
        svc.write_fact(ann.with_session('s0'), 'extracted', f'{topic}: {words(rng.randint(1, 4))}',
                       importance=rng.choice((0.5, 0.6, 0.8, 0.9)), metadata=meta, at=T0 - rng.uniform(0, 400) * DAY)
    if rng.random() < 0.5: svc.write_thought(ann.with_session('s1'), words(4), at=T0 - DAY)
    conv = Conversation('conv', ['Ann'], [])
    mem = ma.ConversationMemory(conv, svc, [ma.Side('Ann', ann, raw)], T0, families=('turns',))
    return mem, svc, ann, rng


def compare(mem, svc, ann, questions, pool: int, arm_settings=ma.arm_settings, no_cap=ma.NO_CAP, stats=None) -> list:
    "Questions whose arm lines differ from observe's (observe with `arm_settings` and no cap), with both."
    got = ma.recall_questions(mem, questions, svc.settings, ('turns+src',), pool)['turns+src']
    s = arm_settings(svc.settings, 'turns+src', pool)
    obs_svc = MemoryService(svc.store, s, clock=lambda: T0)
    out = []
    for q in questions:
        o = obs_svc.observe(ann.with_session('question'), [{'role': 'user', 'content': q.question}], now=mem.now,
                            k=no_cap, budget=s.budget_chars)
        arm = [(x.ref, x.text, x.cut) for x in got[q.id].shown]
        seen = [(ln.item.id, ln.text, ln.cut) for ln in o.result.lines]
        if arm != seen: out.append((q.question, arm, seen))
        if stats is not None:
            stats['lines'] += len(seen); stats['cut'] += any(c for _, _, c in seen)
            stats['source_turns'] += sum(1 for ln in o.result.lines if getattr(ln.score, 'source_of', ()))
            stats['core'] += sum(1 for ln in o.result.lines if ln.block == 'core')
    return out


def questions_for(rng, n=4) -> list[Question]:
    return [Question(f'q{i}', 'conv', ' '.join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) + '?', None, 1)
            for i in range(n)]


def test_turns_src_arm_shows_what_observe_shows():
    stats = Counter()

    @hsettings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(seed=st.integers(0, 10**6), n_turns=st.integers(0, 14), n_facts=st.integers(0, 10),
           budget=st.sampled_from([150, 600, 2000, 5120]), pool=st.sampled_from([3, 6, 20]))
    def run(seed, n_turns, n_facts, budget, pool):
        mem, svc, ann, rng = build(seed, n_turns, n_facts, budget, pool)
        try:
            diff = compare(mem, svc, ann, questions_for(rng), pool, stats=stats)
            assert diff == [], diff[0]
        finally:
            svc.close()
    run()
    # not vacuous: lines were compared, some cut by the budget, some source turns and core facts among them
    assert all(stats[k] > 0 for k in ('lines', 'cut', 'source_turns', 'core')), dict(stats)


@pytest.mark.parametrize('broken', ['cap_k', 'no_sources', 'other_pool'])
def test_the_property_can_fail(monkeypatch, broken):
    "Break one step of the arm (observe keeps the real settings and no cap); on a few fixed random stores the comparison notices."
    real_collect, real_settings, real_cap = ma.collect, ma.arm_settings, ma.NO_CAP
    found = 0
    with monkeypatch.context() as m:
        if broken == 'cap_k': m.setattr(ma, 'NO_CAP', 2)
        elif broken == 'no_sources': m.setattr(ma, 'collect', lambda *a, **kw: real_collect(*a, **{**kw, 'sources': False}))
        else: m.setattr(ma, 'arm_settings', lambda st_, name, pool=ma.POOL: real_settings(st_, name, pool).replace(pool_size=1))
        for seed in range(6):
            mem, svc, ann, rng = build(seed, 12, 8, 5120, 6)
            try: found += len(compare(mem, svc, ann, questions_for(rng), 6, arm_settings=real_settings, no_cap=real_cap))
            finally: svc.close()
    assert found > 0, f"breaking {broken!r} went unnoticed"
