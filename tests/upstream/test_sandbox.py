"""stdio servers under bubblewrap: no data folder, no network, read-only files, private /tmp; real
servers still work sandboxed; a missing bwrap is a clear, fatal error."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import anyio
import pytest

from host.upstream.manager import ServerManager
from host.upstream.sandbox import check_sandbox, sandbox_args
from host.upstream.status import ConnectionState
from tests.upstream.support import FAKES, config

PY = sys.executable
PROBE = str(FAKES / "sandbox_probe.py")
REPO = Path(__file__).resolve().parents[2]
EVERYTHING = REPO / "peers" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
TIME_SERVER = Path(PY).parent / "mcp-server-time"


@pytest.fixture
def outside_tmp():
    """A temporary folder outside /tmp (the sandbox's private /tmp would hide anything under it anyway)."""
    base = REPO / "test-artifacts"
    base.mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=base, prefix="sandbox-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def probe(sandbox=None):
    entry = {"command": PY, "args": [PROBE]}
    if sandbox is not None:
        entry["toolhost"] = {"sandbox": sandbox}
    return entry


async def text(m, server, tool, args):
    result = await m.call_tool(server, tool, args, timeout_seconds=20)
    return result.content[0].text


def test_bwrap_runs_on_this_machine():
    cfg = config({"p": probe(True)})
    problem, found = anyio.run(check_sandbox, cfg.servers["p"], {"PATH": "/usr/bin:/bin"})
    assert (problem, found) == (None, shutil.which("bwrap"))


@pytest.mark.anyio
async def test_sandboxed_server_cannot_read_data_folder_or_open_a_socket(outside_tmp):
    data_dir = outside_tmp / "data"
    data_dir.mkdir()
    (data_dir / "secret.txt").write_text("the data folder")
    work = outside_tmp / "work"
    work.mkdir()
    other = outside_tmp / "other"
    other.mkdir()
    (other / "visible.txt").write_text("read-only elsewhere")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    cfg = config({
        "boxed": probe({"writable": [str(work)]}),
        "netted": probe({"network": True}),
        "plain": probe(),
    })
    try:
        with anyio.fail_after(60):
            async with ServerManager(cfg, data_dir=data_dir, reconnect=False) as m:
                assert {s.name: s.state for s in m.statuses()} == {
                    "boxed": ConnectionState.CONNECTED, "netted": ConnectionState.CONNECTED,
                    "plain": ConnectionState.CONNECTED}
                secret = str(data_dir / "secret.txt")
                assert await text(m, "plain", "read", {"path": secret}) == "the data folder"
                assert await text(m, "boxed", "read", {"path": secret}) == "error: No such file or directory"
                assert await text(m, "boxed", "listdir", {"path": str(data_dir)}) == ""
                assert await text(m, "plain", "connect", {"host": "127.0.0.1", "port": port}) == "connected"
                assert await text(m, "boxed", "connect", {"host": "127.0.0.1", "port": port}) == (
                    "error: Connection refused")  # its own loopback: nothing listens there
                assert await text(m, "netted", "connect", {"host": "127.0.0.1", "port": port}) == "connected"
                # writable folder yes, anything else read-only, /tmp private
                assert await text(m, "boxed", "write", {"path": str(work / "out.txt"), "text": "w"}) == "ok"
                assert (work / "out.txt").read_text() == "w"
                assert await text(m, "boxed", "read", {"path": str(other / "visible.txt")}) == "read-only elsewhere"
                assert await text(m, "boxed", "write", {"path": str(other / "x.txt"), "text": "w"}) == (
                    "error: Read-only file system")
                marker = Path(tempfile.gettempdir()) / f"sandbox-marker-{port}"
                assert await text(m, "boxed", "write", {"path": str(marker), "text": "w"}) == "ok"
                assert not marker.exists()
    finally:
        listener.close()


@pytest.fixture
def run_socket():
    """A listening Unix socket under /run (where local daemons keep theirs: PostgreSQL, Docker, D-Bus);
    ``$XDG_RUNTIME_DIR`` (``/run/user/<uid>``) when /run itself is not writable."""
    base = Path("/run") if os.access("/run", os.W_OK) else Path(os.environ.get("XDG_RUNTIME_DIR", "/nonexistent"))
    assert base.is_dir() and os.access(base, os.W_OK), "needs a writable /run or $XDG_RUNTIME_DIR for its socket"
    folder = Path(tempfile.mkdtemp(dir=base, prefix="toolhost-sandbox-"))
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(folder / "daemon.sock"))
    listener.listen(8)
    yield folder / "daemon.sock"
    listener.close()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.anyio
async def test_sandboxed_server_reaches_no_local_daemon_socket(outside_tmp, run_socket):
    agent_dir = outside_tmp / "agent"
    agent_dir.mkdir()
    agent = socket.socket(socket.AF_UNIX)
    agent.bind(str(agent_dir / "agent.sock"))
    agent.listen(8)
    netted = probe({"network": True})
    netted["env"] = {"SSH_AUTH_SOCK": str(agent_dir / "agent.sock")}  # a socket its environment names
    cfg = config({"boxed": probe(True), "netted": netted, "plain": probe()})
    try:
        with anyio.fail_after(60):
            async with ServerManager(cfg, data_dir=outside_tmp / "data", reconnect=False) as m:
                daemon = {"path": str(run_socket)}
                assert await text(m, "plain", "connect_unix", daemon) == "connected"
                assert await text(m, "boxed", "connect_unix", daemon) == "error: No such file or directory"
                assert await text(m, "boxed", "listdir", {"path": "/run"}) == ""  # an empty /run
                assert await text(m, "plain", "listdir", {"path": "/run"}) != ""
                # with network: /run stays (DNS), the daemons' sockets and the environment's do not
                pg = "" if Path("/run/postgresql").is_dir() else "error: No such file or directory"
                assert await text(m, "netted", "listdir", {"path": "/run/postgresql"}) == pg
                agent_path = {"path": str(agent_dir / "agent.sock")}
                assert await text(m, "plain", "connect_unix", agent_path) == "connected"
                assert await text(m, "netted", "connect_unix", agent_path) == "error: Connection refused"  # /dev/null
    finally:
        agent.close()


@pytest.mark.anyio
async def test_missing_bwrap_is_a_fatal_error_naming_the_setting(tmp_path):
    cfg = config({"p": probe({"command": str(tmp_path / "no-bwrap")})})
    with anyio.fail_after(30):
        async with ServerManager(cfg, data_dir=tmp_path, reconnect=True) as m:
            (status,) = m.statuses()
            assert status.state is ConnectionState.FAILED
            assert status.error == (
                f"start: mcpServers.p.toolhost.sandbox: bubblewrap ('{tmp_path / 'no-bwrap'}') was not found "
                "(install it: apt-get install bubblewrap; or set mcpServers.p.toolhost.sandbox.command to its full "
                "path; or remove mcpServers.p.toolhost.sandbox to run the server unsandboxed)"
                " (not retried: fix it, then run `toolhost reconnect p` or reload the config)")


@pytest.mark.anyio
async def test_missing_writable_folder_is_named(tmp_path):
    cfg = config({"p": probe({"writable": [str(tmp_path / "nope")]})})
    problem, _ = await check_sandbox(cfg.servers["p"], {"PATH": "/usr/bin:/bin"})
    assert problem == (f"mcpServers.p.toolhost.sandbox.writable: folder '{tmp_path / 'nope'}' does not exist "
                       "(create it, or remove it from the list)")


@pytest.mark.anyio
async def test_kernel_refusal_is_reported_with_what_bwrap_said(tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    cfg = config({"p": probe({"command": str(fake)})})
    problem, _ = await check_sandbox(cfg.servers["p"], {"PATH": "/usr/bin:/bin"})
    assert problem.startswith(
        f"mcpServers.p.toolhost.sandbox: the kernel refused the sandbox's namespaces ({fake} said: bwrap: No "
        "permissions to creating new namespace); allow user namespaces")


@pytest.mark.anyio
async def test_real_servers_work_sandboxed(outside_tmp):
    assert TIME_SERVER.exists(), "mcp-server-time is a test dependency (pip install -e '.[test]')"
    assert EVERYTHING.exists(), "run scripts/test.sh: it installs the npm peer server-everything into peers/"
    node = shutil.which("node")
    cfg = config({
        "time": {"command": str(TIME_SERVER), "toolhost": {"sandbox": True}},
        "everything": {"command": node, "args": [str(EVERYTHING), "stdio"], "toolhost": {"sandbox": True}},
    })
    with anyio.fail_after(90):
        async with ServerManager(cfg, data_dir=outside_tmp, reconnect=False) as m:
            assert {s.name: s.state for s in m.statuses()} == {
                "time": ConnectionState.CONNECTED, "everything": ConnectionState.CONNECTED}
            now = await m.call_tool("time", "get_current_time", {"timezone": "UTC"}, timeout_seconds=20)
            assert '"timezone": "UTC"' in now.content[0].text
            echo = await m.call_tool("everything", "echo", {"message": "boxed"}, timeout_seconds=20)
            assert echo.content[0].text == "Echo: boxed"


def test_sandbox_args_layout(tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".netrc").write_text("machine x")
    data = tmp_path / "data"
    data.mkdir()
    cfg = config({"p": probe({"writable": [str(tmp_path / "w")], "hidden": [str(tmp_path / "w" / "keys")]})})
    (tmp_path / "w" / "keys").mkdir(parents=True)
    args = sandbox_args(cfg.servers["p"].toolhost.sandbox, data_dir=data, cwd="/srv", home=str(home))
    assert args == [
        "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp",
        "--tmpfs", "/run",  # /var/run links to it here
        "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent",
        "--unshare-net",
        "--bind", str(tmp_path / "w"), str(tmp_path / "w"),
        "--tmpfs", str(data), "--tmpfs", str(home / ".ssh"), "--ro-bind", "/dev/null", str(home / ".netrc"),
        "--tmpfs", str(tmp_path / "w" / "keys"),
        "--chdir", "/srv",
    ]


def test_sandbox_folders_expand_workspace_folder_and_home_and_must_be_absolute(tmp_path):
    from host.config import parse_config

    cfg = parse_config({"mcpServers": {"s": {"command": "x", "toolhost": {"sandbox": {
        "writable": ["${workspaceFolder}/out", "~/cache"], "hidden": ["${HOME}/.config/secrets"]}}}}},
        source=str(tmp_path / "proj" / ".vscode" / "mcp.json"), environ={"HOME": "/home/u"})
    box = cfg.servers["s"].toolhost.sandbox
    assert box.writable == [str(tmp_path / "proj" / "out"), str(Path("~/cache").expanduser())]
    assert box.hidden == ["/home/u/.config/secrets"]
    assert parse_config({"mcpServers": {"s": {"command": "x", "toolhost": {"sandbox": False}}}}
                        ).servers["s"].toolhost.sandbox is None
    bad = parse_config({"mcpServers": {"s": {"command": "x", "toolhost": {"sandbox": {"writable": ["out"]}}}}})
    assert bad.failed["s"].reason == (
        "mcpServers.s.toolhost.sandbox.writable: 'out' is not an absolute path (write e.g. "
        "\"${workspaceFolder}/out\") (got a list of 1 items)")


@pytest.mark.anyio
async def test_a_writable_folder_under_the_data_folder_is_the_servers_own_or_refused(outside_tmp):
    data_dir = outside_tmp / "data"
    own = data_dir / "servers" / "notes"
    own.mkdir(parents=True)
    stray = data_dir / "elsewhere"
    stray.mkdir()
    (data_dir / "secret.txt").write_text("the data folder")
    cfg = config({"notes": probe({"writable": [str(own)]}), "stray": probe({"writable": [str(stray)]})})
    with anyio.fail_after(60):
        async with ServerManager(cfg, data_dir=data_dir, reconnect=False) as m:
            assert await text(m, "notes", "write", {"path": str(own / "n.txt"), "text": "kept"}) == "ok"
            assert (own / "n.txt").read_text() == "kept"  # on the host: not a throwaway tmpfs
            assert await text(m, "notes", "read", {"path": str(data_dir / "secret.txt")}) == (
                "error: No such file or directory")  # the rest of the data folder stays hidden
            st = m.connections["stray"].status
            assert st.state is ConnectionState.FAILED
            assert st.error == (
                f"start: mcpServers.stray.toolhost.sandbox.writable: '{stray}' is inside {data_dir} (toolhost's data "
                "folder, empty inside the sandbox): its writes would be lost; use ${TOOLHOST_DATA_DIR}/servers/stray "
                "(the server's own folder) or a folder outside it")
