"""Choosing whether the registry server enforces per-user permissions.

``--auth auto`` (the default) enforces them as soon as the permission database has at least
one user (``toolhost users add``); before that the server is open to every client, which is
what a fresh local install expects. ``--auth on`` always enforces (no users: nobody sees
anything), ``--auth off`` never does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from host.access import AccessControl

__all__ = ["AuthMode", "open_access"]

AuthMode = Literal["auto", "on", "off"]


def open_access(data_dir: Path, mode: AuthMode, *, db_url: str | None = None) -> AccessControl | None:
    """The :class:`AccessControl` to enforce, or ``None`` for open access (see module docstring).

    Raises:
        ValueError: ``mode`` is not ``auto``, ``on`` or ``off``.
        host.store.StoreError: the database cannot be opened or migrated.
    """
    if mode not in ("auto", "on", "off"):
        raise ValueError(f"--auth must be auto, on or off, got {mode!r}")
    if mode == "off":
        return None
    if mode == "auto" and db_url is None and not (data_dir / "toolhost.db").exists():
        return None
    access = AccessControl.open(data_dir, url=db_url)
    if mode == "auto" and not access.users.list():
        access.close()
        return None
    return access
