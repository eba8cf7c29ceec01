"""What the three examples share: command-line options and the governed runtime (toolhost's own
policy, approvals, pins and audit; :mod:`host.agent.governed`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from host.config import load_config
from host.paths import data_dir


def options(description: str, model: str, *, programmatic: bool = False) -> argparse.Namespace:
    """The examples' options; ``programmatic``: offer ``--programmatic`` (APIs with programmatic tool
    calling: Anthropic Messages, OpenAI Responses; Chat Completions has none)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("question", nargs="?", default="Where is order A1001?")
    ap.add_argument("--model", default=model)
    ap.add_argument("--stream", action="store_true", help="stream the model's answer")
    if programmatic:
        ap.add_argument("--programmatic", action="store_true",
                        help="let the provider's code runtime call tools (read-risk ones; others under a "
                             "--no-approval grant); every such call is governed and audited with its program id")
    ap.add_argument("--user", help="the toolhost user the agent acts for (required once users exist)")
    ap.add_argument("--config", type=Path, help="mcpServers config (default: toolhost's bundled one)")
    ap.add_argument("--data-dir", type=Path,
                    help="toolhost's data folder (default: $TOOLHOST_HOME or the per-user one)")
    ns = ap.parse_args()
    ns.data_dir = data_dir(ns.data_dir)
    problem = user_problem(ns.data_dir, ns.user)
    if problem:
        ap.error(problem)  # usage line and the problem on stderr, exit 2
    ns.loaded = load_config(ns.config, data_dir=ns.data_dir)
    return ns


def user_problem(folder: Path, user: str | None) -> str | None:
    """Why ``--user`` does not fit the data folder's users (worded for this command line), or ``None``."""
    from host.access import AccessControl
    from servers.cli.local_user import UnknownUser, require_user

    access = AccessControl.open(folder)
    try:
        if user is not None:
            require_user(access, user, folder)
        elif access.users.list():
            return (f"users are configured in {folder}: pass --user NAME, the user the agent acts for "
                    "(see `toolhost users list`)")
    except UnknownUser as e:
        return str(e)
    finally:
        access.close()
    return None
