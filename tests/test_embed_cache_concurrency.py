"Several connections opening one new embedding cache at once (memtax workers, notebook tests): none may fail (S-12.4)."
import tempfile, threading
import numpy as np
from jarvis_memory.embeddings import CachedEmbedder, HashingEmbedder

def test_fresh_cache_opened_together():
    # sqlite answers "database is locked" at once when a new file is switched to WAL while another connection has it
    # open; before `_wal` retried, 8 threads on a fresh file hit it first at trials 25, 1, 35, 40, 14 of five runs.
    texts = [f"line {j} of a turn" for j in range(40)]
    want = HashingEmbedder(64).embed(texts)
    failed, wrong = [], []
    for trial in range(150):
        with tempfile.TemporaryDirectory() as d:
            es = [CachedEmbedder(HashingEmbedder(64), d) for _ in range(8)]
            start = threading.Barrier(len(es))
            def work(e):
                start.wait()
                try:
                    for _ in range(3):
                        if not np.allclose(e.embed(texts), want, atol=1e-6): wrong.append(trial)
                except Exception as ex: failed.append(f"trial {trial}: {ex!r}")
            ts = [threading.Thread(target=work, args=(e,)) for e in es]
            for t in ts: t.start()
            for t in ts: t.join()
            for e in es: e.close()
    assert failed == [] and wrong == [], (failed[:3], wrong[:3])
