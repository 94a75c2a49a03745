"Property tests for jarvis_memory.language (SPEC S-5, S-6.4, S-6.6, S-9.2, S-11.3): arbitrary text never crashes."
import json

from hypothesis import given, settings as hsettings, strategies as st

from jarvis_memory.language import (EN_STOPWORDS, PARTICLES, KiwiStripper, contains_term, conversation_language,
                                    is_deictic, pattern_hint_wanted, points_back, query_terms, recall_query,
                                    strip_particles_list, strip_punct, term_share, text_language, used_in_answer)

# Any code point, including controls and lone surrogates, plus Korean-heavy text built from syllables and particles.
any_text = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=300)
syllable = st.integers(0xAC00, 0xD7A3).map(chr)
ko_word = st.tuples(st.text(syllable, min_size=1, max_size=4), st.sampled_from(('',) + PARTICLES)).map(''.join)
ko_text = st.lists(st.tuples(ko_word, st.sampled_from([' ', '? ', ', ', '\n', '. '])).map(''.join), max_size=30).map(''.join)
text = st.one_of(any_text, ko_text)


@hsettings(max_examples=300, deadline=None)
@given(text, st.sampled_from(['kiwi', 'list']))
def test_query_terms_shape(s, analyser):
    terms = query_terms(s, analyser=analyser)
    assert len(terms) == len(set(terms))
    for t in terms:
        assert t and t == t.lower() and not any(c.isspace() for c in t)
        assert t == strip_punct(t) and t not in EN_STOPWORDS


@hsettings(max_examples=300, deadline=None)
@given(ko_text)
def test_terms_are_found_in_their_own_text(s):
    # Every term is a piece of the text it came from, so a stored copy of the text is always a keyword hit (S-5.4).
    for analyser in ('kiwi', 'list'):
        terms = query_terms(s, analyser=analyser)
        assert all(contains_term(t, s) for t in terms)
        assert term_share(terms, s) == (1.0 if terms else 0.0)


@hsettings(max_examples=300, deadline=None)
@given(st.text(syllable, min_size=1, max_size=6), st.sampled_from(PARTICLES))
def test_list_stripper_only_removes_a_suffix(stem, particle):
    w = stem + particle
    out = strip_particles_list(w)
    assert w.startswith(out) and len(out) >= 1
    assert strip_particles_list(w, agree=False, min_stem=len(w)) == w


@hsettings(max_examples=200, deadline=None)
@given(st.lists(st.text(syllable, min_size=1, max_size=5), min_size=1, max_size=20))
def test_kiwi_stems_are_prefixes(words):
    for w, (stem, _) in zip(words, KiwiStripper().stems(words)):
        assert w.startswith(stem)


@hsettings(max_examples=300, deadline=None)
@given(text, st.one_of(st.none(), st.tuples(st.one_of(st.none(), text), st.one_of(st.none(), text))),
       st.integers(1, 300), st.integers(0, 20))
def test_recall_query_bounds(u, prev, query_chars, min_chars):
    q = recall_query(u, prev, query_chars=query_chars, min_chars=min_chars)
    alone = recall_query(u, query_chars=query_chars, min_chars=min_chars)
    lines = q.split('\n') if q else []
    assert len(lines) <= 3 and all(len(l) <= query_chars for l in lines)
    if prev is None or not is_deictic(alone, min_chars): assert q == alone
    else: assert q.endswith(alone)
    assert isinstance(points_back(u), bool) and isinstance(pattern_hint_wanted(u), bool)


@hsettings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(['user', 'assistant', 'system', 'tool']),
                          st.one_of(text, st.none(), st.builds(json.dumps, st.dictionaries(text, text, max_size=3)))),
                max_size=6))
def test_conversation_language_total(msgs):
    lang = conversation_language([{'role': r, 'content': c} for r, c in msgs])
    assert lang in ('ko', 'en')


@hsettings(max_examples=200, deadline=None)
@given(text, text)
def test_used_in_answer_self(a, b):
    # An item is always "used" by an answer that quotes it whole (when it has any words at all).
    assert used_in_answer(a, a + ' ' + b) == bool(query_terms(a, max_chars=4000))
    assert text_language(a) in ('ko', 'en')


def test_query_terms_from_many_threads():
    # The service may recall from several threads at once; the shared Kiwi instance must give the same answers.
    from concurrent.futures import ThreadPoolExecutor
    from jarvis_memory.language import _terms
    texts = [f'{i}번째 질문: 서울에서 중요도 설정을 바꾸려면 어떻게 해야 하나요? 회의록{i}도 보여줘' for i in range(400)]
    want = [_terms.__wrapped__(t, 'kiwi', 1000) for t in texts]
    with ThreadPoolExecutor(8) as ex:
        got = list(ex.map(lambda t: _terms.__wrapped__(t, 'kiwi', 1000), texts))
    assert got == want
