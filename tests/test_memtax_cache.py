"""The committed extraction cache, data/cache/locomo_extraction.jsonl (nbs/34_memory_arms.ipynb, S-12.4).

It must hold the model's answers only (no request text: that is LoCoMo's conversations), say which model, command
and date produced it, and still answer the requests the current code sends: a change to the extraction prompt
(16_consolidation) or to the speaker mapping (34_memory_arms) makes every cached answer unreachable, and `make demo`
would then skip the turns arms. The second test catches that on the first two sessions of a covered conversation.
"""
from __future__ import annotations
import json

import pytest

from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.benchmarks import Conversation, default_data_path
from jarvis_memory.locomo import LOCOMO_DEFAULT, load_locomo
from jarvis_memory.llm import LLM
from jarvis_memory.memory_arms import ANSWERS_FORMAT, AnswerFile, LayeredCache, extraction_cache_path, ingest
from jarvis_memory.settings import Settings


def test_format_and_no_request_text():
    p = extraction_cache_path()
    assert p is not None, "data/cache/locomo_extraction.jsonl is missing"
    lines = p.read_text(encoding='utf-8').splitlines()
    h = json.loads(lines[0])
    assert h['format'] == ANSWERS_FORMAT
    for k in ('model', 'command', 'date', 'conversations', 'server'): assert h[k], k
    assert h['answers'] == len(lines) - 1
    for line in lines[1:]:
        assert set(json.loads(line)) == {'key', 'anykey', 'model', 'answer'}
    assert p.stat().st_size < 1_000_000
    assert len(AnswerFile(p)) == len(lines) - 1


def test_still_answers_the_current_requests(tmp_path):
    if default_data_path(LOCOMO_DEFAULT) is None: pytest.skip('LoCoMo is not beside the project')
    af = AnswerFile(extraction_cache_path())
    bench = load_locomo()
    conv = bench.conversation(af.header['conversations'][0])
    head = Conversation(conv.id, conv.speakers, conv.sessions[:2], conv.meta)
    s = Settings(embedding_provider='hashing', cache_dir=str(tmp_path), llm_base_url='', llm_model='')
    llm = LLM(s, base_url='', model='', cache=LayeredCache(af))          # offline: the committed answers or nothing
    with ingest(head, HashingEmbedder(), s, llm=llm, families=('turns',)) as mem:
        assert mem.extraction.complete, mem.extraction.missing
        assert mem.extraction.calls == 4 and llm.stats['cache_hits'] == 4
