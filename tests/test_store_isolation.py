"""S-1.6 isolation: for EVERY read and mutation path and EVERY (user, agent) reader, nothing returned or changed
lies outside the reader's rights. The oracle is the pure model: same user AND `ReadPolicy.may_read(item)`.

Populations are generated with hypothesis (3 users x 3 agents, all layers, random policies, superseded facts)
and written to one embedded store (fresh user ids per example); a fixed scenario from team yaml files also runs
against a real `chroma run` server."""
from __future__ import annotations
import itertools, uuid
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

from jarvis_memory.scope import MemoryScope, MemoryItem, ReadPolicy, Team
from jarvis_memory.settings import Settings
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.store import Filter, open_store
from servers import chroma_server

USERS, AGENTS = ('u1', 'u2', 'u3'), ('main', 'karen', 'bob-agent')
READERS = AGENTS + ('stranger',)                    # an agent that wrote nothing and has the default policy
SOURCES = ('explicit', 'extracted', 'housing_profile', 'turn', 'thought', 'journal', 'delegation', 'task_pattern',
           'procedure', 'blackboard_note')
WORDS = ('서울', '부산', 'budget', 'Seoul', '등산', 'plan', '날씨', 'tea')
EMB = HashingEmbedder(64)
T0 = 1_700_000_000.0


# ------------------------------------------------------------------------------------------------- strategies
@st.composite
def policies(draw):
    out = []
    for a in READERS:
        edm = draw(st.lists(st.sampled_from(('self',) + AGENTS), min_size=1, max_size=3, unique=True))
        pdm = draw(st.lists(st.sampled_from(('self',) + AGENTS), min_size=1, max_size=3, unique=True))
        out.append(ReadPolicy(a, edm=tuple(edm), pdm=tuple(pdm)))
    return out


@st.composite
def populations(draw):
    n = draw(st.integers(6, 30))
    items = []
    for i in range(n):
        u, a = draw(st.sampled_from(USERS)), draw(st.sampled_from(AGENTS))
        src = draw(st.sampled_from(SOURCES))
        words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
        md = {'superseded_by': 'x'} if src in ('explicit', 'extracted') and draw(st.booleans()) else {}
        items.append(dict(i=i, u=u, a=a, src=src, text=' '.join(words) + f' #{i}', md=md,
                          session=draw(st.sampled_from(['s1', 's2', None])), t=T0 + draw(st.integers(0, 1000)),
                          imp=draw(st.integers(0, 10)) / 10))
    return items


def build(spec, tag):
    "MemoryItems of a generated population, with user ids made unique to this example (fresh collections)."
    return [MemoryItem(id=f"it{d['i']}", user_id=f"{tag}-{d['u']}", agent_id=d['a'], source=d['src'], content=d['text'],
                       session_id=d['session'], importance=d['imp'], created_at=d['t'], metadata=d['md'])
            for d in spec]


def oracle(items, user, policy, *, include_superseded=True):
    "ids that `policy.agent_id` of `user` may read, by the pure model."
    return {it.id for it in items if it.user_id == user and policy.may_read(it)
            and (include_superseded or 'superseded_by' not in it.metadata)}


def god(user):
    return MemoryScope(user, 'god')


GOD = ReadPolicy('god', edm=AGENTS, pdm=AGENTS)


# ------------------------------------------------------------------------------------------------- checks
def check_reads(store, items, tag, team):
    all_ids = [it.id for it in items]
    for u, a in itertools.product(USERS, READERS):
        user = f"{tag}-{u}"
        pol, s = team.policy(a), MemoryScope(user, a, 's1')
        allowed = oracle(items, user, pol)
        visible = oracle(items, user, pol, include_superseded=False)
        by_id = {it.id: it for it in items if it.user_id == user}

        got = store.get(s, all_ids)
        assert {it.id for it in got} == allowed, (u, a)
        assert all(it.user_id == user and pol.may_read(it) for it in got)
        assert [it.id for it in got] == [i for i in all_ids if i in allowed]          # order of ids

        assert {it.id for it in store.list(s)} == visible
        assert {it.id for it in store.list(s, filter=Filter(include_superseded=True), order_by='importance', limit=5)} <= allowed
        assert store.count(s) == len(visible)
        assert store.count(s, Filter(include_superseded=True)) == len(allowed)
        # asking for every agent never widens the policy
        assert {it.id for it in store.list(s, filter=Filter(agent_ids=READERS + ('god',)))} == visible
        for layer in ('semantic', 'edm', 'pdm'):
            assert {it.id for it in store.list(s, filter=Filter(layers=layer))} == {i for i in visible if by_id[i].layer == layer}

        for w in WORDS[:4]:
            kw = store.keyword(s, [w, 'tea'], filter=Filter(include_superseded=True))
            assert {it.id for it in kw} == {i for i in allowed if w in by_id[i].content or 'tea' in by_id[i].content}

        hits = store.search(s, 'budget 서울 plan', k=len(items) + 5, filter=Filter(include_superseded=True))
        assert {it.id for it, _ in hits} == allowed                                    # small n: exact and complete
        assert all(it.user_id == user and pol.may_read(it) for it, _ in hits)


def changeable(items, user, policy):
    "ids that `policy.agent_id` of `user` may update or delete: readable, and its own or semantic (issue 14, finding 5)."
    return {it.id for it in items if it.user_id == user and policy.may_read(it) and policy.may_change(it)}


def check_mutations(store, items, tag, team, reader_user, reader_agent):
    """touch / rehearse change exactly the rows the reader may read; update_metadata / delete exactly those it may change;
    delete(user_request=True), the user's own forget, every row it may read."""
    user = f"{tag}-{reader_user}"
    pol, s = team.policy(reader_agent), MemoryScope(user, reader_agent)
    allowed = oracle(items, user, pol)
    mine = changeable(items, user, pol)
    all_ids = [it.id for it in items]
    before = {u: {it.id: it for it in store.list(god(f"{tag}-{u}"), filter=Filter(include_superseded=True))} for u in USERS}

    assert store.touch(s, all_ids, T0 + 5000) == len(allowed)
    assert store.rehearse(s, all_ids, delta=2) == len(allowed)
    assert store.update_metadata(s, all_ids, {'seen_by': reader_agent}) == len(mine)
    after = {u: {it.id: it for it in store.list(god(f"{tag}-{u}"), filter=Filter(include_superseded=True))} for u in USERS}
    for u in USERS:
        assert after[u].keys() == before[u].keys()
        for i, it in after[u].items():
            changed = f"{tag}-{u}" == user and i in allowed
            meta = {**before[u][i].metadata, 'seen_by': reader_agent} if changed and i in mine else before[u][i].metadata
            want = replace(before[u][i], last_accessed=T0 + 5000, rehearsal=before[u][i].rehearsal + 2,
                           metadata=meta) if changed else before[u][i]
            assert it == want, (u, i, changed)

    assert store.delete(s, all_ids) == len(mine)
    for u in USERS:
        left = {it.id for it in store.list(god(f"{tag}-{u}"), filter=Filter(include_superseded=True))}
        assert left == (set(before[u]) - mine if f"{tag}-{u}" == user else set(before[u]))
    assert store.delete(s, all_ids, user_request=True) == len(allowed - mine)
    for u in USERS:
        left = {it.id for it in store.list(god(f"{tag}-{u}"), filter=Filter(include_superseded=True))}
        assert left == (set(before[u]) - allowed if f"{tag}-{u}" == user else set(before[u]))


# ------------------------------------------------------------------------------------------------- hypothesis
@pytest.fixture(scope='module')
def embedded_path(tmp_path_factory):
    return tmp_path_factory.mktemp('isolation') / 'chroma'


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(spec=populations(), pols=policies(), who=st.tuples(st.sampled_from(USERS), st.sampled_from(READERS)))
def test_isolation_random_populations(embedded_path, spec, pols, who):
    team = Team(policies=pols + [GOD])
    tag = uuid.uuid4().hex[:10]
    items = build(spec, tag)
    with open_store(Settings(), backend='chroma', embedder=EMB, team=team, path=embedded_path) as store:
        store.put(items)
        check_reads(store, items, tag, team)
        check_mutations(store, items, tag, team, *who)


# ------------------------------------------------------------------------------------------------- fixed scenario, both backends
@pytest.fixture(params=['embedded', pytest.param('server', marks=pytest.mark.server)])
def location(request, tmp_path):
    if request.param == 'embedded':
        yield dict(backend='chroma', path=tmp_path / 'chroma')
    else:
        with chroma_server(tmp_path / 'server') as url:
            yield dict(backend='chroma', server_url=url)


def test_isolation_team_yaml_scenario(location, tmp_path):
    "S-1.4 with policies from team/*.yaml: KAREN pdm [self, main]; bob-agent edm [self, karen]; main has no file."
    tdir = tmp_path / 'team'
    tdir.mkdir()
    (tdir / 'karen.yaml').write_text("name: KAREN\nmemory:\n  read:\n    edm: [self]\n    pdm: [self, main]\n")
    (tdir / 'bob-agent.yaml').write_text("memory:\n  read:\n    edm: [self, karen]\n")
    (tdir / 'god.yaml').write_text("memory:\n  read:\n    edm: [main, karen, bob-agent]\n    pdm: [main, karen, bob-agent]\n")
    team = Team(tdir)
    rng = np.random.default_rng(3)
    spec = [dict(i=i, u=USERS[i % 3], a=AGENTS[(i // 3) % 3], src=SOURCES[i % len(SOURCES)],
                 text=f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]} #{i}",
                 md={'superseded_by': 'y'} if i % 11 == 0 and SOURCES[i % len(SOURCES)] in ('explicit', 'extracted') else {},
                 session=['s1', 's2', None][i % 3], t=T0 + float(rng.integers(0, 1000)), imp=float(rng.integers(0, 10)) / 10)
            for i in range(60)]
    items = build(spec, 'fixed')
    with open_store(Settings(team_dir=str(tdir)), embedder=EMB, **location) as store:
        store.put(items)
        u = 'fixed-u1'
        # the spec's sentences, literally
        main_sees = {it.id: it for it in store.list(MemoryScope(u, 'main'), filter=Filter(include_superseded=True))}
        assert not any(it.agent_id == 'karen' and it.layer == 'edm' for it in main_sees.values())      # JARVIS never sees KAREN's episodes
        karen_sees = store.list(MemoryScope(u, 'karen'), filter=Filter(include_superseded=True))
        assert any(it.agent_id == 'main' and it.layer == 'pdm' for it in karen_sees)                  # KAREN sees main's task patterns
        assert not any(it.agent_id == 'main' and it.layer == 'edm' for it in karen_sees)              # ...not main's turns
        sem = {it.id for it in items if it.user_id == u and it.layer == 'semantic'}
        for a in READERS:                                                                             # facts of all agents, every agent
            assert {it.id for it in store.list(MemoryScope(u, a), filter=Filter(layers='semantic', include_superseded=True))} == sem
        for other in ('fixed-u2', 'fixed-u3'):                                                        # bob never sees alice
            assert all(it.user_id == other for it in store.list(MemoryScope(other, 'main')))
        check_reads(store, items, 'fixed', team)
        check_mutations(store, items, 'fixed', team, 'u2', 'bob-agent')
