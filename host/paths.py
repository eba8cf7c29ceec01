"""Where toolhost keeps its state: one data folder.

Resolution order: an explicit ``--data-dir``, else ``$TOOLHOST_HOME``, else a per-user
default (``$XDG_DATA_HOME/toolhost``, falling back to ``~/.local/share/toolhost``). Nothing is
ever written inside the repository or the current directory.

Layout::

    <data_dir>/
        logs/<server>.stderr.log   stderr of each stdio child server
        spill/<session>/...        full outputs that exceeded a tool's budget
        events/<conversation>.jsonl
        toolhost.db                users, grants, approvals, pins, audit
        servers/<server>/...       working data of bundled example servers
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from host.errors import DataDirError

__all__ = [
    "ENV_HOME",
    "data_dir",
    "default_data_dir",
    "logs_dir",
    "private_opener",
    "safe_file_name",
    "server_dir",
    "tighten",
]

PRIVATE_FILE_MODE = 0o600
"""Mode of every file toolhost writes in the data folder (owner only: it holds audit rows,
arguments and results)."""

PRIVATE_DIR_MODE = 0o700
"""Mode of the data folder and every folder toolhost creates in it."""


def tighten(path: str | os.PathLike[str], mode: int) -> None:
    """``chmod path mode`` when ``path`` exists, is ours and grants more than ``mode`` (best effort)."""
    try:
        st = os.stat(path)
        if st.st_uid == os.getuid() and st.st_mode & 0o777 & ~mode:
            os.chmod(path, st.st_mode & 0o777 & mode)
    except OSError:
        pass


def private_opener(path: str, flags: int) -> int:
    """An ``opener`` for :func:`open` that creates files 0600 and tightens existing ones."""
    fd = os.open(path, flags, PRIVATE_FILE_MODE)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, PRIVATE_FILE_MODE)
    except OSError:
        pass
    return fd

ENV_HOME = "TOOLHOST_HOME"
"""Environment variable that overrides the default data folder."""


def default_data_dir() -> Path:
    """The per-user default: ``$XDG_DATA_HOME/toolhost`` or ``~/.local/share/toolhost``."""
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "toolhost"


def data_dir(explicit: str | os.PathLike[str] | None = None, *, create: bool = True) -> Path:
    """Resolve the data folder (see module docstring) as an absolute path.

    Args:
        explicit: the ``--data-dir`` value, or ``None``.
        create: create the folder (and parents) when missing.

    Raises:
        host.errors.DataDirError: the path is a file, lies below a file, or cannot be created.
    """
    if explicit:
        path = Path(explicit)
    elif os.environ.get(ENV_HOME):
        path = Path(os.environ[ENV_HOME])
    else:
        path = default_data_dir()
    path = path.expanduser().resolve()
    if create:
        if path.exists() and not path.is_dir():
            raise DataDirError(str(path), "exists and is not a folder")
        try:
            path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
        except OSError as err:
            raise DataDirError(str(path), err.strerror or str(err)) from None
        tighten(path, PRIVATE_DIR_MODE)
        if not path.is_dir():
            raise DataDirError(str(path), "exists and is not a folder")
        if not os.access(path, os.W_OK | os.X_OK):
            raise DataDirError(str(path), "is not writable")
    return path


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_HASHED = re.compile(r".*-[0-9a-f]{8}")
_MAX_NAME = 80


def safe_file_name(name: str) -> str:
    """A file name made from ``name``: only ``[A-Za-z0-9._-]``, no ``..``, no leading dot, ≤ 80 characters.

    When anything had to change (or ``name`` already ends like a hash suffix), an
    8-hex-digit hash of the original is appended, so two different names never map to the
    same file (``"call 1"`` and ``"call_1-…"`` stay apart).
    """
    cleaned = re.sub(r"\.{2,}", "_", _UNSAFE.sub("_", name)).lstrip(".")[: _MAX_NAME - 9]
    if cleaned != name or not cleaned or _HASHED.fullmatch(name):
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        cleaned = f"{cleaned or 'x'}-{digest}"
    return cleaned


def logs_dir(root: Path) -> Path:
    """``<data_dir>/logs``, created when missing."""
    path = root / "logs"
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    tighten(path, PRIVATE_DIR_MODE)
    return path


def server_dir(root: Path, server: str) -> Path:
    """``<data_dir>/servers/<server>``: a working folder for one server, created when missing."""
    path = root / "servers" / safe_file_name(server)
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    tighten(path.parent, PRIVATE_DIR_MODE)
    return path
