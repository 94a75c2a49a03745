"""S-8 x S-1.6: source recall never returns an episode outside the reader's read policy.

Extracted facts are semantic (every agent of the user reads them), but their `from_episode` may point to
(a) a turn of an agent the reader may not read (KAREN's conversation, read by JARVIS),
(b) an id that exists only in ANOTHER user's collection (ids are per-user collections),
(c) a thought log (readable, but never recall material, S-6.5),
(d) a deleted turn.
For every reader and query, every item returned by `source_candidates`, by the recall pipeline (`recall.recall`),
and by `observe`, must satisfy the pure-model oracle:
    item.user_id == reader.user_id  and  team.policy(reader.agent_id).may_read(item)  and  item.source != 'thought'.
`test_oracle_catches_a_leak` proves the check can fail: with the fetch deliberately bypassing the policy
(the writing agent's scope, another user's scope, no thought filter) the oracle reports the leak."""
from __future__ import annotations
import functools, itertools, uuid
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import jarvis_memory.recall as rr
from jarvis_memory.scope import MemoryScope, MemoryItem, ReadPolicy, Team
from jarvis_memory.settings import Settings
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.chroma import ChromaStore
from jarvis_memory.service import MemoryService
from jarvis_memory.language import query_terms

T0 = 1_760_000_000.0
DAY = 86400.0
EMB = HashingEmbedder()


def oracle_violations(items, reader: MemoryScope, team: Team) -> list[str]:
    "Items the reader must never get from source recall, with why (empty list = no leak)."
    pol, bad = team.policy(reader.agent_id), []
    for it in items:
        if it.user_id != reader.user_id: bad.append(f"{it.id}: another user's item ({it.user_id})")
        elif not pol.may_read(it): bad.append(f"{it.id}: {it.layer} item of {it.agent_id!r}, not readable by {reader.agent_id!r}")
        elif it.source == 'thought': bad.append(f"{it.id}: a thought log")
    return bad


def recall_outputs(svc: MemoryService, reader: MemoryScope, query: str, *, with_observe: bool = True):
    "Everything source recall hands back for one query: the added candidates, the block, and observe's block."
    terms = query_terms(query)
    qv = svc.store.embedder.embed_one(query, query=True)
    cands = rr.gather(svc.store, reader, query, terms, svc.settings)
    src = rr.source_candidates(svc.store, reader, cands, query_embedding=qv, terms=terms)
    block = rr.recall(svc.store, reader, query, svc.settings, now=T0, k=5, core=()).recall
    obs = svc.observe(reader, [{'role': 'user', 'content': query}], now=T0).recall if with_observe else []
    return cands, [c.item for c in src], [s.item for s in block], [s.item for s in obs]


# ------------------------------------------------------------------------------------------------- fixed scenario
TEAM = Team(policies=[ReadPolicy('karen', edm=('self',))])          # main: no policy -> default [self]
READERS = [MemoryScope('alice', 'main', 'r1'), MemoryScope('alice', 'karen', 'r2'), MemoryScope('bob', 'main', 'r3'),
           MemoryScope('bob', 'karen', 'r4')]
QUERIES = ['전세 예산 얼마였지?', '땅콩 알레르기 있었나?', 'What was my budget for the flat?', '운동 계획 알려줘',
           'peanuts hives allergy', '전세 2억 역세권']


@pytest.fixture(scope='module')
def world(tmp_path_factory):
    s = Settings(path=str(tmp_path_factory.mktemp('leak') / 'chroma'), embedding_provider='hashing')
    svc = MemoryService(ChromaStore(s, embedder=EMB, team=TEAM), s, clock=lambda: T0)
    A, AK, B = MemoryScope('alice', 'main', 'a1'), MemoryScope('alice', 'karen', 'k1'), MemoryScope('bob', 'main', 'b1')
    w = {}
    # (a) KAREN's turn: readable by alice/karen only
    w['karen_turn'] = svc.record_turn(AK, [{'role': 'user', 'content': '전세 2억 이하로 역세권 집 찾아줘, budget for the flat'},
                                           {'role': 'assistant', 'content': '역세권 전세 매물을 찾아볼게요.'}], at=T0 - 10 * DAY)[0]
    # a main turn: readable by alice/main only
    w['main_turn'] = svc.record_turn(A, [{'role': 'user', 'content': "나 땅콩 먹으면 두드러기 나, peanuts give me hives"},
                                         {'role': 'assistant', 'content': '땅콩은 빼고 추천할게요.'}], at=T0 - 20 * DAY)[0]
    # (b) an id that exists only in bob's collection
    w['bob_turn'] = svc.write(B, 'turn', 'U: 운동 계획 세워줘, 전세 예산도\nA: 주 3회 달리기부터 해요.', id='only-in-bob', at=T0 - 5 * DAY)
    # (c) a thought log of alice/main (readable by main, never recall material)
    w['thought'] = svc.write_thought(A, '사용자가 운동 계획과 전세 예산을 걱정한다', at=T0 - 3 * DAY)
    # (d) a deleted turn
    gone = svc.record_turn(MemoryScope('alice', 'main', 'a2'), [{'role': 'user', 'content': '운동 계획 다시 짜줘'}, {'role': 'assistant', 'content': '네.'}],
                           at=T0 - 4 * DAY)[0]
    # the facts (semantic: every agent of the user reads them)
    w['f_karen'] = svc.write_fact(AK, 'extracted', '주거 예산: 전세 2억', importance=0.8, metadata={'from_episode': w['karen_turn'].id}, at=T0 - 9 * DAY)
    w['f_main'] = svc.write_fact(A, 'extracted', '알레르기: 땅콩', importance=0.9, metadata={'from_episode': w['main_turn'].id}, at=T0 - 19 * DAY)
    w['f_bob_id'] = svc.write_fact(A, 'extracted', '목표: 운동 계획', importance=0.7, metadata={'from_episode': 'only-in-bob'}, at=T0 - 4 * DAY)
    w['f_thought'] = svc.write_fact(A, 'extracted', '걱정: 전세 예산', importance=0.7, metadata={'from_episode': w['thought'].id}, at=T0 - 2 * DAY)
    w['f_gone'] = svc.write_fact(A, 'extracted', '습관: 운동 계획 세우기', importance=0.6, metadata={'from_episode': gone.id}, at=T0 - 3 * DAY)
    assert gone.id != w['main_turn'].id and svc.store.delete(A, [gone.id]) == 1
    # bob's own fact points to an id that exists only in ALICE's collection
    w['f_bob'] = svc.write_fact(B, 'extracted', '주거 예산: 월세 80', importance=0.8, metadata={'from_episode': w['karen_turn'].id}, at=T0 - 2 * DAY)
    yield svc, w
    svc.close()


def test_fixed_scenario_never_leaks(world):
    svc, w = world
    seen = {r: set() for r in READERS}
    for reader, q in itertools.product(READERS, QUERIES):
        cands, src, block, obs = recall_outputs(svc, reader, q)
        for what, items in (('source_candidates', src), ('recall', block), ('observe', obs)):
            bad = oracle_violations(items, reader, TEAM)
            assert not bad, (reader, q, what, bad)
        seen[reader] |= {it.id for it in src + block}
    am, ak, bm, bk = READERS
    # not vacuous: the facts pointing outside the policy were candidates, and legitimate sources do come back
    assert w['karen_turn'].id in seen[ak]                    # KAREN gets her own turn as a source
    assert w['main_turn'].id in seen[am]                     # JARVIS gets his
    assert w['karen_turn'].id not in seen[am] | seen[bm] | seen[bk]
    assert w['main_turn'].id not in seen[ak]
    assert w['thought'].id not in set().union(*seen.values())
    assert 'only-in-bob' not in seen[am] | seen[ak]          # alice's fact -> bob's id: not found in alice's collection
    cands = {c.id for q in QUERIES for c in rr.gather(svc.store, am, q, query_terms(q), svc.settings)}
    assert {w['f_karen'].id, w['f_bob_id'].id, w['f_thought'].id, w['f_gone'].id} <= cands


# ------------------------------------------------------------------------------------------------- the oracle can fail
def _leaky_writer_scope(store, scope, ids):
    "BUG ON PURPOSE: fetch with the scope of every writing agent of the user, not the reader's."
    found = {}
    for agent in ('main', 'karen'):
        for it in store.get(MemoryScope(scope.user_id, agent), ids):
            found.setdefault(it.id, it)
    return list(found.values())


def _leaky_any_user(store, scope, ids):
    "BUG ON PURPOSE: look the ids up in every user's collection."
    found = {}
    for user in ('alice', 'bob'):
        for it in store.get(MemoryScope(user, scope.agent_id), ids):
            found.setdefault(it.id, it)
    return list(found.values())


def _detected(svc, readers) -> list:
    out = []
    for reader, q in itertools.product(readers, QUERIES):
        _, src, block, _ = recall_outputs(svc, reader, q, with_observe=False)
        out += [(reader, q, 'block', b) for b in oracle_violations(block, reader, TEAM)]
        out += [(reader, q, 'src', b) for b in oracle_violations(src, reader, TEAM)]
    return out


@pytest.mark.parametrize('leak', ['writer_scope', 'any_user', 'no_thought_filter'])
def test_oracle_catches_a_leak(world, monkeypatch, leak):
    svc, w = world
    am, ak, bm, bk = READERS
    with monkeypatch.context() as m:
        if leak == 'writer_scope': m.setattr(rr, '_fetch_sources', _leaky_writer_scope)
        elif leak == 'any_user': m.setattr(rr, '_fetch_sources', _leaky_any_user)
        else: m.setattr(rr, 'source_candidates', functools.partial(rr.source_candidates, exclude_sources=()))
        found = _detected(svc, READERS)
        assert found, f"the oracle missed the {leak} leak"
        blocks = [f for f in found if f[2] == 'block']
        if leak == 'no_thought_filter':
            assert not blocks, blocks        # joint_rank's own exclusion of thoughts is a second barrier (S-6.5)
        else:
            assert blocks, f"the {leak} leak never reached the recall block"    # end to end, not only the helper
        want = {'writer_scope': (am, w['karen_turn'].id), 'any_user': (am, 'only-in-bob'),
                'no_thought_filter': (am, w['thought'].id)}[leak]
        assert any(r == want[0] and b.startswith(want[1] + ':') for r, _, _, b in found), found
    assert _detected(svc, READERS) == []                                        # restored: no leak again


# ------------------------------------------------------------------------------------------------- random populations
USERS, AGENTS = ('u1', 'u2'), ('main', 'karen', 'other')
WORDS = ('전세', '예산', '땅콩', 'budget', 'peanuts', '운동', 'plan', '서울')
EP_SOURCES = ('turn', 'turn', 'thought', 'journal', 'task_pattern', 'delegation')


@st.composite
def policies(draw):
    return [ReadPolicy(a, edm=tuple(draw(st.lists(st.sampled_from(('self',) + AGENTS), min_size=1, max_size=3, unique=True))),
                       pdm=tuple(draw(st.lists(st.sampled_from(('self',) + AGENTS), min_size=1, max_size=2, unique=True))))
            for a in AGENTS + ('stranger',)]


@st.composite
def populations(draw):
    "Episodes of random users/agents/sources, and extracted facts pointing to any episode id (any user), or a deleted one."
    n_ep, n_f = draw(st.integers(3, 10)), draw(st.integers(2, 10))
    words = lambda: ' '.join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)))
    eps = [dict(id=f'e{i}', u=draw(st.sampled_from(USERS)), a=draw(st.sampled_from(AGENTS)), src=draw(st.sampled_from(EP_SOURCES)),
                text=f'U: {words()}\nA: {words()} #{i}', t=T0 - draw(st.integers(0, 300)) * DAY, deleted=draw(st.booleans()) and i % 3 == 0)
           for i in range(n_ep)]
    facts = [dict(id=f'f{i}', u=draw(st.sampled_from(USERS)), a=draw(st.sampled_from(AGENTS)), text=f'{words()}: {words()}',
                  imp=draw(st.integers(5, 10)) / 10, t=T0 - draw(st.integers(0, 300)) * DAY,
                  src=draw(st.sampled_from([e['id'] for e in eps] + ['never-existed'])))
             for i in range(n_f)]
    queries = draw(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(' '.join), min_size=1, max_size=2))
    return eps, facts, queries


@pytest.fixture(scope='module')
def rand_path(tmp_path_factory):
    return tmp_path_factory.mktemp('leak-rand') / 'chroma'


def test_random_populations_never_leak(rand_path):
    stats = Counter()

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(pop=populations(), pols=policies())
    def run(pop, pols):
        eps, facts, queries = pop
        tag = uuid.uuid4().hex[:8]                       # fresh users (collections) per example
        team = Team(policies=pols)
        s = Settings(path=str(rand_path), embedding_provider='hashing')
        with ChromaStore(s, embedder=EMB, team=team) as store:
            svc = MemoryService(store, s, clock=lambda: T0)
            items = [MemoryItem.new(MemoryScope(f'{tag}-{e["u"]}', e['a'], 's0'), e['src'], e['text'], id=e['id'], created_at=e['t'])
                     for e in eps]
            items += [MemoryItem.new(MemoryScope(f'{tag}-{f["u"]}', f['a'], 's0'), 'extracted', f['text'], id=f['id'],
                                     importance=f['imp'], created_at=f['t'], metadata={'from_episode': f['src']}) for f in facts]
            # in every example, facts that match any query (all words) and point to the dangerous targets
            u1, u2 = (MemoryScope(f'{tag}-{u}', 'main', 's0') for u in USERS)
            all_words = ' '.join(WORDS)
            items += [MemoryItem.new(u1, 'thought', '무관한 생각', id='g-thought', created_at=T0 - DAY),
                      MemoryItem.new(MemoryScope(u1.user_id, 'karen', 's0'), 'turn', 'U: 무관한 이야기\nA: 네', id='g-karen', created_at=T0 - DAY),
                      MemoryItem.new(u2, 'turn', 'U: 다른 사용자 이야기\nA: 네', id='g-u2', created_at=T0 - DAY)]
            items += [MemoryItem.new(u1, 'extracted', f'{i}: {all_words}', id=f'g-fact-{i}', importance=0.7, created_at=T0 - DAY,
                                     metadata={'from_episode': i}) for i in ('g-thought', 'g-karen', 'g-u2')]
            store.put(items)
            for e in eps:
                if e['deleted']: store.delete(MemoryScope(f'{tag}-{e["u"]}', e['a']), [e['id']])
            live = {(it.user_id, it.id): it for it in items if not any(e['deleted'] and e['id'] == it.id for e in eps)}
            for u, a in itertools.product(USERS, AGENTS + ('stranger',)):
                reader = MemoryScope(f'{tag}-{u}', a, 'now')
                pol = team.policy(a)
                for q in queries:
                    cands, src, block, obs = recall_outputs(svc, reader, q)
                    for what, got in (('source_candidates', src), ('recall', block), ('observe', obs)):
                        bad = oracle_violations(got, reader, team)
                        assert not bad, (what, reader, q, bad)
                    stats['sources_returned'] += len(src)
                    # classify the pointers of the candidate facts, to show the dangerous cases were exercised
                    for c in cands:
                        fe = c.item.metadata.get('from_episode') if c.item.source == 'extracted' else None
                        if fe is None: continue
                        target = live.get((reader.user_id, fe))
                        if target is None:
                            stats['other_user_or_deleted'] += 1
                            assert fe not in {it.id for it in src}
                        elif not pol.may_read(target):
                            stats['blocked_by_policy'] += 1
                            assert fe not in {it.id for it in src}
                        elif target.source == 'thought':
                            stats['thought'] += 1
                            assert fe not in {it.id for it in src}
    run()
    print(dict(stats))
    for k in ('sources_returned', 'blocked_by_policy', 'other_user_or_deleted', 'thought'):
        assert stats[k] > 0, (k, dict(stats))


# ------------------------------------------------------------------------------------------------- issue 14: a workload
# Derived memories (summaries, journals, user models, referents), forget and forget_session, policy edits on disk,
# in embedded mode and with two processes on one `chroma run` server. The token oracle is in tests/leak_workload.py.
import json as _json, os as _os, subprocess as _sp, sys as _sys
from pathlib import Path as _Path
from leak_workload import Workload, Ledger, god_team, final_checks, AGENTS as W_AGENTS, T0 as W_T0

LEAK_OPS = int(_os.environ.get('JM_LEAK_OPS', '10000'))       # the bar: 0 leaks over at least 10,000 operations


def _workload_service(tmp, team, **kw):
    s = Settings(path=str(tmp / 'chroma'), cache_dir=str(tmp / 'cache'), embedding_provider='hashing', **kw)
    return MemoryService(ChromaStore(s, embedder=HashingEmbedder(64), team=team), s, clock=lambda: W_T0)


def test_random_workload_embedded(tmp_path):
    team_dir = tmp_path / 'team'; team_dir.mkdir()
    svc = _workload_service(tmp_path, god_team(team_dir), team_dir=str(team_dir))
    wl = Workload(svc, Ledger(tmp_path / 'ledger.jsonl'), W_AGENTS, seed=14, prefix='e', team_dir=team_dir)
    stats = wl.run(LEAK_OPS)
    final_checks(svc, wl, tmp_path / 'chroma')
    print(stats)
    assert stats['ops'] == LEAK_OPS
    for k in ('reads', 'forget', 'forget_session', 'policy', 'usermodel_shown', 'op_compact', 'op_journal', 'op_remember_that'):
        assert stats.get(k, 0) > 0, (k, stats)                    # not vacuous: every derived path was exercised
    assert len(wl.forgotten) > 0
    svc.close()


_SERVER_WORKER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from jarvis_memory.scope import ReadPolicy, Team
from jarvis_memory.settings import Settings
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.chroma import ChromaStore
from jarvis_memory.service import MemoryService
from leak_workload import Workload, Ledger, AGENTS, T0
url, agent, seed, n, tmp = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), Path(sys.argv[6])
team = Team(None, [ReadPolicy('karen', edm=('self', 'main'), pdm=('self', 'main')), ReadPolicy('god', edm=AGENTS, pdm=AGENTS)])
s = Settings(cache_dir=str(tmp / 'cache'), embedding_provider='hashing')
svc = MemoryService(ChromaStore(s, HashingEmbedder(64), team, server_url=url), s, clock=lambda: T0)
wl = Workload(svc, Ledger(tmp / 'ledger.jsonl', tag=agent[0]), [agent], seed, prefix=agent[0])
# Both processes build user models while the other forgets: a build checks its sources again after writing its file
# and a forget sweeps the files after deleting its rows, so no model quotes forgotten text (21_commands).
stats = wl.run(n)
print(json.dumps({'stats': stats, 'forgotten': sorted(wl.forgotten)}), flush=True)
svc.close()
"""


@pytest.mark.server
def test_random_workload_two_server_processes(tmp_path):
    from servers import chroma_server
    n = max(LEAK_OPS // 4, 200)                                     # per process; the embedded test carries the 10,000
    with chroma_server(tmp_path / 'server') as url:
        here = str(_Path(__file__).parent)
        procs = [_sp.Popen([_sys.executable, '-c', _SERVER_WORKER, here, url, a, str(seed), str(n), str(tmp_path)],
                           stdout=_sp.PIPE, stderr=_sp.PIPE, text=True) for a, seed in (('main', 1), ('karen', 2))]
        outs = []
        for p in procs:
            so, se = p.communicate(timeout=1800)
            assert p.returncode == 0, se[-3000:]
            outs.append(_json.loads(so.strip().splitlines()[-1]))
        team = Team(None, [ReadPolicy('karen', edm=('self', 'main'), pdm=('self', 'main')), ReadPolicy('god', edm=W_AGENTS, pdm=W_AGENTS)])
        s = Settings(cache_dir=str(tmp_path / 'cache'), embedding_provider='hashing')
        svc = MemoryService(ChromaStore(s, HashingEmbedder(64), team, server_url=url), s, clock=lambda: W_T0)
        wl = Workload(svc, Ledger(tmp_path / 'ledger.jsonl'), [], 0, prefix='check')
        wl.forgotten = {t for o in outs for t in o['forgotten']}
        final_checks(svc, wl, None)                      # no forgotten token in any row or user model file
        svc.close()
    for o in outs:
        assert o['stats']['ops'] == n and o['stats']['reads'] > 0 and o['stats'].get('forget', 0) > 0, o['stats']
        assert o['stats'].get('usermodel_build', 0) > 0 and o['stats'].get('usermodel_shown', 0) > 0, o['stats']


def test_workload_oracle_catches_the_old_user_model_leak(tmp_path, monkeypatch):
    "The check can fail: with /usermodel shown to every agent of the user (the code before issue 14), it finds a leak."
    import jarvis_memory.commands as cmd
    def any_model(store, scope):                                   # BUG ON PURPOSE: the newest model, whoever may read it
        ms = [_json.loads(p.read_text(encoding='utf-8')) for p in cmd.user_model_files(store.settings, scope.user_id)]
        return max(ms, key=lambda m: m['built_at'], default=None)
    monkeypatch.setattr(cmd, 'load_user_model', any_model)
    team_dir = tmp_path / 'team'; team_dir.mkdir()
    svc = _workload_service(tmp_path, god_team(team_dir), team_dir=str(team_dir))
    wl = Workload(svc, Ledger(tmp_path / 'ledger.jsonl'), W_AGENTS, seed=14, prefix='e', team_dir=team_dir)
    with pytest.raises(AssertionError, match='LEAK via /usermodel'): wl.run(2000)
    svc.close()
