"""A throwaway PostgreSQL cluster for tests and benchmarks: ``initdb`` + ``pg_ctl`` in a temp folder.

The cluster listens on a free loopback port (and a Unix socket in its folder), trusts local
connections, runs without fsync (throwaway data) and is stopped and deleted by :meth:`stop`.
PostgreSQL refuses to run as root, so under root (CI) the server runs as the ``postgres`` user
that Debian's package creates (else ``nobody``); the folder is handed to that user.

Binaries: ``$TOOLHOST_PG_BIN``, else the newest ``/usr/lib/postgresql/*/bin``, else ``PATH``
(``scripts/setup.d/20-postgresql.sh`` installs them).

    with PostgresCluster() as pg:
        url = pg.create_database()        # postgresql+psycopg://toolhost@127.0.0.1:PORT/t_...
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from types import TracebackType

import psycopg

__all__ = ["PostgresCluster", "find_pg_bin"]

SUPERUSER = "toolhost"


def find_pg_bin() -> Path:
    """The folder holding ``initdb``/``pg_ctl``.

    Raises:
        RuntimeError: PostgreSQL is not installed (says how to install it).
    """
    env = os.environ.get("TOOLHOST_PG_BIN")
    candidates = [Path(env)] if env else []
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name), reverse=True)
    which = shutil.which("pg_ctl")
    if which:
        candidates.append(Path(which).resolve().parent)
    for c in candidates:
        if (c / "initdb").is_file() and (c / "pg_ctl").is_file():
            return c
    raise RuntimeError(
        "PostgreSQL server binaries not found (initdb, pg_ctl): run `bash scripts/setup.d/20-postgresql.sh` "
        "as root (apt-get install postgresql) or set TOOLHOST_PG_BIN to their folder"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server_user() -> tuple[int, int] | None:
    """``(uid, gid)`` to run the server as when we are root, else ``None`` (run as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            continue
        return pw.pw_uid, pw.pw_gid
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' user exists to run PostgreSQL")


class PostgresCluster:
    """One throwaway cluster (see the module docstring).

    Attributes:
        root: the temp folder (data, socket, log); deleted by :meth:`stop`.
        port: the loopback TCP port.
    """

    def __init__(self) -> None:
        self.bin = find_pg_bin()
        self.user = _server_user()
        self.root = Path(tempfile.mkdtemp(prefix="toolhost-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = 0
        self._started = False
        if self.user is not None:
            os.chown(self.root, *self.user)
        os.chmod(self.root, 0o700)

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        kwargs = {"user": self.user[0], "group": self.user[1], "extra_groups": []} if self.user else {}
        return subprocess.run(
            [str(self.bin / args[0]), *args[1:]], capture_output=True, text=True, check=check,
            cwd=self.root, timeout=120, **kwargs,  # type: ignore[arg-type]
        )

    def start(self) -> PostgresCluster:
        """initdb + start on a free port (retried on a port race).

        Raises:
            RuntimeError: with the server log when it cannot start.
        """
        try:
            self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
                      "--locale=C", "--no-sync")
        except subprocess.CalledProcessError as e:
            self.stop()
            raise RuntimeError(f"initdb failed: {e.stderr or e.stdout}") from None
        last = ""
        for _attempt in range(5):
            self.port = _free_port()
            opts = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                    "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300 "
                    "-c shared_buffers=32MB")
            done = self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", opts, "-w", "-t", "60",
                             "start", check=False)
            if done.returncode == 0:
                self._started = True
                return self
            last = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else done.stderr
        self.stop()
        raise RuntimeError(f"PostgreSQL did not start: {last}")

    def url(self, database: str = "postgres") -> str:
        """SQLAlchemy URL of ``database`` (psycopg 3, TCP loopback, trusted superuser)."""
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def _admin(self) -> psycopg.Connection:
        return psycopg.connect(host="127.0.0.1", port=self.port, user=SUPERUSER, dbname="postgres",
                               autocommit=True)

    def create_database(self, name: str | None = None) -> str:
        """Create an empty database (default: a unique name); return its URL."""
        name = name or f"t_{uuid.uuid4().hex[:12]}"
        with self._admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, url_or_name: str) -> None:
        """Drop a database made by :meth:`create_database`, disconnecting whoever still uses it."""
        name = url_or_name.rsplit("/", 1)[-1]
        with self._admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def pause(self) -> None:
        """Stop the server (fast shutdown: open connections are cut) but keep its data and port."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")
        self._started = False

    def resume(self) -> None:
        """Start a :meth:`pause` d server again on the same port.

        Raises:
            RuntimeError: with the server log when it cannot start.
        """
        opts = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300 -c shared_buffers=32MB")
        done = self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", opts, "-w", "-t", "60",
                         "start", check=False)
        if done.returncode != 0:
            raise RuntimeError(f"PostgreSQL did not restart: {self.log.read_text(errors='replace')[-2000:]}")
        self._started = True

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete the folder. Safe to call twice."""
        if self._started:
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop", check=False)
            self._started = False
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
