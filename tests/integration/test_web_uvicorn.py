# SPDX-License-Identifier: Apache-2.0
"""A real web deployment: uvicorn (and gunicorn) with two web workers (each a tocsin
Client, the FastAPI lifespan of examples/web_fastapi.py) and ``tocsin run`` with two
workers (importing examples/web_jobs.py); an HTTP request enqueues, a worker runs the job.

Waits are bounded polls of real time; the assertions are outcomes (the job ran once for
the request, both servers stop cleanly on SIGTERM), never speed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from tests.procs import close_pipes

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: Real seconds any single wait may take (imports on a loaded 2-core machine).
WAIT = 60.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _listening(port: int) -> bool:
    """Whether something accepts connections on ``port`` (asked before the one POST)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            return True
    except OSError:
        return False


def _post(url: str) -> int:
    """POST once and wait for the answer: a request is never sent twice (a retry after
    a slow answer would enqueue a second run once the first had finished, as the id
    upsert promises), so the one wait is the whole ``WAIT``."""
    request = urllib.request.Request(url, method="POST", data=b"")
    try:
        with urllib.request.urlopen(request, timeout=WAIT) as response:
            status: int = response.status
            return status
    except urllib.error.HTTPError as exc:
        return exc.code


def _stop(proc: subprocess.Popen[bytes], what: str, log: Path) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
        raise AssertionError(f"{what} did not stop on SIGTERM:\n{log.read_text()}") from None
    finally:
        close_pipes(proc)
    assert code == 0, f"{what} exited {code}:\n{log.read_text()}"


def _server(name: str, port: int) -> list[str]:
    if name == "uvicorn":
        return [sys.executable, "-m", "uvicorn", "web_fastapi:app", "--workers", "2",
                "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]  # fmt: skip
    return [sys.executable, "-m", "gunicorn", "web_fastapi:app", "--workers", "2",
            "--worker-class", "uvicorn.workers.UvicornWorker",
            "--bind", f"127.0.0.1:{port}", "--log-level", "warning"]  # fmt: skip


@pytest.mark.parametrize("server", ["uvicorn", "gunicorn"])
def test_a_request_to_the_web_server_enqueues_and_a_tocsin_run_worker_runs_it(
    server: str, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path}/app.db"
    outbox = tmp_path / "outbox.txt"
    env = dict(os.environ, TOCSIN_STORE=store, WELCOME_OUTBOX=str(outbox))
    port = _free_port()
    worker_log = (tmp_path / "worker.log").open("wb")
    web_log = (tmp_path / "web.log").open("wb")
    worker = subprocess.Popen(
        [sys.executable, "-m", "tocsin", "run", "web_jobs:main", "--workers", "2",
         "--store", store, "--run-dir", str(tmp_path / "run"), "--stop-timeout", "5"],
        cwd=EXAMPLES, env=env, stdout=worker_log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    web = subprocess.Popen(
        _server(server, port), cwd=EXAMPLES, env=env, stdout=web_log, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + WAIT
        while not _listening(port):
            assert time.monotonic() < deadline, f"{server} never listened"
            assert web.poll() is None, (tmp_path / "web.log").read_text()
            time.sleep(0.1)
        assert _post(f"http://127.0.0.1:{port}/signup/7") == 202
        deadline = time.monotonic() + WAIT
        while not outbox.exists() or not outbox.read_text().strip():
            assert time.monotonic() < deadline, (
                f"no worker ran the job:\n{(tmp_path / 'worker.log').read_text()}"
            )
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            time.sleep(0.1)
        lines = outbox.read_text().splitlines()
        assert [line.split()[0] for line in lines] == ["7"]
        assert lines[0].split()[1] == "welcome-7"  # the id the handler gave
    finally:
        try:
            _stop(web, server, tmp_path / "web.log")
        finally:
            _stop(worker, "tocsin run", tmp_path / "worker.log")
            worker_log.close()
            web_log.close()
