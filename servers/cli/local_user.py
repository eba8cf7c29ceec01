"""Who acts from the local command line, and failing closed on ``--user`` (issue 11).

* :func:`servers.shared.local_principal.local_principal_name` (``local:<os user>``) acts when
  ``--user`` is not given;
* :func:`require_user`: ``--user NAME`` must name an existing user; when the store has no users
  at all the message says so and how to fix it (usually the client opened another data folder:
  a desktop client config must set ``TOOLHOST_HOME`` or pass ``--data-dir``).
"""

from __future__ import annotations

from pathlib import Path

from host.access import AccessControl

__all__ = ["UnknownUser", "require_user"]


class UnknownUser(Exception):
    """``--user`` names no user of the opened store. Attributes: user, data_dir, empty."""

    def __init__(self, user: str, data_dir: Path, empty: bool) -> None:
        self.user = user
        self.data_dir = data_dir
        self.empty = empty
        if empty:
            msg = (
                f"--user {user}: the permission database in {data_dir} has no users, so {user!r} cannot be "
                "checked (refusing open access). If your users live in another data folder, pass "
                "--data-dir (or set TOOLHOST_HOME in the client's config); else create the user with "
                f"`toolhost users add {user}`"
            )
        else:
            msg = f"--user {user}: no such user in {data_dir} (see `toolhost users list`, or `toolhost users add {user}`)"
        super().__init__(msg)


def require_user(access: AccessControl, user: str, data_dir: Path) -> None:
    """Raise :class:`UnknownUser` unless ``user`` exists in ``access``'s store."""
    if access.users.exists(user):
        return
    raise UnknownUser(user, data_dir, empty=not access.users.list())
