"""Long-term memory for a personal AI agent: scoped, recalled on demand, measured against naive RAG

Modules:

- `jarvis_memory.consolidation`: Episodes become facts with provenance, successful turns become procedure drafts, and the triggers that run it (SPEC S-7).
- `jarvis_memory.episodes`: What one answered turn leaves in long-term memory: a `turn` episode, and `turn_part` pieces for the rest of a long answer (SPEC S-4).
- `jarvis_memory.window`: The latest turns of a session's history that the model sees, the turns inside it, and the working memory kept beside the history (SPEC S-3)."""

__version__ = "0.0.1"
