"""Small stand-ins shared by the pytest files (not servers: see servers.py for those)."""
from __future__ import annotations
from jarvis_memory.embeddings import HashingEmbedder, EmbeddingError


class Flaky(HashingEmbedder):
    "A hashing embedder whose endpoint can be 'down' (`Flaky.down = True` on an instance): embedding then raises."
    down = False
    def _embed(self, texts, query):
        if self.down: raise EmbeddingError('endpoint down')
        return super()._embed(texts, query)
