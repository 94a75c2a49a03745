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
    # issue 12: a line that says something and neither points back nor is short stands alone; with no previous
    # exchange the query is the line itself, or nothing when it says nothing; context only ever goes in front
    if prev is None or (alone and not is_deictic(alone, min_chars)): assert q == alone
    elif alone and q: assert q.endswith(alone)
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


# --- content terms (issue 12 item 1, issue 17 item 1): what a line says, by part of speech ---
from jarvis_memory.language import content_count, content_terms, is_contentless

# Endings and particles Kiwi splits off; none of them may ever come back as a content term.
_ENDINGS = ('요', '어요', '아요', '에요', '예요', '이에요', '습니다', 'ㅂ니다', '세요', '으세요', '다', '지', '죠', '네요',
            '고', '서', '어서', '는데', '지만', '니까', '어', '아', '야', '자')

def _nouns():
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / 'data' / 'ko_nouns.txt'
    return [l.strip() for l in path.read_text(encoding='utf-8').splitlines() if l.strip() and not l.startswith('#')]
_VERBS = ('먹어요', '갔어요', '좋아해요', '아파요', '살아요', '다녀요', '마셨어요', '일해요', '키워요', '나았어요', '싫어해요',
          '배우고', '만들었는데', '걸어서', '읽었지만', '쉬니까', '먹자', '가세요', '아팠습니다', '이사했다')
# Real words with real particles and endings: what Kiwi can be held to. (Random syllables are read in random ways.)
ko_real_word = st.one_of(st.tuples(st.sampled_from(_nouns()), st.sampled_from(('',) + PARTICLES)).map(''.join),
                         st.sampled_from(_VERBS))
ko_sentence = st.lists(st.tuples(ko_real_word, st.sampled_from([' ', '? ', ', ', '. ', '! '])).map(''.join),
                       max_size=12).map(''.join)
space = st.text(st.sampled_from(' \t\n\u3000'), max_size=4)


@hsettings(max_examples=300, deadline=None)
@given(st.one_of(ko_sentence, text))
def test_content_terms_shape(s):
    terms = content_terms(s)
    assert len(terms) == len(set(terms))
    for t in terms: assert t and t == t.lower() and t == strip_punct(t) and not any(c.isspace() for c in t)
    assert 0 <= content_count(s) <= len(terms) and is_contentless(s) == (content_count(s) == 0)


@hsettings(max_examples=300, deadline=None)
@given(ko_sentence)
def test_content_terms_are_never_particles_or_endings(s):
    for t in content_terms(s):
        # A one-syllable term may be a real stem or noun (가 'go', 도 'province'); longer particles and endings never are.
        assert len(t) == 1 or (t not in PARTICLES and t not in _ENDINGS), (s, t)
        assert not (len(t) > 1 and t[-1] in '요' and t[:-1] in ('어', '아', '에', '세', '네', '이에', '예')), (s, t)


@hsettings(max_examples=200, deadline=None)
@given(st.one_of(ko_sentence, text), space, space)
def test_content_terms_stable_under_surrounding_whitespace(s, left, right):
    assert content_terms(left + s + right) == content_terms(s)
    assert is_contentless(left + s + right) == is_contentless(s)


@hsettings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(['네', '예', '응', '어', '아', '음', '여보세요', '그럼요', '네네', '예예', 'ok', 'okay', 'thanks',
                                 'yes', 'yeah', 'hmm', '감사합니다', '고마워요', '안녕하세요']), min_size=1, max_size=5),
       st.sampled_from(['', '.', '?', '!', '~', '...']))
def test_acknowledgements_in_any_order_say_nothing(words, end):
    # Any sequence of interjections and greetings stays contentless: the rule is by part of speech, not by utterance.
    assert is_contentless(' '.join(words) + end), (words, end)


# Latin-script text skips Kiwi (issue 15: an English agent never pays its start); its terms must be those Kiwi gives.
latin_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x24F), max_size=200)
en_words = st.lists(st.sampled_from(["Caroline's", 'café', 'trip', '2023-05-07', '10:30', 'U.S.A.', "can't", 'e-mail',
                                     '(test)', 'a', 'I', 'résumé', '#tag', '100%', 'Mr.', "O'Neil", '—', 'go!']), max_size=25).map(' '.join)


def _kiwi_terms(s):
    "query_terms as Kiwi alone would give them (the path the Latin shortcut replaces)."
    from jarvis_memory.language import _word_spans, _keep_term, clean_text
    s = clean_text(s[:1000])
    out = {}
    for stem, noun in KiwiStripper().stems_at(s, _word_spans(s)):
        t = strip_punct(stem).lower()
        if _keep_term(t, noun, 'kiwi'): out.setdefault(t, None)
    return list(out)


@hsettings(max_examples=300, deadline=None)
@given(st.one_of(latin_text, en_words))
def test_latin_text_terms_are_kiwis(s):
    assert query_terms(s) == _kiwi_terms(s), s


def test_english_text_never_loads_kiwi():
    import subprocess, sys
    code = ("import jarvis_memory.language as L\n"
            "assert L.query_terms(\"When did Caroline's café trip start? 2023-05-07\") == [\"caroline's\", 'café', 'trip', 'start', '2023-05-07']\n"
            "L.content_terms('She painted a lake sunrise last year.')\n"
            "assert L._KIWI is None, 'Kiwi was loaded for English text'\n"
            "L.query_terms('서울에서?'); assert L._KIWI is not None\n")
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]


@hsettings(max_examples=500, deadline=None)
@given(st.text(st.one_of(st.sampled_from('aZé ÿ가힣ㄱㅏ\u1100\u11ff\u3130\u318f\u024f\u0250.1 '), st.characters()), max_size=60))
def test_letter_count_is_one_match_per_letter(s):
    # `_letters` counts runs of letters (cheaper); the count is still one per letter.
    from jarvis_memory.language import _letters, _HANGUL_RE, _LATIN_RE
    assert _letters(s) == (len(_HANGUL_RE.findall(s)), len(_LATIN_RE.findall(s)))
