"""The recall explorer in a real browser: Voila serves apps/explorer.ipynb, Playwright drives Debian's Chromium.

Needs (installed by CI, see .ci/run): `apt-get install chromium fonts-noto-cjk` and, in the venv, `voila` and
`playwright` (PyPI). Playwright's own browser download is never used (it cannot be fetched here): we launch
/usr/bin/chromium with `executable_path`. A missing piece FAILS the test with the install line, never skips it.

What a person would do: open the app, wait for the chart, move the k slider (the cap on recall items) with the keyboard, type a new query
and press Recall, switch source recall off; after each step the chart in the page (plotly's `gd.data`) must change.
Then the question browser tab shows a Korean question with both arms. Screenshots go to reports/explorer.png and
reports/explorer_questions.png (reports/ is git-ignored). Voila runs on a free port and is stopped by
its pid (tests/servers.py).
"""
from __future__ import annotations
import importlib.util, json, os, shutil, sys, tempfile, time
from pathlib import Path

import pytest
from servers import BIN, free_port, server

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path(os.environ.get('JARVIS_CHROMIUM', '/usr/bin/chromium'))
ARGS = ['--no-sandbox', '--headless=new', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
        '--disable-sync', '--no-first-run']
SHOT = ROOT / 'reports' / 'explorer.png'
SHOT_Q = ROOT / 'reports' / 'explorer_questions.png'
SHOT_FAIL = ROOT / 'reports' / 'explorer_failed_step.png'
LOAD_TIMEOUT = 600_000      # ms: the app builds the demo store with the USE embedder, and CI machines are shared
STEP_TIMEOUT = 180_000


def _require():
    "Fail (not skip) with the install line when a piece is missing."
    missing = []
    if not CHROMIUM.exists(): missing.append(f"{CHROMIUM} (apt-get install -y chromium fonts-noto-cjk)")
    if importlib.util.find_spec('playwright') is None: missing.append("the playwright package (pip install playwright)")
    if not (BIN / 'voila').exists(): missing.append(f"{BIN / 'voila'} (pip install voila)")
    if missing: pytest.fail("the explorer browser test needs " + '; '.join(missing), pytrace=False)


# JS helpers run in the page: the explorer's main chart is the plotly div inside the .jm-chart-a box.
CHART = "document.querySelector('.jm-chart-a .js-plotly-plot')"
STATE = f"""() => {{ const gd = {CHART}; if (!gd || !gd.data || gd.data.length < 6 || !gd.data[0].x) return null;
  return {{labels: Array.from(gd.data[0].x), solid: Array.from(gd.data[0].marker.opacity || []).filter(o => o === 1).length,
           marks: Array.from(gd.data[4].text || []), diamonds: gd.data[5].visible !== false && gd.data[5].visible !== 'legendonly',
           title: (gd.layout.title && gd.layout.title.text) || ''}}; }}"""


def _state(page):
    return page.evaluate(STATE)


def _context(page) -> str:
    "What the page showed when a step timed out: the k handle's value, the focused element, the status line; and a screenshot."
    try:
        SHOT.parent.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOT_FAIL), full_page=True)
        info = page.evaluate("""() => { const h = document.querySelector('.jm-k .noUi-handle'), st = document.querySelector('.jm-status');
          const a = document.activeElement;
          return {k: h && h.getAttribute('aria-valuenow'), focused: a ? (a.tagName + '.' + a.className) : null,
                  status: st ? st.innerText.slice(0, 500) : null}; }""")
        return f"page: {info}, chart: {_state(page)}, screenshot {SHOT_FAIL}"
    except Exception as e: return f"(could not read the page: {e})"


def _wait_change(page, before: dict, what: str, cond: str = 'true'):
    "Wait until the chart state differs from `before` (and `cond`, a JS expression over `s`, holds)."
    try:
        page.wait_for_function(f"""(before) => {{ const s = ({STATE})(); return s !== null && JSON.stringify(s) !== JSON.stringify(before) && ({cond}); }}""",
                               arg=before, timeout=STEP_TIMEOUT)
    except Exception as e:
        pytest.fail(f"the chart did not reach the expected state after {what} within {STEP_TIMEOUT / 1000:.0f} s ({type(e).__name__}); "
                    + _context(page), pytrace=False)
    after = _state(page)
    assert after != before, f"the chart did not change after {what}"
    return after


def _slide(handle, target: int):
    """Move a noUiSlider handle to `target` with the arrow keys, one press at a time, reading its `aria-valuenow` after each.
    In one CI run on a loaded machine the chart never reached k = 3 after 17 quick presses, and the log could not tell
    whether the slider or the chart had not moved. Here a press that did not move the handle is pressed again (after
    focusing the handle again), at most 3 times the distance, and a handle that will not move fails by itself; the
    chart is checked separately, and a step that times out reports the handle's value and saves a screenshot."""
    value = lambda: int(float(handle.get_attribute('aria-valuenow')))
    start = value()
    for _ in range(3 * abs(target - start) + 3):
        v = value()
        if v == target: return
        handle.focus()
        handle.press('ArrowLeft' if v > target else 'ArrowRight')
    assert value() == target, f"the k slider's handle stayed at {value()} after arrow keys from {start} towards {target}"


@pytest.mark.server
def test_explorer_in_chromium():
    _require()
    from playwright.sync_api import sync_playwright
    t_start = time.perf_counter()
    port = free_port()
    cmd = [str(BIN / 'voila'), str(ROOT / 'apps' / 'explorer.ipynb'), '--no-browser', f'--port={port}', '--Voila.ip=127.0.0.1',
           '--VoilaConfiguration.show_tracebacks=True']
    # the health path is a static file: polling '/' would execute the notebook once per poll
    with server(cmd, port, '/voila/static/favicon.ico', timeout=120, env={'PYTHONUNBUFFERED': '1'}) as url, sync_playwright() as pw:
        profile = tempfile.mkdtemp(prefix='jm-chromium-')
        ctx = pw.chromium.launch_persistent_context(profile, executable_path=str(CHROMIUM), headless=True, args=ARGS,
                                                    viewport={'width': 1400, 'height': 1800})
        try:
            page = ctx.new_page()
            errors = []
            page.on('pageerror', lambda e: errors.append(str(e)))
            t0 = time.perf_counter()
            page.goto(url + '/', timeout=LOAD_TIMEOUT, wait_until='domcontentloaded')
            page.wait_for_function(f"({STATE})() !== null && ({STATE})().labels.length > 0", timeout=LOAD_TIMEOUT)
            t_load = time.perf_counter() - t0
            s0 = _state(page)
            assert s0['solid'] > 3, f"observe fills 2,000 characters by default: more than S-8.1's top 3 bars should be solid, got {s0}"
            assert any('여권' in l for l in s0['labels']), f"the demo query's candidates should mention 여권: {s0['labels']}"
            assert s0['diamonds'], "source recall is on by default: the relevance diamonds should show"
            # a traceback from the kernel would be rendered into the page
            assert 'Traceback' not in page.inner_text('body'), page.inner_text('body')[:2000]

            # 1. the k slider (the cap on recall items), with the keyboard as a person would (noUiSlider handle): 20 -> 3 -> 5
            handle = page.locator('.jm-k .noUi-handle')
            _slide(handle, 3)
            s3 = _wait_change(page, s0, 'moving the k slider down to 3', 's.solid === 3')
            _slide(handle, 5)
            s1 = _wait_change(page, s3, 'moving the k slider up to 5', 's.solid === 5')
            assert s1['labels'][:3] == s0['labels'][:3] and s1['solid'] == 5, s1
            time.sleep(1)                                   # let the HTML panel settle before the screenshot
            SHOT.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(SHOT), full_page=True)

            # 2. a new query, typed and sent with the Recall button
            page.fill('.jm-query input', '우리 고양이 이름이 뭐였지?')
            page.click('.jm-recall')
            s2 = _wait_change(page, s1, 'a new query and Recall', "s.labels.some(l => l.includes('고양이') || l.includes('콩이'))")
            assert s2['labels'] != s1['labels']

            # 3. source recall off: the diamonds go, the title says composite
            page.click('.jm-source-recall input[type=checkbox]')
            s3 = _wait_change(page, s2, 'switching source recall off', '!s.diamonds')
            assert 'composite' in s3['title'], s3['title']
            blocks = page.inner_text('.jm-blocks')
            assert '[장기 기억]' in blocks or '[핵심 사실]' in blocks, blocks

            # 4. the question browser tab: pick a Korean question, see both arms and the gold evidence
            page.click("text=Memory Tax questions")
            q4 = next(q for q in json.loads((ROOT / 'data' / 'sample_benchmark.json').read_text(encoding='utf-8'))['questions'] if q['id'] == 'ko-1/q4')
            page.select_option('.jm-question select', label=f"ko-1/q4 — {q4['question']}")
            page.wait_for_function("document.querySelector('.jm-question-html') && document.querySelector('.jm-question-html').innerText.includes('서른 즈음에')",
                                   timeout=STEP_TIMEOUT)
            qtext = page.inner_text('.jm-question-html')
            assert 'raw-demo' in qtext and 'gold D1:8' in qtext, qtext[:1500]
            page.screenshot(path=str(SHOT_Q), full_page=True)
            assert not errors, f"page errors: {errors[:3]}"
            t_total = time.perf_counter() - t_start
            print(f"\nexplorer browser test: page load {t_load:.1f} s, whole test {t_total:.1f} s, screenshots {SHOT}, {SHOT_Q}")
        finally:
            ctx.close()
            shutil.rmtree(profile, ignore_errors=True)
