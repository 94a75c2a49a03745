"""Issue 14: the bad-input catalogue. Every case gives a clear error of the package's families (or is safely accepted),
and leaves every stored row as it was (nothing half-written, nothing lost).

Families: ids, content, metadata, timestamps, policy files, commands, histories, forget and the store API, and the
`remember_task_pattern` tool call (the package's one tool/MCP-style entry point)."""
import math
from pathlib import Path

import pytest

from jarvis_memory.scope import (MemoryScope, MemoryItem, MemoryInputError, ScopeError, ItemError, PolicyError, Team)
from jarvis_memory.settings import Settings
from jarvis_memory.store import Filter
from jarvis_memory.chroma import ChromaStore
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.episodes import turn_id
from jarvis_memory.service import MemoryService
from jarvis_memory.commands import run_command

T0 = 1_760_000_000.0
ME = MemoryScope('alice', 'main', 's1')
KAREN = MemoryScope('alice', 'karen', 'k1')


def U(t): return {'role': 'user', 'content': t}
def A(t): return {'role': 'assistant', 'content': t}


@pytest.fixture(scope='module')
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp('inputs')
    (d / 'team').mkdir()
    (d / 'team' / 'karen.yaml').write_text("memory:\n  read:\n    edm: [self]\n    pdm: [self, main]\n")
    s = Settings(path=str(d / 'chroma'), cache_dir=str(d / 'cache'), embedding_provider='hashing', team_dir=str(d / 'team'))
    svc = MemoryService(ChromaStore(s, embedder=HashingEmbedder(64)), s, clock=lambda: T0)
    svc.record_turn(ME, [U('서울 날씨 어때?'), A('맑아요.')])
    svc.remember(ME, '거주지: 서울')
    svc.remember_task_pattern(ME, '예산 추천', '예산을 물을 때', ['수입을 묻는다'], ['예산'])
    svc.write_thought(KAREN, '전세 시세 확인')
    yield svc, d / 'team'
    svc.close()


def snapshot(svc):
    "Every row of alice, as (id, content, metadata, times), seen by an agent that reads everything."
    god = MemoryScope('alice', 'god')
    svc.store.team._fixed['god'] = __import__('jarvis_memory.scope', fromlist=['ReadPolicy']).ReadPolicy(
        'god', edm=('main', 'karen'), pdm=('main', 'karen'))
    rows = svc.store.list(god, filter=Filter(include_superseded=True), order_by=None)
    return sorted((it.id, it.content, repr(sorted(it.metadata.items())), it.created_at) for it in rows)


def policy_file(team, name, text):
    def f(svc):
        p = team / name
        p.write_text(text)
        try: return svc.store.list(MemoryScope('alice', Path(name).stem), filter=Filter())
        finally: p.unlink()
    return f


def hidden_policy(svc, team):
    "A file `.karen.yaml` (not an agent id) granting main's episodes: ignored, karen keeps her own policy."
    p = team / '.karen.yaml'
    p.write_text("memory:\n  read:\n    edm: [self, main]\n")
    try: return svc.store.list(MemoryScope('alice', 'karen'), filter=Filter(agent_ids=('main',), layers='edm'))
    finally: p.unlink()


E, OK, NOTOK = 'raises', 'ok', 'not ok'
CASES = [
    # --- ids (finding 2)
    ('user id empty', lambda s, t: MemoryScope('', 'main'), (E, ScopeError, 'user_id')),
    ('user id newline', lambda s, t: MemoryScope('al\nice', 'main'), (E, ScopeError, 'user_id')),
    ('user id not a str', lambda s, t: MemoryScope(3, 'main'), (E, ScopeError, 'user_id')),
    ('user id too long', lambda s, t: MemoryScope('a' * 300, 'main'), (E, ScopeError, 'longer than')),
    ('user id not NFC', lambda s, t: MemoryScope('\u1100\u1161', 'main'), (E, ScopeError, 'NFC')),
    ('user id zero-width', lambda s, t: MemoryScope('ali\u200bce', 'main'), (E, ScopeError, 'user_id')),
    ('agent id ../x', lambda s, t: MemoryScope('alice', '../x'), (E, ScopeError, 'agent_id')),
    ('agent id ./karen', lambda s, t: MemoryScope('alice', './karen'), (E, ScopeError, 'agent_id')),
    ('agent id with slash', lambda s, t: s.store.list(MemoryScope('alice', 'team/karen')), (E, ScopeError, 'agent_id')),
    ('agent id with space', lambda s, t: MemoryScope('alice', 'ka ren'), (E, ScopeError, 'agent_id')),
    ('session id bidi override', lambda s, t: MemoryScope('alice', 'main', 's\u202e1'), (E, ScopeError, 'session_id')),
    ('item id control char', lambda s, t: s.write(ME, 'turn', 'x', id='a\x07b'), (E, ScopeError, 'item id')),
    ('item id of another agent', lambda s, t: s.write(KAREN, 'turn', 'x', id=turn_id(ME, 9)), (E, ItemError, 'another agent')),
    ('Filter agent id ../x', lambda s, t: Filter(agent_ids=('../x',)), (E, ScopeError, 'agent_ids')),
    # --- content (finding 7)
    ('content lone surrogate', lambda s, t: s.write(ME, 'turn', 'a\ud800b'), (E, ItemError, 'surrogate')),
    ('fact lone surrogate', lambda s, t: s.write_fact(ME, 'explicit', '취미: \udfff'), (E, ItemError, 'surrogate')),
    ('remember lone surrogate', lambda s, t: s.remember(ME, '기억해 \ud83d'), (E, ItemError, 'surrogate')),
    ('turn lone surrogate', lambda s, t: s.record_turn(ME, [U('a\ud800'), A('b')]), (E, MemoryInputError, 'surrogate')),
    ('answer lone surrogate', lambda s, t: s.record_turn(ME, [U('a'), A('b\udc00')]), (E, MemoryInputError, 'surrogate')),
    ('content empty', lambda s, t: s.write(ME, 'turn', '   '), (E, ItemError, 'empty')),
    ('content None', lambda s, t: s.write(ME, 'turn', None), (E, ItemError, 'string')),
    ('remember empty', lambda s, t: s.remember(ME, ''), (E, ItemError, 'non-empty')),
    ('source malformed', lambda s, t: s.write(ME, 'Bad Source', 'x'), (E, ItemError, 'source')),
    ('importance > 1', lambda s, t: s.write(ME, 'turn', 'x', importance=1.5), (E, ItemError, 'importance')),
    # --- metadata
    ('metadata nested', lambda s, t: s.write(ME, 'turn', 'x', metadata={'a': {'b': 1}}), (E, ItemError, "'a'")),
    ('metadata empty list', lambda s, t: s.write(ME, 'turn', 'x', metadata={'a': []}), (E, ItemError, 'empty list')),
    ('metadata mixed list', lambda s, t: s.write(ME, 'turn', 'x', metadata={'a': [1, 'b']}), (E, ItemError, "'a'")),
    ('metadata NaN', lambda s, t: s.write(ME, 'turn', 'x', metadata={'a': math.nan}), (E, ItemError, "'a'")),
    ('metadata surrogate value', lambda s, t: s.write(ME, 'turn', 'x', metadata={'a': '\ud800'}), (E, ItemError, "'a'")),
    ('metadata surrogate key', lambda s, t: s.write(ME, 'turn', 'x', metadata={'\ud800': 1}), (E, ItemError, 'valid Unicode')),
    ('metadata int > 64 bits', lambda s, t: s.write(ME, 'turn', 'x', metadata={'a': 2 ** 70}), (E, ItemError, '64-bit')),
    ('metadata patch surrogate', lambda s, t: s.store.update_metadata(ME, [turn_id(ME, 1)], {'a': '\udfff'}), (E, ItemError, "'a'")),
    # --- timestamps (finding 7)
    ('turn at 1e13', lambda s, t: s.record_turn(ME, [U('a'), A('b')], at=1e13), (E, ItemError, '10000000000000')),
    ('turn at -1e13', lambda s, t: s.record_turn(ME, [U('a'), A('b')], at=-1e13), (E, ItemError, 'outside 1900-01-01')),
    ('turn at NaN', lambda s, t: s.record_turn(ME, [U('a'), A('b')], at=math.nan), (E, ItemError, 'finite')),
    ('fact at inf', lambda s, t: s.remember(ME, '취미: 등산', at=math.inf), (E, ItemError, 'finite')),
    ('write at bool', lambda s, t: s.write(ME, 'turn', 'x', at=True), (E, ItemError, 'Unix seconds')),
    ('write at string', lambda s, t: s.write(ME, 'turn', 'x', at='2024-01-01'), (E, ItemError, 'Unix seconds')),
    ('observe now 1e13', lambda s, t: s.observe(ME, [U('서울')], now=1e13), (E, ItemError, 'outside 1900-01-01')),
    ('touch when 1e300', lambda s, t: s.store.touch(ME, [turn_id(ME, 1)], 1e300), (E, ItemError, 'when')),
    ('item created_at 1e13', lambda s, t: s.store.put([MemoryItem.new(ME, 'turn', 'x', created_at=1e13)]), (E, ItemError, 'created_at')),
    ('observe year 9999 ok', lambda s, t: s.observe(ME, [U('서울')], now=253402128000.0).text, (OK,)),
    ('Filter since after until', lambda s, t: Filter(since=2.0, until=1.0), (E, ItemError, 'after')),
    # --- policy files (findings 2, 9)
    ('policy unknown key', lambda s, t: policy_file(t, 'typo.yaml', "memory:\n  write:\n    edm: [self]\n")(s), (E, PolicyError, 'memory.write')),
    ('policy not YAML', lambda s, t: policy_file(t, 'broken.yaml', "memory: [unclosed\n")(s), (E, PolicyError, 'not valid YAML')),
    ('policy lists ../x', lambda s, t: policy_file(t, 'sneaky.yaml', "memory:\n  read:\n    edm: ['../x']\n")(s), (E, PolicyError, 'agent')),
    ('policy scalar list', lambda s, t: policy_file(t, 'scalar.yaml', "memory:\n  read:\n    pdm: main\n")(s), (E, PolicyError, 'non-empty list')),
    ('policy file not an agent id', lambda s, t: hidden_policy(s, t), (OK, lambda r: r == [])),
    # --- commands
    ('command not a str', lambda s, t: run_command(s, ME, 42), (E, ItemError, 'string')),
    ('unknown command', lambda s, t: run_command(s, ME, '/erase all'), (NOTOK, 'Unknown command')),
    ('forget without text', lambda s, t: run_command(s, ME, '/forget'), (NOTOK, '/forget <text>')),
    ('forget surrogate', lambda s, t: run_command(s, ME, '/forget \ud800'), (E, ItemError, 'surrogate')),
    ('forget nothing matches', lambda s, t: run_command(s, ME, '/forget 존재하지않는말'), (NOTOK, '')),
    ('remember surrogate command', lambda s, t: run_command(s, ME, '/remember 기억 \udc00'), (E, ItemError, 'surrogate')),
    ('usermodel bad sub', lambda s, t: run_command(s, ME, '/usermodel delete'), (NOTOK, '')),
    ('patterns forget missing', lambda s, t: run_command(s, ME, '/patterns forget 없는패턴'), (NOTOK, '')),
    # --- histories
    ('history not a list', lambda s, t: s.observe(ME, 'hello'), (E, MemoryInputError, 'history')),
    ('history tool only', lambda s, t: s.observe(ME, [{'role': 'tool', 'tool_call_id': 'x', 'content': 'r'}]), (E, MemoryInputError, 'tool')),
    ('record turn without answer', lambda s, t: s.record_turn(ME, [U('질문')]), (E, MemoryInputError, 'no answer')),
    # --- forget and the store API
    ('forget query and ids', lambda s, t: s.forget(ME, query='서울', ids=['x']), (E, MemoryInputError, 'exactly one')),
    ('forget neither', lambda s, t: s.forget(ME), (E, MemoryInputError, 'exactly one')),
    ('forget ids a string', lambda s, t: s.forget(ME, ids='turn-1'), (E, ScopeError, 'ids must be a list')),
    ('forget query 1 char', lambda s, t: s.forget(ME, query='서'), (E, ItemError, 'at least 2')),
    ('forget user ../x', lambda s, t: s.forget_user('a\nb'), (E, ScopeError, 'user_id')),
    ('delete ids a string', lambda s, t: s.store.delete(ME, 'abc'), (E, ScopeError, 'ids must be a list')),
    ('delete user_request not bool', lambda s, t: s.store.delete(ME, ['x'], user_request=1), (E, MemoryInputError, 'user_request')),
    ('karen deletes main pattern', lambda s, t: s.store.delete_where(KAREN, Filter(layers='pdm')), (OK, lambda r: r == 0)),
    ('update patch empty', lambda s, t: s.store.update_metadata(ME, ['x'], {}), (E, ItemError, 'non-empty')),
    # --- the tool call
    ('tool args not JSON', lambda s, t: s.handle_tool_call(ME, {'function': {'name': 'remember_task_pattern', 'arguments': '{bad'}}),
     (OK, lambda r: r.startswith('error:') and 'nothing was saved' in r)),
    ('tool args unknown key', lambda s, t: s.handle_tool_call(ME, {'function': {'name': 'remember_task_pattern', 'arguments':
     {'name': 'x', 'when': 'y', 'steps': ['a'], 'keywords': ['k'], 'agent_id': 'karen'}}}),
     (OK, lambda r: r.startswith('error:') and 'unknown agent_id' in r)),
    ('tool args surrogate', lambda s, t: s.handle_tool_call(ME, {'function': {'name': 'remember_task_pattern', 'arguments':
     {'name': '\ud800', 'when': 'y', 'steps': ['a'], 'keywords': ['k']}}}), (OK, lambda r: r.startswith('error:'))),
]


def test_catalogue_size():
    assert len(CASES) >= 40 and len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize('name,fn,want', CASES, ids=[c[0] for c in CASES])
def test_bad_input(env, name, fn, want):
    svc, team = env
    before = snapshot(svc)
    if want[0] == E:
        with pytest.raises(want[1], match=want[2]) as ei: fn(svc, team)
        assert isinstance(ei.value, MemoryInputError)                     # the bad-input family, never a raw error
    else:
        r = fn(svc, team)
        if want[0] == NOTOK: assert r.ok is False and want[1] in r.text
        elif len(want) > 1: assert want[1](r), r
    assert snapshot(svc) == before, name                                  # the store is intact
