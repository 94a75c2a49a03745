"""Header neutralising (nbs/07_render.ipynb, issue 14): the fast paths give the full NFKC match's answer."""
from __future__ import annotations
import sys, unicodedata

from hypothesis import given, settings as hsettings, strategies as st

from jarvis_memory.render import (HEADERS, _CLOSE, _COMPAT, _OPEN, _plain, _re_label, _HEAD_KEYS, looks_like_header,
                                  neutralise_headers)


def reference(line: str) -> bool:
    "The full match, with no shortcut: NFKC of the line without format characters, brackets squared, stripped."
    p = _plain(line)
    return bool(_re_label.match(p)) or p.casefold().startswith(_HEAD_KEYS)


def test_compat_brackets_are_every_code_point_nfkc_makes_a_bracket():
    # Derived again from this Python's Unicode tables: a newer Unicode with another such character fails here.
    found = {chr(cp) for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp < 0xE000 and chr(cp) not in _OPEN + _CLOSE
             and any(b in unicodedata.normalize('NFKC', chr(cp)) for b in _OPEN + _CLOSE)}
    assert found == set(_COMPAT), sorted(map(hex, map(ord, found ^ set(_COMPAT))))


pieces = st.sampled_from([*HEADERS, *_OPEN, *_CLOSE, *_COMPAT, ' ', '\u3000', '\u00a0', '\u200b', '\ufeff', '\u00ad',
                          '\u0301', 'Core', 'facts', '핵심 사실', 'x', '- ', '\t', 'ｃｏｒｅ', '⑴'])
lines = st.lists(st.one_of(pieces, st.text(max_size=4)), max_size=8).map(''.join)


@hsettings(max_examples=3000, deadline=None)
@given(lines)
def test_fast_answer_is_the_full_match(line):
    assert looks_like_header(line) == reference(line)


BREAKS = ['\n', '\r\n', '\r', '\x0b', '\x0c', '\x1c', '\x85', '\u2028', '\u2029']   # every line break str.splitlines knows


@hsettings(max_examples=1000, deadline=None)
@given(st.lists(st.tuples(lines, st.sampled_from(BREAKS)), max_size=5).map(lambda xs: ''.join(a + b for a, b in xs)))
def test_neutralised_text_has_no_header_line(text):
    "Whatever break a reader splits lines at, no line of the output reads as a header, and no other line changes."
    out = neutralise_headers(text)
    assert not any(reference(ln) for ln in out.splitlines())
    assert len(out.splitlines()) == len(text.splitlines())
    assert all(a == b for a, b in zip(out.splitlines(), text.splitlines()) if not reference(b))   # other lines untouched
