"Property tests for jarvis_memory.scoring (SPEC S-6): invariants of `rank`, the flashbulb slot and `core_facts`."
import random

from hypothesis import given, settings as hsettings, strategies as st

from jarvis_memory.scope import MemoryItem, MemoryScope
from jarvis_memory.scoring import (Slot, Candidate, core_facts, decayed_importance, excluded_reason, rank, recency,
                                   score)
from jarvis_memory.settings import Settings

S = Settings()
NOW = 1_750_000_000.0
DAY = 86400.0
SCOPE = MemoryScope('alice', 'main', 's1')
SOURCES = ['turn', 'turn_part', 'thought', 'explicit', 'extracted', 'task_pattern', 'journal']

item_st = st.fixed_dictionaries(dict(
    source=st.sampled_from(SOURCES),
    days=st.floats(-2, 2000, allow_nan=False),
    importance=st.floats(0, 1),
    rehearsal=st.integers(0, 20),
    superseded=st.booleans(),
))
cand_st = st.tuples(st.one_of(st.none(), st.floats(-1, 1)), st.floats(0, 1))


def make(specs, cands):
    items = [MemoryItem.new(SCOPE, s['source'], f'item {i}', id=f'i{i}', importance=s['importance'],
                            created_at=NOW - s['days'] * DAY, rehearsal=s['rehearsal'],
                            metadata={'superseded_by': 'x'} if s['superseded'] and i % 3 == 0 else {})
             for i, s in enumerate(specs)]
    return [Candidate(items[j % len(items)], rel, cue) for j, (rel, cue) in enumerate(cands)]


@hsettings(max_examples=300, deadline=None)
@given(specs=st.lists(item_st, min_size=1, max_size=25), cands=st.lists(cand_st, min_size=1, max_size=40),
       k=st.integers(0, 6), n_window=st.integers(0, 5), seed=st.integers(0, 10**6))
def test_rank_invariants(specs, cands, k, n_window, seed):
    cs = make(specs, cands)
    window = [f'i{i}' for i in range(n_window)]
    eligible = {c.id for c in cs if excluded_reason(c, window) is None}
    plain = rank(cs, NOW, S, k=k, exclude_ids=window, flashbulb=False)
    fb = rank(cs, NOW, S, k=k, exclude_ids=window)
    for r in (plain, fb):
        ids = [s.id for s in r]
        assert len(ids) == len(set(ids)) == min(k, len(eligible))          # k filled when enough (S-3.3)
        assert set(ids) <= eligible                                           # no thought, window, superseded
        for s in r:
            assert 0.0 <= s.total <= 1.0 + 1e-12
            assert abs(sum(s.weighted.values()) - s.total) < 1e-12
            assert all(0.0 <= v <= 1.0 for v in s.components.values())
    totals = [s.total for s in plain]
    assert totals == sorted(totals, reverse=True)
    # the slot changes at most the last item, and only to bring in a flashbulb item
    assert [s.id for s in fb[:-1]] == [s.id for s in plain[:-1]]
    if fb and fb[-1].id != plain[-1].id:
        assert fb[-1].flashbulb and fb[-1].slot == Slot.FLASHBULB and fb[-1].why and not any(s.flashbulb for s in plain)
    any_fb = any(score(c, NOW, S).flashbulb for c in cs if c.id in eligible)
    if k > 0 and any_fb: assert any(s.flashbulb for s in fb)                  # S-6.4
    # input order does not matter
    shuffled = cs[:]
    random.Random(seed).shuffle(shuffled)
    assert [s.id for s in rank(shuffled, NOW, S, k=k, exclude_ids=window)] == [s.id for s in fb]


@given(a=st.floats(0, 3000), b=st.floats(0, 3000), imp=st.floats(0, 1), r1=st.integers(0, 30), r2=st.integers(0, 30),
       source=st.sampled_from(SOURCES))
def test_decay_monotone(a, b, imp, r1, r2, source):
    lo, hi = sorted((a, b))
    mk = lambda days, reh: MemoryItem.new(SCOPE, source, 'x', importance=imp, created_at=NOW - days * DAY, rehearsal=reh)
    assert recency(mk(lo, 0), NOW, S) >= recency(mk(hi, 0), NOW, S)
    assert decayed_importance(mk(lo, 0), NOW, S) >= decayed_importance(mk(hi, 0), NOW, S)
    rlo, rhi = sorted((r1, r2))
    assert decayed_importance(mk(hi, rhi), NOW, S) >= decayed_importance(mk(hi, rlo), NOW, S)   # S-6.2
    assert decayed_importance(mk(hi, rhi), NOW, S) <= imp


@given(specs=st.lists(item_st, min_size=0, max_size=30), k=st.integers(0, 5))
def test_core_facts_invariants(specs, k):
    facts = [c.item for c in make(specs, [(None, 0.0)] * len(specs))] if specs else []
    ok = [f for f in facts if f.kind == 'semantic' and not f.metadata.get('superseded_by')]
    block = core_facts(facts + facts[::-1], k)                                   # duplicates from two pools
    assert len(block) == min(k, len(ok)) and len({f.id for f in block}) == len(block)
    imps = [f.importance for f in block]
    assert imps == sorted(imps, reverse=True)
    if block: assert block[0].importance == max(f.importance for f in ok)     # stored importance, no decay (S-6.3)
