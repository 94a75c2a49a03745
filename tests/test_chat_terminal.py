"""`jarvis-memory chat` driven in a pty as a person types it (pexpect), against the real llama.cpp server the LLM tests
use (SmolLM2-135M via `python -m llama_cpp.server`, tests/servers.py). Issue 16; nbs/51_chat.ipynb.

Tell it a fact, `/remember` another (a slash command through `run_command`), start a new session (`/new`: the old one is
consolidated, S-7.8), ask about the fact, and see it recalled. A 135M model's wording varies, so the assertions are on
the memory block that `--show-memory` prints (what the model was given), not on its answer. The whole terminal
session is written to reports/chat_transcript.txt (reports/ is git-ignored).
"""
from __future__ import annotations
import os, re, sys
from pathlib import Path

import pytest
from servers import llama_model, llama_server

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPT = ROOT / 'reports' / 'chat_transcript.txt'
PROMPT = 'you> '
SLOW = 900          # s: a model answer, or a session's consolidation, on a shared 2-core machine


@pytest.fixture(scope='module')
def chat_url():
    with llama_server(llama_model('smollm2'), n_ctx=4096) as url:
        yield url + '/v1'


def _memory_block(child) -> str:
    "The text between `--- memory ---` and the closing `---` printed before the answer."
    child.expect(r'--- memory( ---|: none ---)', timeout=SLOW)
    if 'none' in child.after: return ''
    child.expect(r'\r?\n---\r?\n', timeout=60)
    return child.before.replace('\r\n', '\n').strip()


@pytest.mark.server
def test_chat_recalls_a_fact_from_an_earlier_session(chat_url, tmp_path):
    import pexpect
    env = {k: v for k, v in os.environ.items() if not k.startswith('JARVIS_MEMORY__')}
    env.update(PYTHONPATH=str(ROOT), LANG='C.UTF-8', LC_ALL='C.UTF-8', PYTHONIOENCODING='utf-8', TERM='dumb',
               JARVIS_MEMORY__CACHE_DIR=str(tmp_path / 'cache'), JARVIS_MEMORY__TEAM_DIR=str(tmp_path / 'team'))
    cmd = ['-m', 'jarvis_memory.cli', 'chat', '--user', 'minji', '--agent', 'main', '--path', str(tmp_path / 'chroma'),
           '--base-url', chat_url, '--model', 'smollm2', '--show-memory', '--session', 'first', '--max-tokens', '48',
           '--temperature', '0']
    TRANSCRIPT.parent.mkdir(exist_ok=True)
    with open(TRANSCRIPT, 'w', encoding='utf-8') as log:
        child = pexpect.spawn(sys.executable, cmd, env=env, cwd=str(tmp_path), encoding='utf-8', timeout=SLOW,
                              dimensions=(50, 200))
        child.logfile_read = log
        try:
            child.expect("jarvis-memory chat: user 'minji', agent 'main', session first", timeout=300)
            child.expect_exact(PROMPT)
            child.sendline('My sister Yuna moved to Busan last month; she works as a nurse there.')
            assert _memory_block(child) == ''                      # nothing is known yet
            child.expect('jarvis> ')
            child.expect_exact(PROMPT)
            child.sendline('/remember 알레르기: 땅콩')
            child.expect('Remembered: 알레르기: 땅콩')
            child.expect_exact(PROMPT)
            child.sendline('/new')
            child.expect(r'\(new session (chat-\S+)\)')
            second = child.match.group(1)
            child.expect_exact(PROMPT)
            child.sendline('Where does my sister Yuna live now?')
            block = _memory_block(child)
            child.expect('jarvis> ')
            child.expect_exact(PROMPT)
            child.sendline('/quit')
            child.expect(pexpect.EOF, timeout=SLOW)
        finally:
            if child.isalive(): child.terminate(force=True)
    assert second != 'first'
    # the earlier session's turn is recalled in the new one, from the store (it is in no window there), and the fact told
    # with /remember is a core fact (S-6.3)
    assert '[장기 기억]' in block and 'My sister Yuna moved to Busan last month' in block, block
    assert '[핵심 사실]' in block and '- 알레르기: 땅콩' in block, block
    text = TRANSCRIPT.read_text(encoding='utf-8')
    assert text.count('jarvis> ') == 2 and 'the model failed' not in text, text
