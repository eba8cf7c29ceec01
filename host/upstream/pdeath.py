"""A stdio server's process group dies with toolhost: the tiny launcher every stdio child runs under.

The SDK starts each stdio server in a new session (its own process group) and stops the whole group
on a clean shutdown, but a ``kill -9`` of toolhost runs no shutdown: the server (and whatever it
started — ``npx`` → ``node``, ``uvx`` → ``python``) would run on forever, re-parented to init. The
SDK's ``stdio_client`` takes no ``preexec_fn``, so instead the command is run as::

    python -I -S .../pdeath.py <toolhost pid> -- <command> <args...>

This script (standard library only, so it starts in a few tens of milliseconds without the
package on ``sys.path``) is the process-group leader the SDK spawned. It starts the real command
in the same group with the same stdin/stdout/stderr, then waits for whichever comes first:

* the command exits — the launcher stops what it left running in the group (below) and exits with
  the same status (``128 + signal`` when killed);
* toolhost exits for any reason (a pidfd on its pid becomes readable on Linux >= 5.3; elsewhere
  ``getppid()`` is polled every 0.2 s) — the launcher stops the group and exits.

Stopping the group: SIGTERM to every member, up to :data:`GRACE_SECONDS` for them to exit, then
SIGKILL. On Linux the launcher is a child subreaper, so the command's orphans are its children and
it knows when they are all gone.

A process that leaves the group on purpose (``setsid``, a daemon) escapes, as it does the SDK's own
group kill. The SDK's shutdown (stdin closed, then SIGTERM/SIGKILL to the group) reaches the
launcher and the command alike, so a clean stop is unchanged. Windows is not wrapped: the SDK puts
the child in a Job Object there, which dies with its owner.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

__all__ = ["GRACE_SECONDS", "LAUNCHER", "wrap"]

GRACE_SECONDS = 2.0
"""Between SIGTERM and SIGKILL of the group once toolhost is gone (the SDK uses the same 2 s)."""

LAUNCHER = os.path.abspath(__file__)
"""This file; run by path with ``python -I -S`` (isolated, no site-packages)."""

_POLL_SECONDS = 0.2
_REAP_POLL_SECONDS = 0.02
_PR_SET_CHILD_SUBREAPER = 36
_RESTORED_SIGNALS = tuple(getattr(signal, n) for n in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(signal, n))


def wrap(command: str, args: list[str], parent_pid: int | None = None) -> tuple[str, list[str]]:
    """``(command, args)`` that run ``command args`` under the launcher, watching ``parent_pid``
    (default: this process). Returns them unchanged on Windows."""
    if sys.platform == "win32":  # pragma: no cover - the SDK's Job Object covers Windows
        return command, args
    pid = os.getpid() if parent_pid is None else parent_pid
    return sys.executable, ["-I", "-S", LAUNCHER, str(pid), "--", command, *args]


def _pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return opener(pid)
    except OSError:  # kernel without pidfd (ENOSYS) or the pid is already gone (ESRCH)
        return None


def _exit_status(status: int) -> int:
    """A ``waitpid`` status as a shell would report it (``128 + signal`` when killed)."""
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def _become_subreaper() -> None:
    """Linux: orphans of the command (its children whose parent exited) become this launcher's children,
    so it can wait for them; elsewhere a no-op (they go to init and are only signalled)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError, ImportError):
        pass


def _stop_group() -> None:
    """SIGTERM to the whole group but this launcher; wait up to :data:`GRACE_SECONDS` until no child
    is left, then SIGKILL the group (which ends this launcher too, status 137)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    group = os.getpgrp()
    try:
        os.killpg(group, signal.SIGTERM)
    except OSError:
        return
    deadline = time.monotonic() + GRACE_SECONDS
    while time.monotonic() < deadline:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # nothing left to wait for
        if pid == 0:
            time.sleep(_REAP_POLL_SECONDS)
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass


def _parent_gone(parent: int, pidfd: int | None, timeout: float) -> bool:
    """Whether ``parent`` exited, waiting up to ``timeout`` s (on its pidfd, else by polling)."""
    if pidfd is not None:
        ready, _, _ = select.select([pidfd], [], [], timeout)
        return bool(ready)
    select.select([], [], [], timeout)
    return os.getppid() != parent  # re-parented: toolhost exited


def main(argv: list[str]) -> int:
    """``argv``: ``<parent pid> -- <command> [args...]``; returns the exit status."""
    if len(argv) < 3 or argv[1] != "--" or not argv[0].isdigit():
        print("usage: pdeath.py <parent pid> -- <command> [args...]", file=sys.stderr)
        return 2
    parent = int(argv[0])
    command = argv[2:]
    pidfd = _pidfd(parent)
    if os.getppid() != parent:  # toolhost died before the watch was set up
        return 128 + signal.SIGTERM
    if os.getpgrp() != os.getpid():  # started outside the SDK: lead a group of our own, never signal the caller's
        os.setsid()
    _become_subreaper()
    try:
        child = _spawn(command)
    except OSError as e:
        print(f"cannot start {command[0]!r}: {e.strerror or e}", file=sys.stderr)
        return 127
    # The launcher keeps no pipe end open: the SDK sees EOF on stdout exactly when the command closes it.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    status = _watch(child, parent, pidfd)
    _stop_group()  # the command's leftovers (or, toolhost gone, the command itself) go too
    return status


def _spawn(command: list[str]) -> int:
    """Start ``command`` (``PATH`` searched) in this group with stdin/stdout/stderr and every signal
    disposition inherited, but Python's ignored SIGPIPE/SIGXFSZ set back to default (as subprocess's
    ``restore_signals`` does: an ignored signal would stay ignored across exec); its pid.

    fork + exec, not subprocess (importing it alone doubles the launcher's start time) nor
    posix_spawn (glibc's leaves its internal signals 32 and 33 ignored in the child).

    Raises:
        OSError: the command cannot be executed (its errno, reported by the child through a pipe).
    """
    read_end, write_end = os.pipe()  # close-on-exec: EOF at once when exec succeeds
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child process
        try:
            os.close(read_end)
            for sig in _RESTORED_SIGNALS:
                signal.signal(sig, signal.SIG_DFL)
            os.execvp(command[0], command)
        except OSError as e:
            os.write(write_end, str(e.errno or 0).encode())
        finally:
            os._exit(127)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        failed = pipe.read()
    if failed:
        os.waitpid(pid, 0)
        code = int(failed)
        raise OSError(code, os.strerror(code))
    return pid


def _watch(child: int, parent: int, pidfd: int | None) -> int:
    """Wait until the command exits (its status) or toolhost does (``128 + SIGTERM``)."""
    child_fd = _pidfd(child)
    while True:
        if child_fd is not None and pidfd is not None:
            ready, _, _ = select.select([pidfd, child_fd], [], [])
            if child_fd in ready:
                return _exit_status(os.waitpid(child, 0)[1])
            return 128 + signal.SIGTERM
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid == child:
            return _exit_status(status)
        if _parent_gone(parent, pidfd, _POLL_SECONDS):
            return 128 + signal.SIGTERM


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
