# Make `from servers import ...` (tests/) and `import jarvis_memory` (project root; the package is not pip-installed) work.
import sys, pathlib
_here = pathlib.Path(__file__).parent
for _p in (_here, _here.parent):
    if str(_p) not in sys.path: sys.path.insert(0, str(_p))
