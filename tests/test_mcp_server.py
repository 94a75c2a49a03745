"""`jarvis-memory mcp` as a real subprocess, driven by the official MCP SDK's own client (issue 16; nbs/50_mcp.ipynb).

- stdio: Korean and English remember/recall, a turn recorded and found again by `search_episodes` (S-10), task
  patterns (S-9), and bad arguments, each an MCP error result naming the problem; the server keeps answering after
  them and what was stored is still there.
- streamable HTTP on 127.0.0.1, isolation: two servers for two users share one store through a real `chroma run`
  (tests/servers.py). Identity comes from each server's flags (S-1.1): bob's server never shows alice's memories,
  cannot forget her session, and refuses a `user_id` argument.
"""
from __future__ import annotations
import os, sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from servers import chroma_server, free_port, server

ROOT = Path(__file__).resolve().parents[1]
TOOLS = {'remember', 'record_turn', 'recall', 'search_episodes', 'forget_session', 'remember_task_pattern',
         'list_task_patterns', 'forget_task_pattern'}


def _env(tmp: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith('JARVIS_MEMORY__')}
    env.update(PYTHONPATH=str(ROOT), JARVIS_MEMORY__CACHE_DIR=str(tmp / 'cache'), JARVIS_MEMORY__TEAM_DIR=str(tmp / 'team'))
    return env


def _cmd(user, agent, *extra):
    return [sys.executable, '-m', 'jarvis_memory.cli', 'mcp', '--user', user, '--agent', agent, *extra]


async def _calls(target, calls, read_timeout=120):
    "Open one client session on `target`, list the tools, run `calls` [(name, args)]; returns (tool names, [(is_error, text)])."
    out = []
    async with Client(target, read_timeout_seconds=read_timeout) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        for name, args in calls:
            r = await c.call_tool(name, args)
            out.append((r.is_error, '\n'.join(getattr(x, 'text', '') for x in r.content)))
    return names, out


def run_calls(target, *calls):
    return anyio.run(_calls, target, list(calls))


def test_mcp_stdio_korean_english_and_bad_inputs(tmp_path):
    cmd = _cmd('minji', 'main', '--path', str(tmp_path / 'chroma'), '--session', 'talk-1')
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=_env(tmp_path), cwd=str(tmp_path))
    names, res = run_calls(params,
        ('remember', {'text': '알레르기: 땅콩'}),
        ('remember', {'text': 'favourite tea: jasmine'}),
        ('record_turn', {'user_message': '다음 주 토요일에 부산으로 이사 가요', 'assistant_message': '이사 준비 잘 하세요!'}),
        ('recall', {'query': '나 알레르기 있는 음식 뭐였지?'}),
        ('recall', {'query': 'Which tea do I like?'}),
        ('search_episodes', {'query': '이사'}),
        ('search_episodes', {'outcome': 'success', 'since': '2020-01-01', 'limit': 5}),
        # bad input: each an error result naming the problem
        ('remember', {'text': '   '}),
        ('remember', {}),
        ('remember', {'text': '거주지: 서울', 'user_id': 'someone-else'}),
        ('recall', {'query': 'tea', 'k': 0}),
        ('search_episodes', {'outcome': 'maybe'}),
        ('search_episodes', {'until': 'next week'}),
        ('forget_session', {'session_id': ''}),
        ('remember_task_pattern', {'name': '주간 보고', 'when': '금요일', 'steps': 'not a list', 'keywords': ['보고']}),
        ('forget_task_pattern', {'name': '없는 패턴'}),
        ('no_such_tool', {}),
        # still serving, nothing lost
        ('remember_task_pattern', {'name': '주간 보고', 'when': '매주 금요일 보고서를 쓸 때', 'steps': ['일정 모으기', '표로 정리'],
                                   'keywords': ['주간 보고']}),
        ('list_task_patterns', {}),
        ('recall', {'query': '알레르기'}),
    )
    assert names == TOOLS
    ok = [r for r in res[:7]]
    assert all(not e for e, _ in ok), ok
    assert ok[0][1] == 'Remembered: 알레르기: 땅콩'
    assert '[핵심 사실]' in ok[3][1] and '알레르기: 땅콩' in ok[3][1], ok[3]
    assert 'favourite tea: jasmine' in ok[4][1], ok[4]
    assert '부산으로 이사' in ok[5][1] and 'session talk-1' in ok[5][1], ok[5]
    assert '부산으로 이사' in ok[6][1], ok[6]
    bad = res[7:17]
    assert all(e for e, _ in bad), bad
    expect = ['text must not be empty', 'text', 'user_id cannot be passed', 'k must be an integer from 1 to 100',
              "outcome must be 'success' or 'failure'", 'until is not an ISO date', 'session_id must be a non-empty string',
              'steps', "has no task pattern named '없는 패턴'", 'no_such_tool']
    for (_, text), want in zip(bad, expect): assert want in text, (want, text)
    assert not res[17][0] and '주간 보고' in res[18][1]
    assert not res[19][0] and '알레르기: 땅콩' in res[19][1], res[19]
    # a new server process on the same store: everything is still there
    params2 = StdioServerParameters(command=cmd[0], args=_cmd('minji', 'main', '--path', str(tmp_path / 'chroma'))[1:],
                                    env=_env(tmp_path), cwd=str(tmp_path))
    _, res2 = run_calls(params2, ('recall', {'query': 'tea'}), ('search_episodes', {'query': '부산'}))
    assert 'favourite tea: jasmine' in res2[0][1] and '부산으로 이사' in res2[1][1], res2


@pytest.mark.server
def test_mcp_http_two_users_one_store_isolated(tmp_path):
    with chroma_server(tmp_path / 'chroma') as chroma_url:
        pa, pb = free_port(), free_port()
        env = _env(tmp_path)
        http = lambda user, port, session: _cmd(user, 'main', '--transport', 'http', '--port', str(port), '--server-url', chroma_url,
                                                '--session', session)
        with server(http('alice', pa, 'alice-1'), pa, '/health', timeout=180, env=env) as ua, \
             server(http('bob', pb, 'bob-1'), pb, '/health', timeout=180, env=env) as ub:
            names, ra = run_calls(ua + '/mcp',
                ('remember', {'text': '비밀번호 힌트: 첫 강아지 이름은 초코'}),
                ('remember', {'text': 'allergy: shellfish'}),
                ('record_turn', {'user_message': 'I am planning a surprise party for Jisoo on Friday', 'assistant_message': 'Sounds fun!'}),
                ('recall', {'query': '강아지 이름 힌트'}))
            assert names == TOOLS and not any(e for e, _ in ra), ra
            assert '초코' in ra[3][1]
            _, rb = run_calls(ub + '/mcp',
                ('recall', {'query': '강아지 이름 힌트'}),
                ('recall', {'query': 'allergy shellfish'}),
                ('search_episodes', {'query': 'surprise party for Jisoo'}),
                ('search_episodes', {}),
                ('forget_session', {'session_id': 'alice-1'}),
                ('recall', {'query': 'allergy', 'user_id': 'alice'}),
                ('remember', {'text': 'allergy: none', 'agent_id': 'main', 'user': 'alice'}),
                ('remember', {'text': 'favourite colour: green'}))
            assert '초코' not in rb[0][1] and 'shellfish' not in rb[1][1], rb
            assert rb[2] == (False, '(no episodes found)') and rb[3] == (False, '(no episodes found)'), rb
            assert rb[4] == (False, 'Forgot session alice-1: 0 item(s) deleted.'), rb[4]
            assert rb[5][0] and 'user_id cannot be passed' in rb[5][1], rb[5]
            assert rb[6][0] and 'agent_id, user cannot be passed' in rb[6][1], rb[6]
            assert rb[7] == (False, 'Remembered: favourite colour: green')
            _, ra2 = run_calls(ua + '/mcp', ('recall', {'query': 'allergy'}), ('search_episodes', {'query': 'surprise party'}),
                               ('recall', {'query': 'favourite colour'}))
            assert 'allergy: shellfish' in ra2[0][1] and 'allergy: none' not in ra2[0][1], ra2[0]
            assert 'surprise party for Jisoo' in ra2[1][1], ra2[1]                  # bob's forget_session took nothing
            assert 'green' not in ra2[2][1], ra2[2]


def test_mcp_http_on_another_loopback_address_refuses_a_rebound_name(tmp_path):
    """DNS rebinding (probe of 2026-12-07): a web page whose name was rebound to the server's address sends that name as
    Host and Origin. The SDK checks them by itself only on 127.0.0.1, localhost and ::1; on 127.0.0.2, also loopback,
    the server must refuse it too (421), and still serve a client that names the address."""
    import json, urllib.error, urllib.request
    port, env = free_port(), {**_env(tmp_path), 'JARVIS_MEMORY__EMBEDDING_PROVIDER': 'hashing'}
    cmd = _cmd('minji', 'main', '--transport', 'http', '--host', '127.0.0.2', '--port', str(port), '--path', str(tmp_path / 'chroma'))
    init = {'jsonrpc': '2.0', 'id': 1, 'method': 'initialize',
            'params': {'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 'page', 'version': '1'}}}
    def post(url, name):
        req = urllib.request.Request(url, data=json.dumps(init).encode(), method='POST', headers={
            'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream', 'Host': name, 'Origin': f'http://{name}'})
        try:
            with urllib.request.urlopen(req, timeout=60) as r: return r.status
        except urllib.error.HTTPError as e: return e.code
    with server(cmd, port, '/health', timeout=180, env=env, host='127.0.0.2') as url:
        assert post(url + '/mcp', f'rebound.example:{port}') == 421
        assert post(url + '/mcp', f'127.0.0.2:{port}') == 200
