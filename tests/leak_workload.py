"""A random multi-user, multi-agent workload with a token oracle (issue 14): every text the workload writes carries
unique tokens whose origin (user, agent, layer) is known, derived memories (summaries, journals, user models,
referents) copy them, and every text a reader is shown may hold only tokens it may read by the pure policy
(S-1.4) — or tokens the user promoted into the profile on purpose (`/remember that`). Forgotten tokens must not come
back in any output, row, user model file or (embedded) the store's bytes.

Used by tests/test_rerank_leak.py in embedded mode (one process, policies edited on disk between reads) and in
server mode (two processes, one agent each, the same users, one `chroma run`). Origins and promotions go to a shared
ledger file *before* the write, so a reader in the other process can always explain a token it sees."""
from __future__ import annotations
import json, random, re
from pathlib import Path

from jarvis_memory.scope import MemoryScope, ReadPolicy, Team, MemoryInputError
from jarvis_memory.settings import Settings
from jarvis_memory.store import Filter
from jarvis_memory.embeddings import HashingEmbedder
from jarvis_memory.chroma import ChromaStore
from jarvis_memory.episodes import TurnRecord
from jarvis_memory.service import MemoryService, user_model_files, SESSION_KEEPS
from jarvis_memory.commands import run_command
from jarvis_memory.llm import FakeLLM

T0 = 1_760_000_000.0
USERS, AGENTS = ('w1', 'w2'), ('main', 'karen', 'other')
WORDS = ('전세', '예산', '땅콩', 'budget', '운동', 'plan', '서울', '이사')
_tok = re.compile(r'zq[0-9a-z]+x')


def tokens(text: str) -> set: return set(_tok.findall(text or ''))


def echo_llm(messages, schema):
    "The fake model copies every token of its prompt into its answer: derived text carries its sources' tokens."
    toks = ' '.join(sorted(tokens(messages[-1]['content']))) or '없음'
    if schema is None: return f"요약: {toks}"
    if schema.get('title') == 'user_model': return {'summary': f"사용자 {toks}", 'traits': ['꼼꼼함']}
    return {'sentences': [f"성찰 {toks}."]}


class Ledger:
    "Token origins and promotions, in this process and in an append-only JSON-lines file shared with the other process."
    def __init__(self, path: Path, tag: str = ''):
        "`tag` keeps the tokens of two processes apart (it must differ between processes sharing `path`)."
        self.path, self.tag, self.origin, self.promoted = Path(path), tag, {}, set()
    def _append(self, rec): 
        with open(self.path, 'a', encoding='utf-8') as f: f.write(json.dumps(rec) + '\n')
    def new(self, prefix: str, user: str, agent: str, layer: str) -> str:
        t = f"zq{self.tag}{prefix}{len(self.origin)}x"
        self.origin[t] = (user, agent, layer); self._append({'t': t, 'o': [user, agent, layer]})
        return t
    def promote(self, user: str, toks):
        for t in toks: self.promoted.add((user, t)); self._append({'p': t, 'u': user})
    def reload(self):
        if not self.path.exists(): return
        for line in self.path.read_text(encoding='utf-8').splitlines():
            r = json.loads(line)
            if 't' in r: self.origin.setdefault(r['t'], tuple(r['o']))
            else: self.promoted.add((r['u'], r['p']))
    def allowed(self, tok: str, reader: MemoryScope, policy: ReadPolicy) -> bool:
        o = self.origin.get(tok)
        if o is None or o[0] != reader.user_id: return False
        if (reader.user_id, tok) in self.promoted or o[2] == 'semantic': return True
        return o[1] in policy.readable_agents(o[2])


class Workload:
    def __init__(self, svc: MemoryService, ledger: Ledger, agents, seed: int, *, prefix: str, team_dir: Path | None = None):
        self.svc, self.L, self.agents, self.rng, self.prefix, self.team_dir = svc, ledger, list(agents), random.Random(seed), prefix, team_dir
        self.turns, self.hist, self.forgotten, self.stats = {}, {}, set(), {}
        self.llm = FakeLLM(echo_llm)

    def _count(self, k): self.stats[k] = self.stats.get(k, 0) + 1

    def scope(self):
        u, a = self.rng.choice(USERS), self.rng.choice(self.agents)
        return MemoryScope(u, a, f"{self.prefix}-s{self.rng.randrange(4)}")

    def words(self): return ' '.join(self.rng.sample(WORDS, 2))

    # ---------------------------------------------------------------- checks
    def check(self, reader: MemoryScope, text: str, what: str):
        pol = self.svc.store.team.policy(reader.agent_id)
        bad = [t for t in tokens(text) if not self.L.allowed(t, reader, pol)]
        if bad:                                          # the other process may have written them: read its ledger
            self.L.reload()
            bad = [t for t in bad if not self.L.allowed(t, reader, self.svc.store.team.policy(reader.agent_id))]
        assert not bad, f"LEAK via {what} to {reader}: {bad} (origins {[self.L.origin.get(t) for t in bad]})"
        back = tokens(text) & self.forgotten
        assert not back, f"FORGOTTEN tokens came back via {what} to {reader}: {back}" + self._explain(reader, back)
        self._count('reads')

    def _explain(self, reader, toks) -> str:
        "Where the tokens are now: rows of the user (any agent) and user model files, for the failure message."
        rows = self.svc.store.list(MemoryScope(reader.user_id, 'god'), filter=Filter(include_superseded=True), order_by=None)
        out = [f"row {it.id} {it.agent_id} {it.source} sup={it.superseded}" for it in rows if tokens(it.content) & toks]
        for p in user_model_files(self.svc.settings, reader.user_id):
            m = json.loads(p.read_text(encoding='utf-8'))
            if tokens(m.get('summary', '')) & toks:
                ids = m.get('memory_ids') or []
                got = {it.id for it in self.svc.store.get(reader, ids)}
                out.append(f"model of {m.get('agent_id')} built {m.get('built_at')}: {len(ids)} ids, {len(got)} readable, "
                           f"missing {[i for i in ids if i not in got][:3]}")
        return '\n' + '\n'.join(out)

    # ---------------------------------------------------------------- operations
    def op_turn(self):
        sc = self.scope(); key = (sc.user_id, sc.agent_id, sc.session_id)
        n = self.turns.get(key, 0) + 1; self.turns[key] = n
        tu, ta = self.L.new('u', *key[:2], 'edm'), self.L.new('a', *key[:2], 'edm')
        u, a = f"{self.words()} {tu}", f"{self.words()} {ta}"
        self.svc.record(TurnRecord(sc, n, u, a, at=T0 + n))
        self.hist.setdefault(key, []).extend([{'role': 'user', 'content': u}, {'role': 'assistant', 'content': a}])

    def op_thought(self):
        sc = self.scope()
        self.svc.write_thought(sc, f"생각 {self.words()} {self.L.new('t', sc.user_id, sc.agent_id, 'edm')}")

    def op_fact(self):
        sc = self.scope()
        self.svc.remember(sc, f"{self.rng.choice(WORDS)}: {self.L.new('f', sc.user_id, sc.agent_id, 'semantic')}")

    def op_remember_that(self):
        sc = self.scope(); h = self.hist.get((sc.user_id, sc.agent_id, sc.session_id))
        if not h: return
        self.L.promote(sc.user_id, tokens(h[-2]['content'] + h[-1]['content']))      # the user asked: into the profile
        self.svc.remember(sc, '그거 기억해', history=h)

    def op_compact(self):
        sc = self.scope(); h = self.hist.get((sc.user_id, sc.agent_id, sc.session_id))
        if h: assert run_command(self.svc, sc, '/compact', history=h, llm=self.llm).ok

    def op_journal(self):
        sc = self.scope(); run_command(self.svc, sc, '/journal write', llm=self.llm)

    def op_usermodel_build(self):
        sc = self.scope(); run_command(self.svc, sc, '/usermodel build', llm=self.llm); self._count('usermodel_build')

    def op_read(self):
        sc = self.scope(); q = f"{self.words()}"
        obs = self.svc.observe(sc.with_session('reader'), [{'role': 'user', 'content': q}], now=T0 + 10_000)
        self.check(sc, obs.text, 'observe')
        r = run_command(self.svc, sc, '/usermodel')
        if r.ok: self._count('usermodel_shown')
        self.check(sc, r.text, '/usermodel')
        for it in self.svc.recall_episodes(sc, q, limit=5): self.check(sc, it.content, 'recall_episodes')
        for it in self.svc.store.list(sc, filter=Filter(include_superseded=True), limit=20): self.check(sc, it.content, 'list')

    def op_forget(self):
        sc = self.scope()
        pool = [t for t, o in self.L.origin.items() if o[0] == sc.user_id and o[1] in self.agents and t not in self.forgotten]
        if not pool: return
        t = self.rng.choice(pool)
        self.svc.forget(sc, query=t, scrub=False)
        # every row the reader could read with t is gone (rows it cannot read are not its to forget)
        left = [it for it in self.svc.store.list(sc, filter=Filter(include_superseded=True), order_by=None) if t in it.content]
        assert not left, f"forget({t}) left {left}"
        if all(self.svc.store.team.policy(sc.agent_id).readable_agents(l) is None or
               self.L.origin[t][1] in self.svc.store.team.policy(sc.agent_id).readable_agents(l) for l in ('edm', 'pdm')):
            self.forgotten.add(t)                        # the reader could read every copy: t must never come back
            for h in self.hist.values():
                for m in h: m['content'] = m['content'].replace(t, '')
        self._count('forget')

    def op_forget_session(self):
        sc = self.scope(); key = (sc.user_id, sc.agent_id, sc.session_id)
        self.svc.forget_session(sc, scrub=False)
        left = self.svc.store.list(sc, filter=Filter(session_id=sc.session_id, agent_ids=(sc.agent_id,), layers=('edm',),
                                                      exclude_sources=SESSION_KEEPS, include_superseded=True))
        assert not left, left
        self.hist.pop(key, None); self._count('forget_session')

    def op_policy(self):
        if self.team_dir is None: return
        a = self.rng.choice(AGENTS)
        edm = self.rng.sample(('self',) + AGENTS, self.rng.randint(1, 3))
        pdm = self.rng.sample(('self',) + AGENTS, self.rng.randint(1, 2))
        (self.team_dir / f"{a}.yaml").write_text(f"memory:\n  read:\n    edm: {json.dumps(edm)}\n    pdm: {json.dumps(pdm)}\n")
        self._count('policy')

    OPS = (('op_turn', 30), ('op_thought', 8), ('op_fact', 8), ('op_remember_that', 4), ('op_compact', 3), ('op_journal', 2),
           ('op_usermodel_build', 3), ('op_read', 30), ('op_forget', 4), ('op_forget_session', 2), ('op_policy', 2))

    def run(self, n: int) -> dict:
        names, weights = zip(*self.OPS)
        for i in range(n):
            op = self.rng.choices(names, weights)[0]
            getattr(self, op)()
            self._count(op); self._count('ops')
        return self.stats


def god_team(team_dir=None) -> Team:
    return Team(team_dir, [ReadPolicy('god', edm=AGENTS, pdm=AGENTS)])


def final_checks(svc: MemoryService, wl: Workload, store_path: Path | None, files: bool = True):
    "After the workload: no forgotten token in any row of any user, any user model file, or (embedded) the files' bytes."
    rows = [it for u in USERS for it in svc.store.list(MemoryScope(u, 'god'), filter=Filter(include_superseded=True), order_by=None)]
    back = {t for it in rows for t in tokens(it.content)} & wl.forgotten
    assert not back, back
    for u in USERS if files else ():
        for p in user_model_files(svc.settings, u):
            assert not tokens(p.read_text(encoding='utf-8')) & wl.forgotten, p
    if store_path is not None and wl.forgotten:
        assert svc.store.scrub()
        blob = b''.join(p.read_bytes() for p in Path(store_path).rglob('*') if p.is_file())
        found = [t for t in wl.forgotten if t.encode() in blob]
        assert not found, f"forgotten tokens still on disk: {found[:5]}"
