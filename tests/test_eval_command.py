"""S-12.1: the functional suites as one command, `python -m jarvis_memory.eval`, run the way CI runs it.

Each test starts the command in a fresh Python process (`python -m ...`, or `python -c` when a rule is broken on
purpose first) and checks its exit code and what it printed:

- every suite passes on the hashing embedder -> exit 0 and the table;
- a case that fails (from `--case-file`) -> exit 1, the failing case named;
- a bad suite name or case file -> exit 2;
- a deliberately broken rule (the agent filter of S-1.4 removed in that process) -> the isolation and access suites
  FAIL, so the suites are shown able to catch it; and, for contrast, breaking only the store's `where` clause is
  still caught by the store's row check (defence in depth, S-1.6), so the suites keep passing.
"""
from __future__ import annotations
import json, os, re, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CMD = [sys.executable, '-m', 'jarvis_memory.eval']


def run(args, *, code=None, timeout=900):
    "Run the command (or `python -c code` followed by args) in a fresh process; returns (exit code, stdout + stderr)."
    cmd = [sys.executable, '-c', code, *args] if code else [*CMD, *args]
    env = {**os.environ, 'PYTHONPATH': str(ROOT) + os.pathsep + os.environ.get('PYTHONPATH', '')}
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)
    return r.returncode, r.stdout + r.stderr


def rows(out: str) -> dict:
    "suite -> (passed, total) from the printed table."
    return {m[1]: (int(m[2]), int(m[3])) for m in re.finditer(r'^(\w+)\s+(\d+)/(\d+)\s', out, re.M)}


SUITES = ('isolation', 'semantic', 'episodic', 'procedural', 'paraphrase', 'faithfulness', 'retention',
          'episode_filter', 'access', 'consolidation')


def test_all_suites_pass_on_hashing():
    rc, out = run(['--suite', 'all'])
    t = rows(out)
    assert set(SUITES) <= set(t), out
    assert t['all'][1] >= 68, out
    assert all(p == n for p, n in t.values()), out
    assert 'FAIL' not in out, out
    assert rc == 0, out


def test_one_suite():
    rc, out = run(['--suite', 'access'])
    assert rc == 0, out
    assert set(rows(out)) == {'access', 'all'}, out


def test_failing_case_fails_the_command(tmp_path):
    f = tmp_path / 'extra.json'
    f.write_text(json.dumps([
        {'suite': 'extra', 'name': 'never-told', 'lang': 'ko',
         'setup': [{'do': 'remember', 'who': 'alice/main/s1', 'text': '거주지: 서울'}],
         'query': {'ask': '나 어디 살아?', 'who': 'alice/main/s2'},
         'expected': ['거주지: 부산']},
        {'suite': 'extra', 'name': 'told', 'lang': 'ko',
         'setup': [{'do': 'remember', 'who': 'alice/main/s1', 'text': '거주지: 서울'}],
         'query': {'ask': '나 어디 살아?', 'who': 'alice/main/s2'},
         'expected': ['거주지: 서울']}], ensure_ascii=False), encoding='utf-8')
    rc, out = run(['--suite', 'extra', '--case-file', str(f)])
    assert rc == 1, out
    assert rows(out)['extra'] == (1, 2), out
    assert "FAIL extra/never-told [ko] (-): missing ['거주지: 부산']" in out, out


def test_usage_errors_exit_2(tmp_path):
    rc, out = run(['--suite', 'nonsense'])
    assert rc == 2 and 'unknown suite' in out, out
    f = tmp_path / 'bad.json'
    f.write_text('{"not": "a list"}')
    rc, out = run(['--case-file', str(f)])
    assert rc == 2 and 'expected a JSON list' in out, out


BREAK_AGENT_FILTER = """
import sys
import jarvis_memory.scope as scope
scope.ReadPolicy.readable_agents = lambda self, layer: None     # broken rule: every agent reads every layer
from jarvis_memory.eval import main
sys.exit(main(sys.argv[1:]))
"""


def test_broken_agent_filter_fails_isolation_and_access():
    rc, out = run(['--suite', 'isolation,access'], code=BREAK_AGENT_FILTER)
    assert rc == 1, out
    t = rows(out)
    assert t['isolation'][0] < t['isolation'][1] and t['access'][0] < t['access'][1], out
    for case in ('isolation/other-agent-episode', 'isolation/other-agent-episode-reverse', 'access/edm-one-way',
                 'access/pdm-one-way', 'access/third-agent-default'):
        assert f'FAIL {case} ' in out, (case, out)


BREAK_WHERE_ONLY = """
import sys
import dataclasses
import jarvis_memory.chroma as chroma
_orig = chroma.chroma_where
def no_agent_clause(cl):                                 # the where clause forgets the agent filter ...
    return _orig(dataclasses.replace(cl, agents=dict.fromkeys(cl.agents)))
chroma.chroma_where = no_agent_clause                   # ... but the row check (_row_readable) still applies
from jarvis_memory.eval import main
sys.exit(main(sys.argv[1:]))
"""


def test_row_check_catches_a_broken_where_clause():
    rc, out = run(['--suite', 'isolation,access'], code=BREAK_WHERE_ONLY)
    assert rc == 0, out
    assert 'FAIL' not in out, out
