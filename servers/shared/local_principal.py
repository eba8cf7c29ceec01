"""Who acts from the local command line: ``local:<os user>``, the principal of CLI calls and CLI
approval decisions made without ``--user`` (the person with access to the data folder)."""

from __future__ import annotations

import getpass
import os

__all__ = ["local_principal_name"]


def local_principal_name() -> str:
    """``local:<os user name>`` (``local:uid<N>`` when the name cannot be found)."""
    try:
        name = getpass.getuser()
    except (OSError, KeyError):
        name = f"uid{os.getuid()}"
    return f"local:{name}"
