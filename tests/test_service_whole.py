"""`MemoryService` is whole after `import jarvis_memory.service` alone (issue 11, item 3): no method arrives later
through another module's `@patch` or a runtime import, and no policy module imports the service."""
import ast, subprocess, sys
from pathlib import Path

import jarvis_memory

PKG = Path(jarvis_memory.__file__).parent
METHODS = ('record_turn', 'record', 'remember', 'write_fact', 'write', 'set_housing_profile', 'consolidate', 'end_session',
           'pending_episodes', 'distill_procedures', 'approve_procedure', 'pattern_block', 'remember_task_pattern',
           'handle_tool_call', 'list_patterns', 'forget_pattern', 'observe', 'reinforce', 'flush_rehearsals',
           'forget_session', 'recall_episodes', 'query_vector', 'core_block')


def test_whole_on_import():
    code = ("import sys, jarvis_memory.service as s\n"
            f"missing = [m for m in {METHODS!r} if not callable(getattr(s.MemoryService, m, None))]\n"
            "print(','.join(missing))\n")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == '', f"MemoryService lacks {out} after importing jarvis_memory.service alone"


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding='utf-8'))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module: out.add(node.module.lstrip('.').removeprefix('jarvis_memory.'))
        if isinstance(node, ast.Import): out |= {a.name.removeprefix('jarvis_memory.') for a in node.names}
    return out


def test_policies_never_import_the_service():
    policies = ['core', 'scoring', 'rerank', 'consolidation', 'patterns', 'recall', 'window', 'episodes', 'language']
    bad = {p: sorted(imports_of(PKG / f'{p}.py') & {'service', 'commands', 'explorer', 'cli'}) for p in policies}
    assert {p: v for p, v in bad.items() if v} == {}


def test_no_runtime_import_trampoline():
    src = (PKG / 'service.py').read_text(encoding='utf-8')
    assert 'importlib' not in src and '_extension' not in src
