"Property tests for jarvis_memory.lexical (issue 13 item 2; SPEC S-1.6, S-5.3): incremental = rebuilt, the read clause holds, particles never block."
import random, time

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from jarvis_memory.lexical import LexicalError, LexicalIndex, LexicalIndexes, lexical_terms

# Short memories from a small mixed vocabulary, so that terms repeat across documents (idf and length norms matter).
KO = '서울 부산 제주 회의 일정 프로젝트 하은 딸 생일 선물 공원 산책 김치찌개 여행 병원 약속 친구 요가 영화'.split()
EN = 'meeting project schedule birthday gift park walk trip flight doctor friend yoga painting camping'.split()
word = st.one_of(st.sampled_from(KO).flatmap(lambda w: st.sampled_from([w, w + '에서', w + '도', w + '만'])),
                 st.sampled_from(EN).flatmap(lambda w: st.sampled_from([w, w + 's', w.capitalize()])))
doc_text = st.lists(word, min_size=0, max_size=8).map(' '.join)
doc_id = st.sampled_from([f'm{i}' for i in range(12)])
op = st.one_of(st.tuples(st.just('add'), doc_id, doc_text), st.tuples(st.just('delete'), doc_id, st.just('')))
query = st.lists(word, min_size=1, max_size=4).map(' '.join)


def apply(ops):
    ix, final = LexicalIndex(), {}
    for kind, d, text in ops:
        if kind == 'add': ix.add(d, text); final[d] = text
        else: assert ix.delete(d) == (d in final); final.pop(d, None)
    return ix, final


@hsettings(max_examples=150, deadline=None)
@given(st.lists(op, max_size=30), st.lists(query, min_size=1, max_size=3))
def test_incremental_equals_rebuilt(ops, queries):
    ix, final = apply(ops)
    fresh = LexicalIndex()
    for d in sorted(final): fresh.add(d, final[d])            # another order than the writes came in
    bulk = LexicalIndex()
    bulk.add_many(sorted(final.items(), reverse=True))        # an empty index filled in bulk (a mirror rebuilt on start)
    assert sorted(ix.ids) == sorted(fresh.ids) == sorted(bulk.ids) == sorted(final)
    for q in queries:
        got = ix.search(q, k=20)
        assert got == fresh.search(q, k=20) == bulk.search(q, k=20)   # same ids, same order, the very same floats
        for d in final: assert ix.score(q, d) == fresh.score(q, d) == bulk.score(q, d)
        asked = [*sorted(final, reverse=True), 'not-indexed', *sorted(final)[:2]]   # any order, an unknown id, repeats
        assert ix.scores(q, asked) == {d: ix.score(q, d) for d in final if ix.score(q, d) > 0}   # one pass = one at a time
        assert ix.scores(q, asked) == dict(ix.search(q, k=len(final) or 1))   # the few asked = the whole ranking, same floats
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
        assert all(s > 0 for _, s in got)


@hsettings(max_examples=150, deadline=None)
@given(st.lists(op, max_size=30), query, st.sets(doc_id), st.integers(1, 12))
def test_filtered_search_is_the_allowed_part_of_the_ranking(ops, q, allowed, k):
    ix, final = apply(ops)
    asked = []
    got = ix.search(q, k=k, allow=lambda d: asked.append(d) or d in allowed)
    assert all(d in allowed for d, _ in got)                  # never a disallowed id
    full = ix.search(q, k=len(final) or 1)
    assert got == [(d, s) for d, s in full if d in allowed][:k]   # and nothing allowed is lost
    assert len(asked) == len(set(asked))                      # each id asked once



@hsettings(max_examples=150, deadline=None)
@given(st.lists(op, max_size=30), st.lists(op, max_size=20), st.lists(query, min_size=1, max_size=3), st.booleans())
def test_loaded_equals_incremental(before, after, queries, term_major):
    "An index saved with dump_terms and loaded with load_terms (the mirror snapshot's BM25 part) answers exactly as the"
    "original, and stays equal under the same writes and deletes afterwards (its base arrays give way term by term)."
    ix, final = apply(before)
    saved = ix.dump_terms()
    back = LexicalIndex().load_terms(**(saved if term_major else {k: v for k, v in saved.items() if not k.startswith('term_')}))
    for kind, d, text in after:
        if kind == 'add': ix.add(d, text); back.add(d, text); final[d] = text
        else: assert ix.delete(d) == back.delete(d) == (d in final); final.pop(d, None)
    again = LexicalIndex().load_terms(**back.dump_terms())      # a base with holes saved again
    assert sorted(ix.ids) == sorted(back.ids) == sorted(again.ids) == sorted(final)
    for d in final: assert ix.doc_terms(d) == back.doc_terms(d) == again.doc_terms(d)
    for q in queries:
        want = ix.search(q, k=20)
        assert back.search(q, k=20) == again.search(q, k=20) == want
        for d in final: assert ix.score(q, d) == back.score(q, d) == again.score(q, d)

KO_NOUNS = '서울 부산 제주도 하은 민준 지수 김치찌개 요가 강아지 회사 도서관 병원'.split()
KEYS = ['거주지', '이름', '딸 이름', '만난 사람']


def particles_for(noun):
    "Particles that agree with `noun`'s last syllable, plus the name suffix 이 (하은이가) after a consonant."
    coda = (ord(noun[-1]) - 0xAC00) % 28 != 0
    return ['에서', '에', '도', '만', '까지', '부터', '한테', '의', '처럼'] + (
        ['은', '이', '을', '과', '이랑', '이가', '이는', '이도'] if coda else ['는', '가', '를', '와', '랑'])


def facts_index():
    ix = LexicalIndex()
    for i, other in enumerate(KO_NOUNS): ix.add(f'fact{i}', f'{KEYS[i % len(KEYS)]}: {other}')
    return ix


@pytest.mark.parametrize('noun', KO_NOUNS)
def test_particles_do_not_block_a_match(noun):
    # Every agreeing particle, bare or before ?, ! or .: the fact with that noun comes first (S-5.3).
    ix, target = facts_index(), f'fact{KO_NOUNS.index(noun)}'
    for p in particles_for(noun):
        for end in ['', '?', '!', '.']:
            q = noun + p + end
            got = ix.search(q, k=1)
            assert got and got[0][0] == target, (q, lexical_terms(q), got)


def test_print_polite_ending_misses():
    # The polite 요 after a particle ("하은이요?") is sometimes read by Kiwi as a whole predicate with no content
    # term (a language-layer limit, reported): printed, not asserted.
    ix, miss, total = facts_index(), [], 0
    for noun in KO_NOUNS:
        for p in particles_for(noun):
            total += 1
            got = ix.search(noun + p + '요?', k=1)
            if not got or got[0][0] != f'fact{KO_NOUNS.index(noun)}': miss.append(noun + p + '요?')
    print(f"\npolite 요 ending: {len(miss)}/{total} miss: {miss}")


def test_the_spec_examples():
    ix = LexicalIndex()
    ix.add_many([('home', '거주지: 서울'), ('daughter', '딸 이름: 하은'), ('food', '좋아하는 음식: 김치찌개')])
    assert ix.search('서울에서?', k=1)[0][0] == 'home'
    assert ix.search('하은이가', k=1)[0][0] == 'daughter'


def test_users_do_not_share_an_index():
    users = LexicalIndexes()
    users['alice'].add('x', '거주지: 서울')
    assert users['bob'].search('서울') == []
    with pytest.raises(LexicalError, match='user_id'): users[None]


def _synthetic(n):
    rng = random.Random(n)
    for i in range(n):
        if i % 2: yield f'd{i}', f"{i}번째 날 {rng.choice(KO)}에서 {rng.choice(KO)}을 했다. {rng.choice(KO)}도 좋았다."
        else: yield f'd{i}', f"On day {i} we talked about the {rng.choice(EN)} and the {rng.choice(EN)}."


@pytest.mark.parametrize('n', [10_000, 100_000])
def test_print_timing(n, capsys):
    # Printed, never asserted (run with -s to see it). 100k takes ~30 s, nearly all of it Kiwi.
    docs = list(_synthetic(n))
    t0 = time.perf_counter(); terms = [(d, lexical_terms(x)) for d, x in docs]; t1 = time.perf_counter()
    ix = LexicalIndex()
    for d, ts in terms: ix.add_terms(d, ts)
    t2 = time.perf_counter()
    qs = ['서울에서 뭐 했어?', '하은이 생일 선물', 'When was the camping trip?', '요가 약속']
    for q in qs: ix.search(q)
    t3 = time.perf_counter()
    for q in qs * 5: ix.search(q, k=20)
    t4 = time.perf_counter()
    for q in qs * 5: ix.search(q, k=20, allow=lambda d: not d.endswith('7'))
    t5 = time.perf_counter()
    for i in range(200): ix.add(f'new{i}', f'{i}번째 새 메모: 서울 회의')
    for i in range(200): ix.delete(f'new{i}')
    t6 = time.perf_counter()
    with capsys.disabled():
        print(f"\nlexical {n:>7} docs: tokenise {t1 - t0:.1f} s ({1e6 * (t1 - t0) / n:.0f} us/doc), index {t2 - t1:.2f} s, "
              f"query {1000 * (t4 - t3) / 20:.2f} ms, with allow {1000 * (t5 - t4) / 20:.2f} ms, "
              f"write or delete {1000 * (t6 - t5) / 400:.2f} ms")
    assert len(ix) == n
