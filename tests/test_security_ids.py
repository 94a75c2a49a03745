"""Issue 14, finding 4 for every kind of id an agent writes by natural key: no other agent can take it first.

Before the fix only turn ids (and pieces, summaries, journal entries) carried the writing agent's tag. Task patterns,
pattern drafts, extracted facts and procedure drafts kept plain `natural_id`s that any agent of the user could compute,
and the one housing profile per user (S-2.4) could be taken by a row of another layer. In each case a squatting row
made the owner's later write fail, because the store never lets one agent overwrite another agent's episodic or
procedural row. Each test below fails on the code before the fix: there the squat is accepted and the owner's write
raises `ItemError`.

The migration test builds a store the way the code before the fix wrote it (old ids, references to old ids, a user
model file naming them) and checks that `migrate_ids` gives every row the id today's code gives it, references
included."""
from __future__ import annotations
import json

import pytest

from jarvis_memory.scope import MemoryScope, MemoryItem, ItemError, natural_id, owned_id
from jarvis_memory.settings import Settings
from jarvis_memory.store import Filter
from jarvis_memory.chroma import ChromaStore
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.episodes import TurnRecord, turn_id
from jarvis_memory.service import MemoryService, user_model_dir
from jarvis_memory.consolidation import _id_part
from jarvis_memory.llm import FakeLLM

T0 = 1_760_000_000.0
ME, KAREN = MemoryScope('u', 'main', 's1'), MemoryScope('u', 'karen', 'k1')


def service(tmp_path, name='a'):
    s = Settings(path=str(tmp_path / name / 'chroma'), cache_dir=str(tmp_path / name / 'cache'), embedding_provider='hashing')
    return MemoryService(ChromaStore(s, embedder=HashingEmbedder(64)), s, clock=lambda: T0)


def loan_talk(svc):
    "Three successful loan turns of main in which the user says an allergy: one extracted fact and one procedure draft."
    for n in (1, 2, 3):
        svc.record(TurnRecord(ME, n, f'{n}일 대출 이자 계산해줘, 나 땅콩 알레르기 있어', '계산했습니다.', ('loan_calc',), False, at=T0 - 600 + n))


def allergy_llm():
    return FakeLLM(lambda msgs, schema: {'facts': [{'key': '알레르기', 'value': '땅콩 알레르기가 있음', 'importance': 0.9}]})


def squat(svc, ids):
    "KAREN tries to write a row under each of `ids` first (a thought: a row main may never overwrite); returns how many she took."
    took = 0
    for i in ids:
        try: svc.write(KAREN, 'thought', 'squatting', id=i); took += 1
        except ItemError: pass
    return took


def pattern(svc): return [svc.remember_task_pattern(ME, '예산 추천', '예산을 물을 때', ['수입을 묻는다'], ['예산']).id]
def draft(svc): return [svc.draft_pattern_from_failure(ME, '예산 추천', '예산을 물을 때', ['수입을 묻는다'], ['예산'], '수입을 먼저').id]
def consolidation(svc):
    r = svc.consolidate(ME, allergy_llm())
    assert r.complete
    return r.written + r.procedures


@pytest.mark.parametrize('write, take', [(pattern, slice(None)), (draft, slice(None)), (consolidation, slice(0, 1)),
                                         (consolidation, slice(1, 2))],
                         ids=['task pattern', 'pattern draft', 'extracted fact', 'procedure draft'])
def test_owned_ids_cannot_be_taken_first(tmp_path, write, take):
    "KAREN squats the ids of main's next write (learnt from a dry run in another store); main's write still succeeds."
    dry = service(tmp_path, 'dry'); loan_talk(dry)
    ids = write(dry)
    assert len(ids) == (2 if write is consolidation else 1)
    svc = service(tmp_path); loan_talk(svc)
    took = squat(svc, ids[take])
    assert write(svc) == ids                              # raised ItemError before the fix: KAREN's row held the id
    assert {it.agent_id for it in svc.store.get(ME, ids)} == {'main'}
    assert took == 0
    svc.close(); dry.close()


def test_housing_profile_id_cannot_be_taken_by_another_layer(tmp_path):
    "The one shared id left (S-2.4): any agent of the user may write the housing profile, but no other kind of row."
    svc = service(tmp_path)
    hid = natural_id('housing_profile', 'u')
    took = squat(svc, [hid])
    hp = svc.set_housing_profile(ME, '주거 프로필: 전세 2억, 역세권 선호')      # raised ItemError before the fix
    assert [(it.agent_id, it.content) for it in svc.store.get(ME, [hid])] == [('main', hp.content)]
    assert took == 0
    with pytest.raises(ItemError, match='natural housing_profile id'):
        svc.store.put([MemoryItem.new(KAREN.with_session(None), 'task_pattern', 'squatting', id=hid)])
    assert svc.set_housing_profile(KAREN, '주거 프로필: 월세').id == hid          # KAREN's own profile write: fine
    hp = svc.set_housing_profile(ME, '주거 프로필: 전세 2억, 역세권 선호')      # main overwrites it (S-2.4)
    assert [(it.agent_id, it.content) for it in svc.store.get(ME, [hid])] == [('main', hp.content)]
    svc.close()


def test_migrate_ids_moves_an_old_store_with_its_references(tmp_path):
    "A store written before the fix: turns, an extracted fact (superseding another), a procedure draft, a pattern, a"
    "draft, an approved pattern from that draft, and a user model file, all under old ids. After `migrate_ids`, every"
    "row has the id today's code gives it and everything that pointed at an old id points at the new one."
    svc = service(tmp_path)
    u, a, s = 'u', 'main', 's1'
    pscope = ME.with_session(None)
    old_turns = [MemoryItem(id=natural_id('turn', u, a, s, n), user_id=u, agent_id=a, session_id=s, source='turn',
                            content=f'U: {n}일 대출 이자 계산해줘\nA: 계산했습니다.', created_at=T0 - 600 + n,
                            metadata={'turn': n, 'consolidated': True, 'outcome': 'success', 'task_type': 'loan_calc'})
                 for n in (1, 2, 3)]
    fe = old_turns[0].id

    def old_fact(key, value, at, **meta):
        return MemoryItem(id=natural_id('extracted', u, a, fe, _id_part(key), _id_part(value)), user_id=u, agent_id=a,
                          session_id=s, source='extracted', content=f'{key}: {value}', created_at=at,
                          metadata={'from_episode': fe, 'topic': key, **meta})
    newer = old_fact('거주지', '부산', T0 - 100)
    older = old_fact('거주지', '서울', T0 - 500, superseded_by=newer.id)
    newer.metadata['interference'] = [older.id]
    proc = MemoryItem(id=natural_id('procedure', u, a, 'loan_calc'), user_id=u, agent_id=a, source='procedure',
                      content='절차 procedure-loan_calc', created_at=T0,
                      metadata={'status': 'draft', 'name': 'procedure-loan_calc', 'task_type': 'loan_calc',
                                'from_episodes': [t.id for t in old_turns]})
    draft = MemoryItem(id=natural_id('pattern', u, a, '회의'), user_id=u, agent_id=a, source='task_pattern',
                       content='작업 패턴: 회의', created_at=T0, metadata={'name': '회의', 'status': 'draft', 'keywords': ['회의']})
    pattern = MemoryItem(id=natural_id('task_pattern', u, a, '보고서'), user_id=u, agent_id=a, source='task_pattern',
                         content='작업 패턴: 보고서', created_at=T0,
                         metadata={'name': '보고서', 'status': 'approved', 'keywords': ['보고서'], 'from_draft': draft.id})
    karen_fact = MemoryItem.new(KAREN, 'explicit', '메모: 대출 이자', created_at=T0, metadata={'interference': [newer.id]})
    svc.store.put(old_turns + [newer, older, proc, draft, pattern, karen_fact])
    mfile = user_model_dir(svc.settings, u) / 'model.json'
    mfile.parent.mkdir(parents=True)
    mfile.write_text(json.dumps({'summary': '요약', 'memory_ids': [fe, newer.id, karen_fact.id]}), encoding='utf-8')

    # the ids today's code gives these rows (written out here, not taken from the code under test)
    new_turns = [owned_id(a, 'turn', u, s, n) for n in (1, 2, 3)]
    new_fact = lambda v: owned_id(a, 'extracted', u, new_turns[0], _id_part('거주지'), _id_part(v))
    expect = {**dict(zip([t.id for t in old_turns], new_turns)), newer.id: new_fact('부산'), older.id: new_fact('서울'),
              proc.id: owned_id(a, 'procedure', u, 'loan_calc'), draft.id: owned_id(a, 'pattern', u, '회의'),
              pattern.id: owned_id(a, 'task_pattern', u, '보고서')}
    assert new_turns == [turn_id(ME, n) for n in (1, 2, 3)]

    assert svc.migrate_ids(ME) == len(expect)
    rows = {it.id: it for it in svc.store.list(ME, filter=Filter(include_superseded=True), order_by=None)}
    assert set(rows) == set(expect.values()) | {karen_fact.id}
    for old in old_turns + [newer, older, proc, draft, pattern]:
        assert rows[expect[old.id]].content == old.content
    m = lambda i: rows[expect[i]].metadata
    assert m(newer.id)['from_episode'] == m(older.id)['from_episode'] == new_turns[0]
    assert m(older.id)['superseded_by'] == expect[newer.id] and rows[expect[older.id]].superseded
    assert m(newer.id)['interference'] == [expect[older.id]]
    assert m(proc.id)['from_episodes'] == new_turns
    assert m(pattern.id)['from_draft'] == expect[draft.id]
    assert rows[karen_fact.id].metadata['interference'] == [expect[newer.id]]          # another agent's profile fact
    assert json.loads(mfile.read_text(encoding='utf-8'))['memory_ids'] == [new_turns[0], expect[newer.id], karen_fact.id]
    # the migrated store behaves like a new one: the pattern is found by name, the draft is not written twice
    assert svc.forget_pattern(ME, '보고서')
    assert svc.distill_procedures(ME, {'loan_calc'}) == []
    assert svc.migrate_ids(ME) == 0
    svc.close()
