#!/usr/bin/env python
"""Build the documentation site from the notebooks, offline: `make docs` (or `python tools/docs.py`).

Tool: MkDocs + mkdocs-jupyter (+ the Material theme, which mkdocs-jupyter installs), all from PyPI. nbdev's own site
needs Quarto, and Jupyter Book 2 / mystmd fetch their site templates at build time; neither installs offline from the
registries. MkDocs renders notebooks through nbconvert and ships every asset it uses.

1. Each notebook of nbs/ (index first, then in the card's order, by number) is copied, nbdev's `add_show_docs`
   processor adds a `show_doc` cell after each exported definition (the API reference), and it is executed with
   nbclient in nbs/ (as nbdev-test runs it; cells marked `#| eval: false` are skipped), two at a time. Plotly figures
   are rendered with plotly.js inline (PLOTLY_RENDERER=notebook), so the site needs no network.
2. nbdev directives are removed, `#| hide` cells and the `default_exp` cell dropped.
3. MkDocs builds `_site/` from the processed notebooks in `_site_src/`, with the navigation in the card's order.

A notebook that fails to execute fails the build, naming it and the cell. `--no-execute` builds from the notebooks
as they are (no outputs: quick, for checking the layout). Prints the time each step took.
"""
from __future__ import annotations
import argparse, json, os, re, shutil, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NBS, SRC, SITE = ROOT / 'nbs', ROOT / '_site_src' / 'docs', ROOT / '_site'
_re_dir = re.compile(r'^\s*#\|\s*(.*)$')
CELL_TIMEOUT = 1800


def notebooks() -> list[Path]:
    "index.ipynb, then the numbered notebooks in order (the README's card order)."
    nbs = sorted(p for p in NBS.glob('[0-9]*.ipynb'))
    return [NBS / 'index.ipynb', *nbs]


def directives(cell) -> dict:
    out = {}
    for line in cell.source.splitlines():
        m = _re_dir.match(line)
        if not m: break
        k, _, v = m.group(1).partition(':') if ':' in m.group(1) else (m.group(1).split()[0], '', ' '.join(m.group(1).split()[1:]))
        out[k.strip()] = v.strip()
    return out


def strip_directives(src: str) -> str:
    lines = src.splitlines()
    while lines and _re_dir.match(lines[0]): lines.pop(0)
    return '\n'.join(lines)


def read_with_show_docs(path: Path) -> nbformat.NotebookNode:
    "The notebook with nbdev's own `add_show_docs` processor applied: a show_doc cell after each exported definition."
    from nbdev.process import NBProcessor
    from nbdev.processors import add_show_docs
    nb = nbformat.read(path, as_version=4)
    p = NBProcessor(path, procs=[add_show_docs], rm_directives=False)
    p.process()
    cells = []
    for c in p.nb.cells:
        src = c.source if isinstance(c.source, str) else ''.join(c.source)
        if c.cell_type == 'code':
            cell = nbformat.v4.new_code_cell(src)
            if getattr(c, 'has_sd', False): cell.metadata['jm_show_doc'] = True
        elif c.cell_type == 'markdown': cell = nbformat.v4.new_markdown_cell(src)
        else: cell = nbformat.v4.new_raw_cell(src)
        cells.append(cell)
    if any(c.metadata.get('jm_show_doc') for c in cells):
        cells.insert(0, nbformat.v4.new_code_cell('from nbdev.showdoc import show_doc'))
        cells[0].metadata['jm_hidden'] = True
    nb.cells = cells
    return nb


def prepare(path: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4) if path.name == 'index.ipynb' else read_with_show_docs(path)
    for c in nb.cells:
        if c.cell_type != 'code': continue
        d = directives(c)
        if d.get('eval', '').lower() == 'false': c.metadata.setdefault('tags', []).append('skip-execution')
        if 'hide' in d or 'default_exp' in d: c.metadata['jm_hidden'] = True
    return nb


def execute(nb, name: str) -> nbformat.NotebookNode:
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    env_before = os.environ.get('PLOTLY_RENDERER')
    client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name='python3', resources={'metadata': {'path': str(NBS)}},
                            allow_errors=False)
    try: client.execute()
    except CellExecutionError as e:
        raise SystemExit(f"docs: {name} failed to execute:\n{str(e)[-3000:]}") from None
    finally:
        if env_before is not None: os.environ['PLOTLY_RENDERER'] = env_before
    return nb


def finish(nb) -> nbformat.NotebookNode:
    cells = []
    for c in nb.cells:
        if c.metadata.get('jm_hidden'): continue
        if c.cell_type == 'code':
            c.source = strip_directives(c.source)
            if c.metadata.get('jm_show_doc'): c.source = ''            # show the reference, not the call
            if not c.source.strip() and not c.get('outputs'): continue
        cells.append(c)
    nb.cells = cells
    return nb


def title(nb, path: Path) -> str:
    for c in nb.cells:
        if c.cell_type == 'markdown':
            m = re.search(r'^#\s+(.+)$', c.source, re.M)
            if m: return m.group(1).strip()
    return path.stem


def mkdocs_yml(pages: list[tuple[str, str]]) -> str:
    nav = '\n'.join(f"  - {json.dumps(t, ensure_ascii=False)}: {f}" for t, f in pages)
    return f"""site_name: jarvis_memory
site_description: Long-term memory for a personal AI agent, scoped, recalled on demand, measured against naive RAG
docs_dir: {SRC}
site_dir: {SITE}
use_directory_urls: false
theme:
  name: material
  font: false          # no Google Fonts: the site is built and read offline
  language: en
  features: [navigation.instant.prefetch]
plugins:
  - search
  - mkdocs-jupyter:
      execute: false
      include_source: true
      ignore_h1_titles: false
      include_requirejs: false
extra_css: [extra.css]
nav:
{nav}
"""


EXTRA_CSS = """/* Korean text: Debian's Noto CJK (fonts-noto-cjk) or the system's own CJK fonts, never a web font */
body, .md-typeset, .jp-RenderedHTMLCommon { font-family: -apple-system, "Segoe UI", Roboto, "Noto Sans", "Noto Sans CJK KR", "Apple SD Gothic Neo", "Malgun Gothic", sans-serif; }
code, pre, .md-typeset code { font-family: "DejaVu Sans Mono", "Noto Sans Mono CJK KR", monospace; }
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--no-execute', action='store_true', help='build from the notebooks as they are (no outputs)')
    ap.add_argument('--only', default='', help='comma-separated notebook stems to include (with index), for a quick look')
    ap.add_argument('--workers', type=int, default=2)
    a = ap.parse_args(argv)
    t0 = time.time()
    paths = notebooks()
    if a.only:
        keep = set(a.only.split(','))
        paths = [p for p in paths if p.stem in keep or p.name == 'index.ipynb']
    shutil.rmtree(SRC.parent, ignore_errors=True); SRC.mkdir(parents=True)
    os.environ['PLOTLY_RENDERER'] = 'notebook'          # plotly.js inline: the site works offline
    os.environ.setdefault('PYTHONPATH', str(ROOT))
    prepared = {p: prepare(p) for p in paths}

    def run(p):
        t = time.time()
        nb = prepared[p] if a.no_execute else execute(prepared[p], p.name)
        print(f"docs: {p.name} {'prepared' if a.no_execute else 'executed'} in {time.time() - t:.0f} s", flush=True)
        return p, finish(nb)

    with ThreadPoolExecutor(max(1, a.workers)) as ex: done = dict(ex.map(run, paths))
    pages = []
    for p in paths:
        nb = done[p]
        nbformat.write(nb, SRC / p.name)
        pages.append(('Home' if p.name == 'index.ipynb' else title(nb, p), p.name))
    (SRC / 'extra.css').write_text(EXTRA_CSS, encoding='utf-8')
    cfg = ROOT / '_site_src' / 'mkdocs.yml'
    cfg.write_text(mkdocs_yml(pages), encoding='utf-8')
    t1 = time.time()
    r = subprocess.run([str(Path(sys.executable).parent / 'mkdocs'), 'build', '--clean', '-f', str(cfg)], cwd=SRC.parent,     # its .cache/ goes there
                       env={**os.environ, 'NO_MKDOCS_2_WARNING': '1'})
    if r.returncode: return r.returncode
    print(f"docs: notebooks {t1 - t0:.0f} s, mkdocs {time.time() - t1:.0f} s; open {SITE / 'index.html'}")
    return 0


if __name__ == '__main__': sys.exit(main())
