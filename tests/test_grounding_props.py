"Property tests for jarvis_memory.grounding (issue 17; SPEC S-7): total on any text, and the grounding rules hold by construction."
from hypothesis import assume, given, settings as hsettings, strategies as st

from jarvis_memory.grounding import (KEYS, FACT_KINDS, Reason, TAXONOMY, canonical_key, fact_kind, grounded, is_negative,
                                     load_facts, score_extraction)
from jarvis_memory.language import content_terms, is_contentless

any_text = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=120)
syllable = st.integers(0xAC00, 0xD7A3).map(chr)
ko_text = st.lists(st.text(syllable, min_size=1, max_size=4), max_size=8).map(' '.join)
text = st.one_of(any_text, ko_text)
SENTENCES = ['허리가 아파서 병원에 다녀왔어요', '서울에서 딸이랑 같이 살아요', '고양이 나비는 열두 살이에요', '매주 화요일에 수영을 배워요',
             '커피는 디카페인만 마셔요', 'I moved to Busan for a new teaching job', 'My daughter Grace takes me shopping',
             'I work night shifts at the hospital', 'Our dog Buster loves the beach']
ACKS = ['네', '예', '응', '여보세요', '그럼요', '네네', 'ok', 'okay', 'thanks', 'yes', 'hmm', '감사합니다', '고마워요']
keys = st.one_of(st.sampled_from([t.ko for t in TAXONOMY] + [t.en for t in TAXONOMY]), text)


@hsettings(max_examples=200, deadline=None)
@given(keys, text, text, st.sampled_from([None, 'ko', 'en']))
def test_grounded_is_total(key, value, utterance, lang):
    g = grounded(key, value, utterance, lang)
    assert isinstance(g.reason, Reason) and g.ok == (g.reason is Reason.GROUNDED)
    assert 0.0 <= g.support <= 1.0
    assert canonical_key(key, 'ko') in KEYS['ko'] and canonical_key(key, 'en') in KEYS['en']
    assert fact_kind(key, value) in FACT_KINDS


@hsettings(max_examples=150, deadline=None)
@given(keys, st.one_of(text, st.sampled_from(SENTENCES)), st.lists(st.sampled_from(ACKS), min_size=1, max_size=4),
       st.sampled_from(['', '.', '?', '!']), st.one_of(st.none(), st.sampled_from(SENTENCES)))
def test_no_fact_from_a_contentless_utterance(key, value, acks, end, asked):
    # Whatever the value and whatever the agent asked, "네 네." grounds nothing (issue 17: "이름: 네", "직업: 미용사" from "네").
    g = grounded(key, value, ' '.join(acks) + end, asked=asked)
    assert not g.ok and g.reason is Reason.CONTENTLESS_SOURCE


@hsettings(max_examples=150, deadline=None)
@given(st.sampled_from(SENTENCES), st.data())
def test_the_users_own_words_are_grounded(utterance, data):
    # A value made of content terms of the utterance itself is supported (under any key but 'name', which asks for more).
    terms = content_terms(utterance)
    chosen = data.draw(st.lists(st.sampled_from(terms), min_size=1, max_size=len(terms), unique=True))
    value = ' '.join(chosen)
    assume(not is_negative(value) and not is_contentless(value))     # a bare stem alone ('아프') is not a value that says anything
    key = data.draw(st.sampled_from([t.ko for t in TAXONOMY[:8]] + [t.en for t in TAXONOMY[:8]]))
    g = grounded(key, value, utterance)
    assert g.ok, (key, value, utterance, g)


@hsettings(max_examples=100, deadline=None)
@given(st.sampled_from(SENTENCES), st.sampled_from(['알레르기', '건강', 'allergy', 'health']),
       st.sampled_from(['없음', '없어요', 'none', 'no allergies', '알레르기 없음']))
def test_negatives_need_a_negation(utterance, key, value):
    # None of SENTENCES negates anything, so a negative value from them is always invented.
    assert is_negative(value) and not is_negative(utterance)
    assert grounded(key, value, utterance).reason in (Reason.INVENTED_NEGATIVE, Reason.UNSUPPORTED)
    assert not grounded(key, value, utterance).ok


_DOC = load_facts()
_GOLD = {s['id']: s['facts'] for s in _DOC['sessions']}


@hsettings(max_examples=60, deadline=None)
@given(st.data())
def test_scores_are_bounded_and_monotone(data):
    # Any subset of the gold facts is all precise; adding facts never lowers the matched count.
    sub = {sid: data.draw(st.lists(st.sampled_from(fs), unique_by=lambda f: (f['key'], f['value']), max_size=len(fs)))
           for sid, fs in _GOLD.items() if fs}
    sc = score_extraction(sub, _DOC)
    for x in sc.values():
        assert 0.0 <= x.recall <= 1.0 and (x.predicted == 0 or x.precision == 1.0)
    full = score_extraction(_GOLD, _DOC)
    assert all(full[l].matched >= sc[l].matched for l in sc)


# --- issue 17 items 2-4: keys, kinds, importance, supersession; and consolidation writes only grounded facts ---

from jarvis_memory.grounding import (PASSING_STEP, MODEL_TIE, TOPIC_IMPORTANCE, evidenced_key, fact_importance, supersedes)


@hsettings(max_examples=150, deadline=None)
@given(keys, text, keys, text)
def test_a_passing_fact_never_replaces_a_lasting_one(k1, v1, k2, v2):
    # "다음 달 대전으로 이사함" (a plan) must not hide "수원에 삶" (where the user lives now), whatever the words.
    assert supersedes((k1, v1, 'lasting'), (k2, v2, 'passing')) is False
    assert isinstance(supersedes((k1, v1, 'passing'), (k2, v2, 'lasting')), bool)


@hsettings(max_examples=200, deadline=None)
@given(keys, keys, st.sampled_from(FACT_KINDS), st.one_of(st.none(), st.floats(0, 1)), st.one_of(st.none(), st.floats(0, 1)))
def test_the_models_number_never_crosses_a_tier(k1, k2, kind, m1, m2):
    # Importance comes from topic and kind; the model's number (or its absence) only breaks ties.
    a, b = fact_importance(k1, kind, m1), fact_importance(k2, kind, m2)
    base = lambda k: TOPIC_IMPORTANCE[canonical_key(k, 'en')] - (PASSING_STEP if kind == 'passing' else 0)
    assert abs(a - base(k1)) <= MODEL_TIE + 1e-9 and 0.0 <= a <= 1.0
    if base(k1) > base(k2) + 1e-9: assert a > b


@hsettings(max_examples=150, deadline=None)
@given(st.sampled_from(ACKS + ['...', '!', '']), keys, st.sampled_from(SENTENCES))
def test_a_value_that_says_nothing_is_never_grounded(value, key, utterance):
    # "이름: 네" from "내 이름은 …": the key's word in the utterance must not ground an empty value.
    assume(not is_negative(value))
    assert not grounded(key, value, utterance).ok


@hsettings(max_examples=150, deadline=None)
@given(st.sampled_from(SENTENCES), text)
def test_an_allergy_the_user_never_named_is_rekeyed(utterance, value):
    # None of SENTENCES names an allergy or a reaction, so an 'allergy' fact from them never stays one.
    assume(not any(w in value.lower() for w in ('알레르', '알러지', 'allerg', '두드러기', 'hive', 'swell', 'itch', 'rash', '붓', '가렵', '간지럽', '발진', 'anaphyl', 'intoleran', '과민')))
    assert evidenced_key('알레르기', value, utterance, 'ko') != '알레르기'
    assert evidenced_key('allergy', value, utterance, 'en') != 'allergy'


import json, tempfile
from jarvis_memory.chroma import ChromaStore
from jarvis_memory.consolidation import Consolidation, ground_fact
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.episodes import TurnRecord, turn_text
from jarvis_memory.llm import FakeLLM
from jarvis_memory.scope import MemoryScope
from jarvis_memory.settings import Settings
from jarvis_memory.store import Filter

NEGATIVES = ['없음', '없어요', '알레르기 없음', 'none', 'no allergies', 'never smoked', '술 안 마심']
fact = st.fixed_dictionaries({'key': keys, 'value': st.one_of(st.sampled_from(SENTENCES + ACKS + NEGATIVES), text),
                              'importance': st.one_of(st.floats(0.5, 1), st.none())})


@hsettings(max_examples=12, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(SENTENCES), st.sampled_from(ACKS)), min_size=1, max_size=5),
       st.lists(fact, max_size=6))
def test_consolidation_writes_only_grounded_facts(utterances, facts):
    # Whatever the model answers, what consolidation writes is grounded in the turn it points at: no fact from a
    # contentless turn, no negative (no utterance here negates anything), and every other fact is in the report
    # with its reason (issue 17, done-when).
    with tempfile.TemporaryDirectory() as d:
        s = Settings(path=d, embedding_provider='hashing')
        core = Consolidation(ChromaStore(s, embedder=HashingEmbedder()), s, clock=lambda: 2e9)
        sc = MemoryScope('p', 'main', 's')
        eps = {core.record(TurnRecord(sc, n, u, '네.', at=1e9 + 60 * n))[0].id: u for n, u in enumerate(utterances, 1)}
        r = core.consolidate(sc, FakeLLM([{'facts': facts}]), session_id='s')
        written = core.store.list(sc, filter=Filter(sources=('extracted',), include_superseded=True), order_by=None)
        for f in written:
            utt = eps[f.metadata['from_episode']]
            assert not is_contentless(utt), (f.content, utt)
            assert f.metadata['grounded'] is True and f.metadata['fact_kind'] in FACT_KINDS
            assert not is_negative(f.content.split(':', 1)[1]), f.content
        g = r.groups[0]
        assert len(g.checked) == len(g.written) + len(g.unchanged) + sum(1 for c in g.checked if c['reason'] != 'grounded')
        assert all(c['reason'] in {x.value for x in Reason} for c in g.checked)
        core.close()


# --- grounding against what the user states, who a fact is about, and keys the user never said (issue 17) ---

QUESTIONS_EN = ['are there strobe effects at her concerts?', 'can you find tickets for the London show?',
                'what do you think of strategy board games?', 'could you recommend a quiet ramen place?',
                'did you watch the Liverpool match?']
REQUESTS_KO = ['고객사 미팅 메일 초안 써줘.', '보고서 요약해 줘.', '맛집 추천해줘.', '축의금 얼마가 적당해?', '회의 자료 정리해 주세요.']


@hsettings(max_examples=60, deadline=None)
@given(st.sampled_from(SENTENCES), st.sampled_from(QUESTIONS_EN + REQUESTS_KO), st.data())
def test_what_the_user_asks_is_no_fact(statement, asked_for, data):
    # Words only in the user's question or request (no date, no relative) are what they want, not what they are:
    # "strobe effects at her concerts", "고객사 미팅 메일". Grounding in the whole line would accept them.
    from jarvis_memory.grounding import same_term
    utterance = f'{statement}. {asked_for}'
    own = content_terms(statement)
    terms = [t for t in content_terms(asked_for) if not any(same_term(t, o) for o in own)]
    assume(len(terms) >= 2)
    value = ' '.join(data.draw(st.lists(st.sampled_from(terms), min_size=2, max_size=len(terms), unique=True)))
    assume(not is_negative(value) and not is_contentless(value))          # (none of these asks names a date or a relative)
    key = data.draw(st.sampled_from(['취향', '기타', 'preference', 'other', '메모']))
    g = grounded(key, value, utterance)
    assert not g.ok, (key, value, utterance, g)
    assert g.reason.value in ('request', 'unsupported'), (key, value, utterance, g)


ASKS = ['what do you think of strategy board games?', 'did you watch the Liverpool match?', 'Have you ever tried it?',
        '거기 날씨 어때요?', '주말에 뭐 하세요?']
TO_LISTENER = ['Looks like your kids are having a great time!', 'Your car project sounds amazing.', "You're so talented!",
               '네가 만든 케이크 정말 맛있다.']


@hsettings(max_examples=80, deadline=None)
@given(st.sampled_from(SENTENCES), st.lists(st.sampled_from(ASKS + TO_LISTENER), min_size=1, max_size=2), st.booleans(),
       st.sampled_from(['취향', '기타', 'preference', 'other', 'health', '건강']))
def test_a_value_keeps_what_the_speaker_states(statement, others, first, key):
    # The model copies whole lines: "Wow, that's awesome! What do you love most about camping?". What a value asks and
    # what it says of the listener are no facts of the speaker; what it states of them is kept, word for word.
    from jarvis_memory.grounding import repair, without_address, without_questions
    parts = [f'{statement}.', *others] if not first else [*others, f'{statement}.']
    value = ' '.join(parts)
    own = without_address(without_questions(value))
    assert set(content_terms(statement)) <= set(content_terms(own)), (value, own)
    assert '?' not in own and not any(w in own.lower().split() for w in ('you', 'your', "you're", '네가'))
    assert repair(key, value, value).value.count('?') == 0
    only_theirs = ' '.join(others)                                   # a value with nothing of the speaker's is no fact
    assert not grounded(key, only_theirs, f'{statement}. {only_theirs}').ok


ALLERGENS = ['sesame', 'peanuts', 'shellfish', 'penicillin', 'pollen', 'latex', '땅콩', '복숭아', '갑각류', '새우', '메밀']


@hsettings(max_examples=60, deadline=None)
@given(st.sampled_from(ALLERGENS), st.sampled_from(ALLERGENS))
def test_an_allergy_names_the_users_allergen(said, written):
    # "allergy: seeds" from "I'm allergic to sesame": half the words match and the allergen is wrong.
    assume(said != written and said.isascii() == written.isascii())
    utt = f"I'm allergic to {said}." if said.isascii() else f'나 {said} 알레르기 있어.'
    value = f'allergic to {written}' if said.isascii() else f'{written} 알레르기'
    assert not grounded('allergy' if said.isascii() else '알레르기', value, utt).ok
    assert grounded('allergy' if said.isascii() else '알레르기', value.replace(written, said), utt).ok


THIRD = ['나비가', '민준이가', '아드님이', '강아지가', '손주가']
REPLIES = ['열두 살이요.', '내년 봄에요.', '다음 달이요.', '서울이요.', '부산 공장이요.']
FREE_KEYS = ['연령', '나의 생일', '직급', '소요 기간', '나이대']


@hsettings(max_examples=60, deadline=None)
@given(st.sampled_from(THIRD), st.sampled_from(['몇 살이에요?', '언제 와요?', '어디 있어요?']), st.sampled_from(REPLIES),
       st.sampled_from(FREE_KEYS))
def test_a_short_reply_about_someone_else_keeps_no_invented_key(who, q, reply, key):
    # "연령: 열두 살이요" answering "나비가 몇 살이에요?": the reply has no subject of its own, the question is about
    # someone else, and the key is the model's guess. A key the question asked, or a subject of the user's, is kept.
    from jarvis_memory.grounding import key_terms
    assume(not any(w in q for w in key_terms(key)))
    value = reply.rstrip('.').removesuffix('요').removesuffix('이')
    g = grounded(key, value, reply, 'ko', asked=f'{who} {q}')
    assert not g.ok, (key, value, reply, g)
    assert g.reason.value in ('invented_key', 'unsupported', 'contentless_value'), (key, value, reply, g)
    assert grounded(key, value, f'저는 {reply}', 'ko', asked=f'{who} {q}').reason.value != 'invented_key'


PEOPLE = ['아들은', '딸은', '며느리가', '남편은', '동생이', '할머니는']
PREDICATES = ['미국에 살아요', '명절에만 와요', '커피를 안 마셔요', '주말마다 등산 가요', '서울에서 일해요']


@hsettings(max_examples=40, deadline=None)
@given(st.sampled_from(PEOPLE), st.sampled_from(PREDICATES))
def test_a_value_gets_back_the_subject_the_user_said(subject, predicate):
    # Korean drops subjects; the model's value "미국에 살아요" from "아들은 미국에 살아요" reads as the user's own fact.
    from jarvis_memory.grounding import repair
    r = repair('기타 정보', predicate, f'{subject} {predicate}.', 'ko')
    noun = subject[:-1]
    assert r.value.startswith(noun) and 'subject_added' in r.repairs, r
    assert r.topic == '가족', r                                   # a relative is named: the fact is about family
    assert noun not in repair('기타 정보', predicate, f'저는 {predicate}.', 'ko').value     # 저: the user, nothing to add


@hsettings(max_examples=10, deadline=None)
@given(st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=3),
       st.lists(st.tuples(st.sampled_from(SENTENCES), st.sampled_from(['key', 'value', 'importance', None])), min_size=1, max_size=4,
                unique_by=lambda x: x[0]))
def test_an_answer_missing_a_field_loses_only_that_fact(utterances, facts):
    # Issue 17 item 7: a fact without importance is repaired (written from its topic and kind), one without key or value
    # is dropped with its reason; the rest of the answer, and the session, stay. Nothing is dropped silently.
    answer = []
    for s, drop in facts:
        f = {'key': '기타' if any('\uac00' <= c <= '\ud7a3' for c in s) else 'other', 'value': s, 'importance': 0.8}
        if drop: f.pop(drop)
        answer.append(f)
    with tempfile.TemporaryDirectory() as d:
        s = Settings(path=d, embedding_provider='hashing')
        core = Consolidation(ChromaStore(s, embedder=HashingEmbedder()), s, clock=lambda: 2e9)
        sc = MemoryScope('p', 'main', 's')
        for n, u in enumerate(utterances, 1): core.record(TurnRecord(sc, n, u, '네.', at=1e9 + 60 * n))
        r = core.consolidate(sc, FakeLLM([json.dumps({'facts': answer}, ensure_ascii=False)]), session_id='s')
        g = r.groups[0]
        assert g.status == 'done' and r.complete, str(r)                           # the session is consolidated, not lost
        no_field = [f for f in answer if 'key' not in f or 'value' not in f]
        assert sorted(x for _, x in g.dropped if x in ('no key', 'no value')) == sorted(
            'no key' if 'key' not in f else 'no value' for f in no_field)
        repaired = [f for f in answer if 'importance' not in f and 'key' in f and 'value' in f]
        assert sum(x == 'no importance' for _, x in g.repaired) == len(repaired)
        assert len(g.checked) == len(answer) - len(no_field)                     # every other fact was judged
        assert all(d[1] for d in g.dropped)                                        # every drop says why
        core.close()
