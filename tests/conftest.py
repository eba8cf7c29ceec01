"""Shared test configuration: anyio runs on asyncio; every test gets its own data folder; the run
fails when a process it started is still alive at the end (see :func:`pytest_sessionfinish`)."""

from __future__ import annotations

import ctypes
import os
import signal
import time
from pathlib import Path

import pytest

PR_SET_CHILD_SUBREAPER = 36
LEFTOVER_GRACE_SECONDS = 10.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path, monkeypatch):
    """Point TOOLHOST_HOME at a temporary folder and unset any database URL, so no test writes outside it."""
    home = tmp_path / "toolhost-home"
    monkeypatch.setenv("TOOLHOST_HOME", str(home))
    for name in ("TOOLHOST_DATABASE_URL", "TOOLHOST_DB_URL"):  # never the developer's own database
        monkeypatch.delenv(name, raising=False)
    # Rankings in tests must not depend on when background embedding finishes: BM25 only, unless
    # a test turns the dense part on (HostRuntime(dense=True) and waits for the vector worker).
    monkeypatch.setenv("TOOLHOST_DENSE_SEARCH", "0")
    return home


# -- the permission database on every backend ------------------------------------------------
# `store_url` runs a test once per backend: on a SQLite file in the test's folder and on a fresh,
# empty database of one throwaway PostgreSQL cluster that the whole session shares (started on
# first use with initdb/pg_ctl, stopped at session end; see tests/postgres.py). Any store test
# gets PostgreSQL coverage by taking `store_url` (or `access`, in tests/permissions) instead of
# building a SQLite URL itself; `postgres_url` is a fresh PostgreSQL database alone (replica tests).

@pytest.fixture(scope="session")
def postgres_cluster():
    """The session's throwaway PostgreSQL cluster (:class:`tests.postgres.PostgresCluster`)."""
    from tests.postgres import PostgresCluster

    cluster = PostgresCluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_url(postgres_cluster):
    """A fresh, empty PostgreSQL database (dropped after the test): its SQLAlchemy URL."""
    url = postgres_cluster.create_database()
    try:
        yield url
    finally:
        postgres_cluster.drop_database(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """An empty permission database URL, once per backend (test ids end in ``[sqlite]`` / ``[postgresql]``)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return request.getfixturevalue("postgres_url")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Become a child subreaper (Linux): a process orphaned by a test (its parent died) is re-parented
    to this pytest process instead of init, so the end-of-run check below still sees it."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


_RUNNER_HELPERS = ("from multiprocessing.resource_tracker import main", "from multiprocessing.forkserver import main")
"""Helpers the test runner's own process starts on demand (``multiprocessing`` when a library makes a
semaphore): they read a pipe from this process and exit with it, so they are not leftovers of a test."""


def _descendants(root: int) -> dict[int, str]:
    """Live (non-zombie) descendants of ``root`` but the runner's own helpers: pid -> command line."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z":
            continue
        parents[int(entry)] = int(fields[1])
        commands[int(entry)] = cmd.strip()
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in found:
                if pid == root and any(h in commands[child] for h in _RUNNER_HELPERS):
                    continue
                found[child] = commands[child]
                frontier.append(child)
    return found


def _reap() -> None:
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when processes started by tests outlive it (after a short grace period for
    ones already stopping); they are killed so the machine stays clean."""
    if not Path("/proc").is_dir() or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    deadline = time.monotonic() + LEFTOVER_GRACE_SECONDS
    while True:
        _reap()
        left = _descendants(os.getpid())
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)  # polling the process table: exits of unrelated processes have no event to await
    if not left:
        return
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    _reap()
    lines = "\n".join(f"  pid {pid}: {cmd}" for pid, cmd in sorted(left.items()))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = f"tests left {len(left)} process(es) running (killed now):\n{lines}"
    if reporter is not None:
        reporter.write_line("")
        reporter.write_line(message, red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
