#!/usr/bin/env python
"""Write README.md from nbs/index.ipynb with nbconvert (nbdev-readme needs Quarto, which can't be installed offline)."""
import sys
from pathlib import Path
import nbformat
from nbconvert import MarkdownExporter

ROOT = Path(__file__).resolve().parents[1]

def main():
    nb = nbformat.read(ROOT/'nbs'/'index.ipynb', as_version=4)
    nb.cells = [c for c in nb.cells if not c.source.lstrip().startswith('#|')]
    body, _ = MarkdownExporter().from_notebook_node(nb)
    note = '<!-- Generated from nbs/index.ipynb by tools/readme.py (make docs); edit the notebook, not this file. -->\n\n'
    (ROOT/'README.md').write_text(note + body.strip() + '\n', encoding='utf-8')

if __name__ == '__main__': sys.exit(main())
