"""A stdio server's whole process group dies with toolhost, even on ``kill -9`` (host/upstream/pdeath.py),
and the ``serve.json`` such a serve leaves behind (naming a dead pid) misleads no command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio

from host.upstream.pdeath import LAUNCHER, wrap
from tests.admin.support import PY, TOOLHOST, Serve, people
from tests.admin.test_audit_via_serve import UNKNOWN_TOOL_STDERR


def children(pid: int) -> dict[int, str]:
    """Live descendants of ``pid``: pid -> command line (from /proc)."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(entry)], commands[int(entry)] = int(fields[1]), cmd.strip()
    found: dict[int, str] = {}
    frontier = [pid]
    while frontier:
        p = frontier.pop()
        for child, parent in parents.items():
            if parent == p and child not in found:
                found[child] = commands[child]
                frontier.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def wait_all_exited(pids: list[int], seconds: float) -> None:
    """Wait (bounded) until every pid has exited: each pidfd becomes readable; reap our own re-parented
    ones (this test runner is a child subreaper, see tests/conftest.py)."""
    with anyio.fail_after(seconds):
        for pid in pids:
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                continue
            try:
                await anyio.wait_readable(fd)
            finally:
                os.close(fd)
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def tree_config(tmp_path: Path) -> tuple[Path, Path]:
    """A config whose one stdio server is ``sh`` that starts a ``sleep`` grandchild (like ``npx`` -> ``node``)
    and then execs the orders example; returns (config, file with the sleep's pid)."""
    pidfile = tmp_path / "grandchild.pid"
    script = f'sleep 3600 & echo $! > "{pidfile}"; exec "{PY}" -m servers.examples.orders'
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"toolhost": {"connect_timeout_seconds": 30},
                               "mcpServers": {"orders": {"command": "sh", "args": ["-c", script]}}}))
    return cfg, pidfile


def test_kill_9_of_serve_stops_its_stdio_servers_and_their_children(tmp_path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    people(data)
    cfg, pidfile = tree_config(tmp_path)
    with Serve(cfg, data) as serve:
        with serve.api() as api:
            [row] = api.get("/servers").json()["servers"]
        assert (row["name"], row["state"], row["tools"]) == ("orders", "connected", 3)
        tree = children(serve.proc.pid)
        grandchild = int(pidfile.read_text())
        launchers = [p for p, cmd in tree.items() if LAUNCHER in cmd]
        servers_ = [p for p, cmd in tree.items() if cmd.endswith("-m servers.examples.orders") and LAUNCHER not in cmd]
        assert (len(launchers), len(servers_), tree.get(grandchild)) == (1, 1, "sleep 3600")
        # the launcher leads the server's process group; the server and its child are in it
        assert {os.getpgid(p) for p in (*launchers, *servers_, grandchild)} == {launchers[0]}

        serve.proc.send_signal(signal.SIGKILL)
        assert serve.proc.wait(timeout=30) == -signal.SIGKILL
        anyio.run(wait_all_exited, [*launchers, *servers_, grandchild], 15.0)
        assert [p for p in (*launchers, *servers_, grandchild) if alive(p)] == []

    # serve.json and admin.token outlived the killed serve; they name a dead pid, so every command works alone
    record = json.loads((data / "serve.json").read_text())
    assert record["pid"] == serve.proc.pid and (data / "admin.token").exists()
    env = {**os.environ, "COLUMNS": "200"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([TOOLHOST, *args, "--data-dir", str(data)], capture_output=True, text=True,
                              timeout=120, env=env)
        # a clean stop leaves nothing either: the launcher stops what the server left in its group
        assert not alive(int(pidfile.read_text())), args
        return done

    listed = cli("servers", "--json", "--config", str(cfg))
    assert [(s["name"], s["state"], s["tools"]) for s in json.loads(listed.stdout)] == [("orders", "connected", 3)]
    users = cli("users", "list", "--json")
    assert (users.returncode, [u["name"] for u in json.loads(users.stdout)]) == (0, ["alice", "root"])
    called = cli("call", "orders__get_order", '{"order_id": "A1001"}', "--config", str(cfg))
    assert (called.returncode, json.loads(called.stdout)["total_cents"]) == (0, 8900)
    unknown = cli("call", "orders__nope", "--config", str(cfg))  # on its own: the same hint as through a serve
    assert (unknown.returncode, unknown.stderr) == (1, UNKNOWN_TOOL_STDERR)
    verified = cli("audit", "verify")
    assert verified.returncode == 0, verified.stderr
    gone = cli("reconnect", "orders")
    assert gone.returncode == 2 and "no toolhost serve runs on the data folder" in gone.stderr
    # a new serve on the same folder takes the files over
    with Serve(cfg, data) as again:
        assert json.loads((data / "serve.json").read_text())["pid"] == again.proc.pid
        grandchild = int(pidfile.read_text())
        assert alive(grandchild)
    assert not (data / "serve.json").exists() and not alive(grandchild)


def test_the_launcher_passes_the_exit_status_and_io_through() -> None:
    command, args = wrap(PY, ["-c", "import sys; print(sys.stdin.read().upper()); sys.exit(3)"])
    assert (command, args[:4]) == (sys.executable, ["-I", "-S", LAUNCHER, str(os.getpid())])
    done = subprocess.run([command, *args], input="hello", capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (3, "HELLO\n")
    command, args = wrap(PY, ["-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    killed = subprocess.run([command, *args], capture_output=True, text=True, timeout=60)
    assert killed.returncode == 128 + signal.SIGKILL


def test_the_command_starts_with_the_signal_dispositions_a_direct_spawn_gives_it() -> None:
    """Python ignores SIGPIPE; an ignored signal stays ignored across exec, so the launcher resets it."""
    show = ["-c", "grep -E '^Sig(Ign|Blk):' /proc/self/status"]
    direct = subprocess.run(["sh", *show], capture_output=True, text=True, timeout=60)
    command, args = wrap("sh", show)
    launched = subprocess.run([command, *args], capture_output=True, text=True, timeout=60)
    assert launched.stdout == direct.stdout
    ignored = int(launched.stdout.split("SigIgn:")[1].split()[0], 16)
    assert ignored & (1 << (signal.SIGPIPE - 1)) == 0


def test_the_launcher_names_a_missing_command_and_a_bad_call() -> None:
    def launch(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-I", "-S", LAUNCHER, *argv], capture_output=True, text=True,
                              timeout=60)

    missing = launch(str(os.getpid()), "--", "/nonexistent/toolhost-test-cmd")
    assert (missing.returncode, missing.stderr) == (
        127, "cannot start '/nonexistent/toolhost-test-cmd': No such file or directory\n")
    bad = launch("x", "--", "true")
    assert (bad.returncode, bad.stderr) == (2, "usage: pdeath.py <parent pid> -- <command> [args...]\n")


def test_a_launcher_whose_parent_is_already_gone_starts_nothing(tmp_path) -> None:
    marker = tmp_path / "ran"
    done = subprocess.run([sys.executable, "-I", "-S", LAUNCHER, "1", "--", "touch", str(marker)],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, marker.exists()) == (128 + signal.SIGTERM, False)
