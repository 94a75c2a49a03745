"""Benchmark files are loaded by the format they declare, never by their shape (issue 11; nbs/30_benchmarks, nbs/31_locomo).

A file with an unknown format and a LoCoMo-shaped file (a JSON list: LoCoMo's own file declares nothing) both get a
clear `BenchmarkError` that names the registered formats; the same LoCoMo file loads when its format is named.
"""
from __future__ import annotations
import json

import pytest

from jarvis_memory.benchmarks import BenchmarkError, FORMAT, LOADERS, load_benchmark, sample_benchmark_path
import jarvis_memory.locomo  # noqa: F401  registers the 'locomo' format

LOCOMO_SHAPED = [{'sample_id': 'conv-x', 'conversation': {
    'speaker_a': 'Ann', 'speaker_b': 'Bo', 'session_1_date_time': '2:31 pm on 9 June, 2023',
    'session_1': [{'speaker': 'Ann', 'dia_id': 'D1:1', 'text': 'I adopted a cat named Miso.'},
                  {'speaker': 'Bo', 'dia_id': 'D1:2', 'text': 'Cute!'}]},
    'qa': [{'question': 'What is the cat called?', 'answer': 'Miso', 'evidence': ['D1:1'], 'category': 4}]}]


def registered() -> str: return ', '.join(repr(f) for f in LOADERS)


def test_both_formats_registered():
    assert list(LOADERS)[:2] == [FORMAT, 'locomo']


def test_unknown_format_names_the_registered_ones(tmp_path):
    p = tmp_path / 'b.json'
    p.write_text(json.dumps({'format': 'longmemeval/2', 'conversations': []}), encoding='utf-8')
    with pytest.raises(BenchmarkError) as e: load_benchmark(p)
    assert "declares format 'longmemeval/2', which no loader reads" in str(e.value)
    assert f"registered formats: {registered()}" in str(e.value)
    with pytest.raises(BenchmarkError) as e: load_benchmark(sample_benchmark_path(), format='longmemeval/2')
    assert f"unknown benchmark format 'longmemeval/2'; registered formats: {registered()}" in str(e.value)


def test_locomo_shaped_file_without_a_format_is_refused(tmp_path):
    p = tmp_path / 'locomo10.json'                        # even LoCoMo's own file name does not make it LoCoMo
    p.write_text(json.dumps(LOCOMO_SHAPED), encoding='utf-8')
    with pytest.raises(BenchmarkError) as e: load_benchmark(p)
    msg = str(e.value)
    assert "declares no format (a JSON list without a 'format' key)" in msg
    assert "'locomo'" in msg and repr(FORMAT) in msg and f"registered formats: {registered()}" in msg
    for named in (dict(data=p, format='locomo'), dict(data=f'locomo:{p}'), dict(data=tmp_path, format='locomo')):
        b, notes = load_benchmark(**named)
        assert ([c.id for c in b.conversations], [q.answer for q in b.questions], notes) == (['conv-x'], ['Miso'], [])


def test_object_without_format_is_refused(tmp_path):
    p = tmp_path / 'x.json'
    p.write_text('{"conversations": [], "questions": []}', encoding='utf-8')
    with pytest.raises(BenchmarkError, match="declares no format \\(a JSON object without a 'format' key\\)"): load_benchmark(p)
