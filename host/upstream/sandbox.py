"""stdio servers in a sandbox: the command line that runs one under bubblewrap (``bwrap``).

With ``"toolhost": {"sandbox": {...}}`` (:class:`host.config_model.SandboxOptions`) a stdio
server runs as ``bwrap <options> -- <command> <args>`` (Debian package ``bubblewrap``,
https://github.com/containers/bubblewrap, ``bwrap(1)``):

* the whole filesystem read-only (``--ro-bind / /``), a fresh ``/dev`` and ``/proc``, a private
  empty ``/tmp`` and ``/var/tmp`` (``--tmpfs``);
* no local daemon reachable through a Unix socket (connecting to one needs no write access, and a
  network namespace does not cover filesystem sockets: PostgreSQL's ``/run/postgresql`` with peer
  authentication, ``/run/docker.sock``, D-Bus, ssh and gpg agents): without network an empty ``/run``
  (``/var/run`` is a link to it on Debian); with ``"network": true`` (DNS may need
  ``/run/systemd/resolve``) the daemon sockets of :data:`HIDDEN_SOCKETS`, plus the sockets the
  server's environment names (``$XDG_RUNTIME_DIR``, ``$SSH_AUTH_SOCK``, a ``unix://`` ``$DOCKER_HOST``);
* the folders in ``writable`` bound read-write at the same path (``--bind``), e.g.
  ``${workspaceFolder}``;
* hidden (an empty tmpfs over a folder, ``/dev/null`` over a file): toolhost's data folder, the
  usual credential folders of ``$HOME`` (:data:`HIDDEN_IN_HOME`) and the paths in ``hidden``;
  these come after the writable binds, so a writable folder cannot re-expose them — except the
  server's own working folder ``<data>/servers/<name>`` (``${TOOLHOST_DATA_DIR}/servers/<name>``, where
  the bundled examples keep their data), bound again after the hiding when it is writable. Any other
  writable folder inside a hidden one is refused before the start (:func:`writable_conflict`): its
  writes would land in a throwaway tmpfs;
* no network unless ``"network": true`` (``--unshare-net``: only a private loopback), and
  private PID, IPC and UTS namespaces; ``--die-with-parent`` ties it to the launcher
  (:mod:`host.upstream.pdeath`), which runs outside the sandbox.

Before the first start, :func:`check_sandbox` runs ``bwrap … true`` once per (executable, network;
the answer is remembered for the process, except a timeout or an exec error) and reports a missing executable or a
kernel that refuses namespaces (containers without
``CAP_SYS_ADMIN``, ``kernel.unprivileged_userns_clone=0``, AppArmor's
``restrict_unprivileged_userns``) as a one-line, fatal reason naming the setting.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

import anyio

from host.config_model import SandboxOptions, StdioServerConfig
from host.paths import safe_file_name

__all__ = ["HIDDEN_IN_HOME", "HIDDEN_SOCKETS", "PROBE_TIMEOUT_SECONDS", "check_sandbox", "sandbox_args",
           "sandbox_command", "writable_conflict"]

HIDDEN_IN_HOME = (
    ".ssh", ".aws", ".gnupg", ".kube", ".docker", ".azure", ".config/gcloud", ".config/gh", ".password-store",
    ".netrc", ".npmrc", ".pypirc", ".git-credentials", ".pgpass", ".vault-token",
    # agents' and browsers' own state, shell histories (commands typed with tokens in them), keyrings
    ".claude", ".claude.json", ".config/Claude", ".cursor", ".codex", ".config/op", ".local/share/keyrings",
    ".mozilla", ".config/google-chrome", ".config/chromium", ".terraform.d",
    ".bash_history", ".zsh_history", ".python_history", ".psql_history", ".mysql_history", ".node_repl_history",
)
"""Paths under ``$HOME`` hidden inside every sandbox (when they exist)."""

HIDDEN_SOCKETS = (
    "/run/docker.sock", "/run/containerd", "/run/podman", "/run/postgresql", "/run/mysqld", "/run/dbus",
    "/run/user", "/run/snapd.socket", "/run/snapd-snap.socket", "/run/systemd/private", "/run/libvirt",
)
"""Local daemons' sockets hidden in a sandbox with network (without network all of ``/run`` is)."""

_SOCKET_ENV = ("XDG_RUNTIME_DIR", "SSH_AUTH_SOCK", "DOCKER_HOST")

PROBE_TIMEOUT_SECONDS = 10.0
"""Budget of the one-time ``bwrap … true`` check (seconds)."""

_probed: dict[tuple[str, bool], str | None] = {}


def _namespace_flags(options: SandboxOptions) -> list[str]:
    flags = ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent"]
    if not options.network:
        flags.append("--unshare-net")
    return flags


def _hide(path: str) -> list[str]:
    if os.path.isdir(path):
        return ["--tmpfs", path]
    if os.path.exists(path):
        return ["--ro-bind", "/dev/null", path]
    return []


def _run_folders() -> list[str]:
    """``/run`` and ``/var/run`` as the distinct folders they are here (one when ``/var/run`` links to ``/run``)."""
    return [p for p in dict.fromkeys(os.path.realpath(p) for p in ("/run", "/var/run")) if os.path.isdir(p)]


def _env_sockets(env: Mapping[str, str]) -> list[str]:
    """Socket paths (or their folders) the server's environment names (``_SOCKET_ENV``)."""
    found = []
    for name in _SOCKET_ENV:
        value = env.get(name, "")
        if name == "DOCKER_HOST":
            value = value.removeprefix("unix://") if value.startswith("unix://") else ""
        if os.path.isabs(value):
            found.append(value)
    return found


def _hidden_paths(options: SandboxOptions, data_dir: Path | None, home: str | None, sockets: list[str]) -> list[str]:
    hidden = [str(data_dir)] if data_dir is not None else []
    if home:
        hidden += [os.path.join(home, p) for p in HIDDEN_IN_HOME]
    if options.network:
        hidden += [*HIDDEN_SOCKETS, *sockets]
    hidden += options.hidden
    return list(dict.fromkeys(os.path.realpath(p) for p in hidden))


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def writable_conflict(
    options: SandboxOptions, *, server: str, data_dir: Path | None, home: str | None
) -> str | None:
    """One line naming the first ``writable`` folder that a hidden path would swallow (its writes would go
    to an empty tmpfs and be lost), with the fix; ``None`` when there is none. The server's own working
    folder under the data folder (``<data>/servers/<server>``) is allowed (see the module doc)."""
    own = _own_folder(data_dir, server)
    for folder in options.writable:
        real = os.path.realpath(folder)
        if own is not None and _inside(real, own):
            continue
        for hidden in _hidden_paths(options, data_dir, home, []):
            if _inside(real, hidden):
                what = "toolhost's data folder" if data_dir is not None and hidden == os.path.realpath(data_dir) \
                    else "a folder the sandbox hides"
                fix = (f"use ${{TOOLHOST_DATA_DIR}}/servers/{server} (the server's own folder) or a folder outside it"
                       if what == "toolhost's data folder" else "use a folder outside it, or remove it from hidden")
                return (f"mcpServers.{server}.toolhost.sandbox.writable: {folder!r} is inside {hidden} ({what}, "
                        f"empty inside the sandbox): its writes would be lost; {fix}")
    return None


def _own_folder(data_dir: Path | None, server: str | None) -> str | None:
    if data_dir is None or not server:
        return None
    return os.path.realpath(os.path.join(data_dir, "servers", safe_file_name(server)))


def sandbox_args(
    options: SandboxOptions, *, data_dir: Path | None, cwd: str | None, home: str | None, command: str | None = None,
    sockets: tuple[str, ...] | list[str] = (), server: str | None = None,
) -> list[str]:
    """The bwrap options (everything before ``--``) for one server (module docstring for the layout).

    ``data_dir`` (toolhost's data folder) and ``home`` (the child's ``$HOME``) are hidden as described;
    ``cwd`` becomes the sandbox's working folder. What the server starts from stays visible, read-only,
    when it lives under the private ``/tmp`` or ``/var/tmp``: its working folder (``cwd``, else toolhost's)
    and, for an absolute ``command`` such as a virtual environment's ``bin/python``, the folder two
    levels above it (the environment). ``sockets``: more socket paths to hide when the server has network
    (e.g. from its environment, :func:`sandbox_command`).
    """
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp"]
    if not options.network:
        for folder in _run_folders():
            args += ["--tmpfs", folder]
    start_from = [os.path.realpath(cwd or os.getcwd())]
    if command and os.path.isabs(command):
        start_from.append(os.path.dirname(os.path.dirname(os.path.abspath(command))))
    for folder in dict.fromkeys(start_from):
        if folder.startswith(("/tmp/", "/var/tmp/")) and os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    args += _namespace_flags(options)
    for folder in options.writable:
        args += ["--bind", folder, folder]
    for path in _hidden_paths(options, data_dir, home, list(sockets)):
        args += _hide(path)
    own = _own_folder(data_dir, server)
    for folder in options.writable:  # the server's own working folder, hidden with the data folder above
        if own is not None and _inside(os.path.realpath(folder), own):
            args += ["--bind", folder, folder]
    if cwd:
        args += ["--chdir", cwd]
    return args


def sandbox_command(
    config: StdioServerConfig, env: Mapping[str, str], *, data_dir: Path | None, bwrap: str
) -> tuple[str, list[str]]:
    """``(bwrap, [options..., "--", command, *args])`` for a server with ``toolhost.sandbox`` set."""
    assert config.toolhost.sandbox is not None
    options = sandbox_args(config.toolhost.sandbox, data_dir=data_dir, cwd=config.cwd, home=env.get("HOME"),
                           command=config.command, sockets=_env_sockets(env), server=config.name)
    return bwrap, [*options, "--", config.command, *config.args]


async def check_sandbox(config: StdioServerConfig, env: Mapping[str, str]) -> tuple[str | None, str]:
    """``(problem, bwrap)``: ``problem`` is ``None`` when bwrap runs here, else one line naming
    ``mcpServers.<name>.toolhost.sandbox`` and the fix; ``bwrap`` is the resolved executable."""
    options = config.toolhost.sandbox
    assert options is not None
    where = f"mcpServers.{config.name}.toolhost.sandbox"
    found = shutil.which(options.command, path=env.get("PATH", os.defpath)) if os.sep not in options.command else (
        options.command if os.access(options.command, os.X_OK) else None)
    if found is None:
        missing = (f"{where}: bubblewrap ({options.command!r}) was not found (install it: apt-get install bubblewrap; "
                   f"or set {where}.command to its full path; or remove {where} to run the server unsandboxed)")
        return missing, options.command
    for folder in options.writable:
        if not os.path.isdir(folder):
            return (f"{where}.writable: folder {folder!r} does not exist (create it, or remove it from the list)",
                    found)
    key = (found, options.network)
    if key not in _probed:
        argv = [found, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *_namespace_flags(options), "--",
                "true"]
        try:
            with anyio.fail_after(PROBE_TIMEOUT_SECONDS):
                done = await anyio.run_process(argv, check=False)
        except TimeoutError:  # not remembered: a loaded machine may do better next time
            return f"{where}: {found} did not finish a test run in {PROBE_TIMEOUT_SECONDS:g} s", found
        except OSError as err:
            return f"{where}: {found} cannot be run: {err.strerror or err}", found
        else:
            if done.returncode == 0:
                _probed[key] = None
            else:
                said = (done.stderr or b"").decode("utf-8", "replace").strip().splitlines()
                _probed[key] = (
                    f"{where}: the kernel refused the sandbox's namespaces ({found} said: "
                    f"{said[-1] if said else f'exit status {done.returncode}'}); allow user namespaces "
                    "(sysctl kernel.unprivileged_userns_clone=1, or kernel.apparmor_restrict_unprivileged_userns=0; "
                    f"in a container: --cap-add SYS_ADMIN or a seccomp profile that permits them), or remove {where}")
    return _probed[key], found
