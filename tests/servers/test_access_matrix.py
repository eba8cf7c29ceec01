"""Every method the gateway serves, under every access mode, both protocol eras, over HTTP and stdio.

The upstream is a real SDK server with one of each kind (``tests/peers/catalog_server.py``: tools
``echo`` and ``touch``, prompt ``greet(name)``, resources ``memo://readme`` / ``memo://logo``, the
template ``memo://notes/{id}``, completion, subscribe and listen), configured as server ``cat``.

Access modes (columns of the matrix):

* ``open``: no users in the data folder, ``--auth auto``: every caller sees everything;
* ``grant``: users exist; the caller (API key over HTTP, ``--user`` over stdio) is ``alice``,
  whose grant ``server:cat`` covers the upstream's tools, prompts and resources;
* ``nogrant``: the same data folder; the caller is ``bob``, who has no grant at all. Everything
  is hidden from him, and a hidden name must answer exactly like one that does not exist (the
  two answers are compared with the name masked);
* ``off``: ``--auth off`` on the same data folder (its users are ignored);
* the local admin: the loopback-only token of the serve's data folder, which the CLI uses to go
  through a running serve (``toolhost call``, ``toolhost tools``): the admin API's tool listing,
  search and calls (it is no MCP credential).

Rows: ``initialize`` (2026-07-28: discovery), ``tools/list`` with ``tool_search`` (deferred
loading: the default ``--expose search`` lists tool_search + call_tool and, on handshake-era
connections, each tool a search found; ``--expose all`` lists every visible tool), ``tools/call``,
``call_tool``, ``prompts/list``/``get``, ``resources/list``/``read``/``templates/list``,
``completion/complete``, ``resources/subscribe`` (2025-11-25) and ``subscriptions/listen``
(2026-07-28), each checked by value.

Processes: one ``toolhost serve`` per (transport, access mode, expose), all started at once for the
module, and one client per cell for the whole module (so over stdio, where a serve has one client
for its life, the era is part of the serve too; over HTTP the two API-key callers share a serve).
Over stdio ``--expose all`` runs in the handshake era only. Each serve has its own data folder and
its own upstream, whose journal records which URIs toolhost asked it to watch.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.streams.text import TextReceiveStream
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.subscriptions import ResourceUpdated
from mcp.types import (
    PromptReference,
    ResourceTemplateReference,
    ResourceUpdatedNotification,
    ToolListChangedNotification,
)

from host.access import AccessControl
from host.upstream.implementation import toolhost_version
from tests.peers.catalog_server import LOGO_PNG, README_TEXT

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
PEER = ROOT / "tests" / "peers" / "catalog_server.py"
TOOLHOST = str(Path(sys.executable).parent / "toolhost")

LEGACY, MODERN = "2025-11-25", "2026-07-28"
CLIENT_MODE = {LEGACY: "legacy", MODERN: "auto"}  # "auto" discovers the server and negotiates 2026-07-28
ACCESS_MODES = ("open", "grant", "nogrant", "off")
EXPOSE = ("search", "all")  # "search": the default (no --expose flag)

ECHO, TOUCH, PROMPT = "cat__echo", "cat__touch", "cat__greet"
README, LOGO = "toolhost://cat/memo://readme", "toolhost://cat/memo://logo"
NOTE_7, TEMPLATE = "toolhost://cat/memo://notes/7", "toolhost://cat/memo://notes/{id}"
NO_TOOL, NO_PROMPT = "cat__nope", "cat__nope"
NO_URI, NO_TEMPLATE = "toolhost://cat/memo://nope", "toolhost://cat/memo://nope/{id}"
META_TOOLS = ["tool_search", "call_tool"]
TOOLS = [
    (ECHO, "Echoes the text back",
     {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
    (TOUCH, "Announces that a resource changed",
     {"type": "object", "properties": {"uri": {"type": "string"}}, "required": ["uri"]}),
]

STARTUP_SECONDS = 100
"""Every serve of the module starts at once; on a loaded 2-core machine that takes a while."""
STEP_SECONDS = 30


# -- the matrix -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cell:
    """One column of the matrix: how the caller reaches the gateway and who it is."""

    transport: str  # "http" | "stdio"
    access: str  # one of ACCESS_MODES
    era: str  # LEGACY | MODERN
    expose: str  # one of EXPOSE

    def __str__(self) -> str:
        return f"{self.transport}-{self.access}-{self.era}-{self.expose}"

    @property
    def sees(self) -> bool:
        """Whether the caller may see the upstream (everyone but the user without grants)."""
        return self.access != "nogrant"

    @property
    def serve(self) -> tuple[str, ...]:
        """The serve this cell talks to: over HTTP one per (access mode, expose), the two API-key
        callers sharing one (the same users, two keys); over stdio one per cell (a stdio serve has
        one client for its life, acting as its ``--user``)."""
        if self.transport == "http":
            return (self.transport, "keys" if self.access in ("grant", "nogrant") else self.access, self.expose)
        return (self.transport, self.access, self.expose, self.era)


# Over stdio --expose all runs in the handshake era only: it changes how tools/list is computed,
# the same code whatever the transport, and HTTP runs it in both eras (one serve fewer per mode).
CELLS = [Cell("http", a, e, x) for a in ACCESS_MODES for e in (LEGACY, MODERN) for x in EXPOSE] + [
    Cell("stdio", a, e, x) for a in ACCESS_MODES for e in (LEGACY, MODERN) for x in EXPOSE
    if x == "search" or e == LEGACY]
LEGACY_CELLS = [c for c in CELLS if c.era == LEGACY]
MODERN_CELLS = [c for c in CELLS if c.era == MODERN]
LOCAL_ADMIN_SERVES = [("http", "open", "search"), ("http", "keys", "search")]


# -- the serves and their clients -----------------------------------------------------------------
class Inbox:
    """The notifications a client received; a test waits for the next one of a kind."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self._changed = anyio.Event()

    async def handle(self, message: Any) -> None:
        if not isinstance(message, Exception):
            self.items.append(message)
            self._changed.set()
            self._changed = anyio.Event()

    def clear(self) -> None:
        self.items.clear()

    async def next(self, kind: type) -> Any:
        while True:
            for i, item in enumerate(self.items):
                if isinstance(item, kind):
                    return self.items.pop(i)
            await self._changed.wait()


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TOOLHOST_DATABASE_URL", "TOOLHOST_DB_URL")}
    # BM25 only (rankings must not depend on when embedding finishes), as tests/conftest.py sets for tests
    return env | {"TOOLHOST_DENSE_SEARCH": "0", "COLUMNS": "200"}


@dataclass
class Gateway:
    """One ``toolhost serve``: its data folder, arguments and upstream journal (HTTP: its process)."""

    key: tuple[str, ...]
    home: Path
    args: list[str]
    keys: dict[str, str] = field(default_factory=dict)  # HTTP: the API key of each access mode's caller
    url: str = ""
    stderr: list[str] = field(default_factory=list)
    ready: anyio.Event = field(default_factory=anyio.Event)
    stopped: anyio.Event = field(default_factory=anyio.Event)
    proc: Any = None

    @property
    def journal(self) -> list[dict[str, Any]]:
        """What the upstream was asked to watch, in order (``tests/peers/catalog_server.py --journal``)."""
        path = self.home / "journal.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    @property
    def admin_token(self) -> str:
        return (self.home / "data" / "admin.token").read_text().strip()

    async def run_http(self) -> None:
        """Run the HTTP serve, reading its stderr to the end (so the pipe never fills); ready once it
        names its URL."""
        try:
            self.proc = await anyio.open_process([TOOLHOST, *self.args], stdout=subprocess.DEVNULL,
                                                 stderr=subprocess.PIPE, env=_env())
            pending = ""
            async for chunk in TextReceiveStream(self.proc.stderr):
                pending += chunk
                *lines, pending = pending.split("\n")
                self.stderr.extend(lines)
                for line in lines:
                    m = re.search(r"at (http://\S+/mcp)", line)
                    if m and not self.url:
                        self.url = m.group(1)
                        self.ready.set()
            if not self.url:
                raise AssertionError(f"serve {self.key} exited before serving:\n" + "\n".join(self.stderr[-40:]))
        finally:
            self.stopped.set()

    def terminate(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.terminate()

    async def wait_stopped(self) -> None:
        """Wait for the HTTP serve to exit after :meth:`terminate` (SIGKILL after 30 s)."""
        if self.proc is not None and self.proc.returncode is None:
            with anyio.move_on_after(30):
                await self.proc.wait()
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
        await self.stopped.wait()


@dataclass
class Session:
    """A cell's one client for the whole module, with its notifications (stdio: it owns the serve)."""

    cell: Cell
    gateway: Gateway
    client: Client | None = None
    inbox: Inbox = field(default_factory=Inbox)
    ready: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    stopped: anyio.Event = field(default_factory=anyio.Event)

    async def run(self) -> None:
        try:
            if self.cell.transport == "stdio":  # the SDK client starts the serve; closing its stdin ends it
                params = StdioServerParameters(command=TOOLHOST, args=self.gateway.args, env=_env())
                with (self.gateway.home / "serve.err").open("w") as errlog:
                    await self._serve(stdio_client(params, errlog=errlog))
                return
            await self.gateway.ready.wait()
            token = self.gateway.keys.get(self.cell.access)
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            async with httpx2.AsyncClient(headers=headers, timeout=STEP_SECONDS) as http:
                await self._serve(streamable_http_client(self.gateway.url, http_client=http))
        finally:
            self.stopped.set()

    async def _serve(self, transport: Any) -> None:
        async with Client(transport, mode=CLIENT_MODE[self.cell.era], message_handler=self.inbox.handle) as client:
            self.client = client
            self.ready.set()
            await self.done.wait()


def _home(root: Path, key: tuple[str, ...]) -> tuple[Path, dict[str, str]]:
    """A data folder (with users alice and bob unless open access) and a config whose upstream
    journals into the folder; returns it and the users' API keys (HTTP with keys)."""
    home = root / "-".join(key)
    data = home / "data"
    data.mkdir(parents=True)
    config = {"toolhost": {"connect_timeout_seconds": 30}, "mcpServers": {
        "cat": {"command": sys.executable, "args": [str(PEER), "--journal", str(home / "journal.jsonl")]}}}
    (home / "config.json").write_text(json.dumps(config))
    keys: dict[str, str] = {}
    if key[1] != "open":
        access = AccessControl.open(data)
        try:
            access.users.add("alice")
            access.grants.add("alice", "server:cat")
            access.users.add("bob")  # no grant at all
            if key[1] == "keys":
                keys = {"grant": access.keys.create("alice")[1], "nogrant": access.keys.create("bob")[1]}
        finally:
            access.close()
    return home, keys


def _gateway(root: Path, key: tuple[str, ...]) -> Gateway:
    transport, access, expose = key[:3]
    home, keys = _home(root, key)
    args = ["serve", "--config", str(home / "config.json"), "--data-dir", str(home / "data")]
    args += ["--port", "0"] if transport == "http" else ["--stdio"]
    if expose == "all":
        args += ["--expose", "all"]
    if access == "off":
        args += ["--auth", "off"]
    if transport == "stdio" and access in ("grant", "nogrant"):
        args += ["--user", "alice" if access == "grant" else "bob"]
    return Gateway(key, home, args, keys=keys)


@dataclass
class Matrix:
    serves: dict[tuple[str, ...], Gateway]
    sessions: dict[Cell, Session]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def matrix(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Matrix]:
    """Every serve and every cell's client, started at once; all stopped (upstreams with them) at the end."""
    root = tmp_path_factory.mktemp("matrix")
    serves = {key: _gateway(root, key) for key in dict.fromkeys(cell.serve for cell in CELLS)}
    sessions = {cell: Session(cell, serves[cell.serve]) for cell in CELLS}
    http = [gw for key, gw in serves.items() if key[0] == "http"]
    async with anyio.create_task_group() as tg:
        try:
            for gw in http:
                tg.start_soon(gw.run_http)
            for session in sessions.values():
                tg.start_soon(session.run)
            with anyio.fail_after(STARTUP_SECONDS):
                for session in sessions.values():
                    await session.ready.wait()
            yield Matrix(serves, sessions)
        finally:
            with anyio.CancelScope(shield=True), anyio.fail_after(60):
                for session in sessions.values():
                    session.done.set()
                for session in sessions.values():
                    await session.stopped.wait()
                for gw in http:
                    gw.terminate()
                for gw in http:
                    await gw.wait_stopped()


@asynccontextmanager
async def connect(matrix: Matrix, cell: Cell) -> AsyncIterator[tuple[Client, Inbox]]:
    """The cell's client and its notifications from now on; checks the era negotiated is the cell's."""
    session = matrix.sessions[cell]
    assert session.client is not None
    session.inbox.clear()
    assert session.client.protocol_version == cell.era
    yield session.client, session.inbox


# -- comparing a hidden name's answer with an unknown name's ----------------------------------------
def masked(value: Any, *names: str) -> str:
    """``value`` as sorted JSON with each of ``names`` replaced by ``<name>``."""
    text = json.dumps(value, sort_keys=True)
    for name in names:
        text = text.replace(name, "<name>")
    return text


async def refusal(op: Awaitable[Any]) -> MCPError:
    with pytest.raises(MCPError) as err:
        await op
    return err.value


def error_of(err: MCPError) -> dict[str, Any]:
    return {"code": err.code, "message": err.message, "data": err.data}


def result_of(result: Any) -> dict[str, Any]:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def same_refusal(hidden: Awaitable[Any], unknown: Awaitable[Any], hidden_name: str, unknown_name: str
                       ) -> dict[str, Any]:
    """The error of a hidden name and of an unknown one are the same but for the name; returns the first."""
    a, b = error_of(await refusal(hidden)), error_of(await refusal(unknown))
    assert masked(a, hidden_name) == masked(b, unknown_name), (a, b)
    return a


# -- initialize ------------------------------------------------------------------------------------
@pytest.mark.parametrize("cell", CELLS, ids=str)
async def test_initialize(matrix, cell: Cell) -> None:
    with anyio.fail_after(STEP_SECONDS):
        async with connect(matrix, cell) as (c, _inbox):
            assert c.protocol_version == cell.era
            assert (c.server_info.name, c.server_info.version) == ("toolhost", toolhost_version())
            caps = c.server_capabilities
            # the upstream offers prompts, resources (with subscribe) and completions: so does toolhost,
            # whoever asks (capabilities are the server's, not the caller's)
            assert caps.tools is not None and caps.prompts is not None and caps.completions is not None
            assert caps.resources is not None and caps.resources.subscribe is True
            if cell.era == LEGACY:
                assert (caps.tools.list_changed, caps.prompts.list_changed, caps.resources.list_changed) == (
                    True, True, True)


# -- tools -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("cell", CELLS, ids=str)
async def test_tools_list_and_tool_search(matrix, cell: Cell) -> None:
    expected = [n for n, _d, _s in TOOLS] if cell.sees else []
    with anyio.fail_after(STEP_SECONDS):
        async with connect(matrix, cell) as (c, inbox):
            listed = (await c.list_tools()).tools
            if cell.expose == "all":
                assert [(t.name, t.description, t.input_schema) for t in listed] == (TOOLS if cell.sees else [])
            else:
                assert [t.name for t in listed] == META_TOOLS

            found = await c.call_tool("tool_search", {"query": "echo"})
            assert found.is_error is not True
            assert [t["name"] for t in found.structured_content["tools"]] == ([ECHO] if cell.sees else [])
            if not cell.sees:  # a hidden tool named exactly is found like one that does not exist
                hidden = await c.call_tool("tool_search", {"query": f"select:{ECHO}"})
                unknown = await c.call_tool("tool_search", {"query": f"select:{NO_TOOL}"})
                assert masked(result_of(hidden), ECHO) == masked(result_of(unknown), NO_TOOL)

            # deferred loading: a handshake-era connection now also lists what its search found, and is told so
            again = [t.name for t in (await c.list_tools()).tools]
            if cell.expose == "all":
                assert again == expected
            elif cell.sees and cell.era == LEGACY:
                await inbox.next(ToolListChangedNotification)
                assert again == [*META_TOOLS, ECHO]
            else:  # a 2026-07-28 exchange is stateless; a search that found nothing loads nothing
                assert again == META_TOOLS


async def _check_call(c: Client, cell: Cell, call: Any) -> None:
    if cell.sees:
        done = await call(c, ECHO, {"text": "hi"})
        assert (done.is_error, [(b.type, b.text) for b in done.content]) == (False, [("text", "echo: hi")])
        return
    hidden, unknown = await call(c, ECHO, {"text": "hi"}), await call(c, NO_TOOL, {"text": "hi"})
    assert masked(result_of(hidden), ECHO) == masked(result_of(unknown), NO_TOOL)
    assert hidden.is_error is True and hidden.meta["toolhost/error"]["code"] == "unknown_tool"
    assert hidden.meta["toolhost/error"]["details"] == {"suggestions": []}  # no hidden name is suggested


@pytest.mark.parametrize("cell", CELLS, ids=str)
async def test_tools_call(matrix, cell: Cell) -> None:
    with anyio.fail_after(STEP_SECONDS):
        async with connect(matrix, cell) as (c, _inbox):
            await _check_call(c, cell, lambda c, name, args: c.call_tool(name, args))


@pytest.mark.parametrize("cell", CELLS, ids=str)
async def test_call_tool(matrix, cell: Cell) -> None:
    with anyio.fail_after(STEP_SECONDS):
        async with connect(matrix, cell) as (c, _inbox):
            await _check_call(c, cell,
                              lambda c, name, args: c.call_tool("call_tool", {"name": name, "arguments": args}))


# -- prompts ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("cell", CELLS, ids=str)
async def test_prompts_list(matrix, cell: Cell) -> None:
    with anyio.fail_after(STEP_SECONDS):
        async with connect(matrix, cell) as (c, _inbox):
            prompts = [result_of(p) for p in (await c.list_prompts()).prompts]
    assert prompts == ([{"name": PROMPT, "description": "Greets someone by name",
                         "arguments": [{"name": "name", "description": "Who to greet", "required": True}]}]
                       if cell.sees else [])


@pytest.mark.parametrize("cell", CELLS, ids=str)
async def test_prompts_get(matrix, cell: Cell) -> None:
    with anyio.fail_after(STEP_SECONDS):
        async with connect(matrix, cell) as (c, _inbox):
            if cell.sees:
                got = await c.get_prompt(PROMPT, {"name": "Ada"})
                assert [(m.role, m.content.type, m.content.text) for m in got.messages] == [
                    ("user", "text", "Hello, Ada!")]
                unknown = error_of(await refusal(c.get_prompt(NO_PROMPT, {"name": "Ada"})))
            else:
                unknown = await same_refusal(c.get_prompt(PROMPT, {"name": "Ada"}),
                                             c.get_prompt(NO_PROMPT, {"name": "Ada"}), PROMPT, NO_PROMPT)
    assert masked(unknown, PROMPT, NO_PROMPT) == masked(
        {"code": -32602, "message": "Unknown prompt: <name>", "data": None})


# -- resources -------------------------------------------------------------------------------------
@pytest.mark.parametrize("cell", CELLS, ids=str)
async def test_resources_list(matrix, cell: Cell) -> None:
    with anyio.fail_after(STEP_SECONDS):
        async with connect(matrix, cell) as (c, _inbox):
            listed = [result_of(r) for r in (await c.list_resources()).resources]
    assert listed == ([
        {"uri": README, "name": "readme", "description": "What this server is", "mimeType": "text/plain"},
        {"uri": LOGO, "name": "logo", "description": "A 1x1 PNG", "mimeType": "image/png"},
    ] if cell.sees else [])


@pytest.mark.parametrize("cell", CELLS, ids=str)
async def test_resources_read(matrix, cell: Cell) -> None:
    with anyio.fail_after(STEP_SECONDS):
        async with connect(matrix, cell) as (c, _inbox):
            if cell.sees:
                text = (await c.read_resource(README)).contents
                assert [(str(x.uri), x.mime_type, x.text) for x in text] == [(README, "text/plain", README_TEXT)]
                blob = (await c.read_resource(LOGO)).contents
                assert [(str(x.uri), x.mime_type, x.blob) for x in blob] == [(LOGO, "image/png", LOGO_PNG)]
                note = (await c.read_resource(NOTE_7)).contents
                assert [(str(x.uri), x.text) for x in note] == [(NOTE_7, "note 7")]
                unknown = error_of(await refusal(c.read_resource(NO_URI)))
            else:
                for uri in (README, LOGO):
                    unknown = await same_refusal(c.read_resource(uri), c.read_resource(NO_URI), uri, NO_URI)
                await same_refusal(c.read_resource(NOTE_7), c.read_resource(NO_URI), NOTE_7, NO_URI)
    assert masked(unknown, NO_URI, README, LOGO) == masked(
        {"code": -32002, "message": "Resource not found: <name>", "data": {"uri": "<name>"}})


@pytest.mark.parametrize("cell", CELLS, ids=str)
async def test_resource_templates_list(matrix, cell: Cell) -> None:
    with anyio.fail_after(STEP_SECONDS):
        async with connect(matrix, cell) as (c, _inbox):
            listed = [result_of(t) for t in (await c.list_resource_templates()).resource_templates]
    assert listed == ([{"uriTemplate": TEMPLATE, "name": "notes", "description": "A note by id",
                        "mimeType": "text/plain"}] if cell.sees else [])


@pytest.mark.parametrize("cell", CELLS, ids=str)
async def test_completion_complete(matrix, cell: Cell) -> None:
    def prompt_ref(name: str) -> PromptReference:
        return PromptReference(type="ref/prompt", name=name)

    def template_ref(uri: str) -> ResourceTemplateReference:
        return ResourceTemplateReference(type="ref/resource", uri=uri)

    with anyio.fail_after(STEP_SECONDS):
        async with connect(matrix, cell) as (c, _inbox):
            if cell.sees:
                names = await c.complete(prompt_ref(PROMPT), {"name": "name", "value": "A"})
                assert (names.completion.values, names.completion.total) == (["Ada", "Alan"], 2)
                ids = await c.complete(template_ref(TEMPLATE), {"name": "id", "value": "4"})
                assert (ids.completion.values, ids.completion.total) == (["42", "420"], 2)
                return
            prompt = await same_refusal(c.complete(prompt_ref(PROMPT), {"name": "name", "value": "A"}),
                                        c.complete(prompt_ref(NO_PROMPT), {"name": "name", "value": "A"}),
                                        PROMPT, NO_PROMPT)
            template = await same_refusal(c.complete(template_ref(TEMPLATE), {"name": "id", "value": "4"}),
                                          c.complete(template_ref(NO_TEMPLATE), {"name": "id", "value": "4"}),
                                          TEMPLATE, NO_TEMPLATE)
    assert (prompt["code"], prompt["message"]) == (-32602, f"Unknown prompt: {PROMPT}")
    assert (template["code"], template["message"]) == (-32602, f"Unknown resource template: {TEMPLATE}")


# -- resource updates: resources/subscribe (2025-11-25) and subscriptions/listen (2026-07-28) -------
def _watched_upstream(gw: Gateway) -> list[str]:
    """The URIs of the upstream's latest watch request (toolhost re-opens its listen stream upstream
    with every URI anybody watches)."""
    journal = gw.journal
    return journal[-1]["uris"] if journal else []


def _watched_since(gw: Gateway, mark: int) -> list[str]:
    """Every URI the upstream was asked to watch after its ``mark``-th journal entry (a serve that
    two callers share may still be unwatching an earlier caller's URI: that entry names none)."""
    return [uri for entry in gw.journal[mark:] for uri in entry["uris"]]


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # removed at 2026-07-28 only
@pytest.mark.parametrize("cell", LEGACY_CELLS, ids=str)
async def test_resources_subscribe(matrix, cell: Cell) -> None:
    gw = matrix.serves[cell.serve]
    with anyio.fail_after(STEP_SECONDS):
        async with connect(matrix, cell) as (c, inbox):
            if not cell.sees:
                mark = len(gw.journal)
                err = await same_refusal(c.subscribe_resource(README), c.subscribe_resource(NO_URI), README, NO_URI)
                assert (err["code"], err["message"]) == (-32002, f"Resource not found: {README}")
                assert _watched_since(gw, mark) == []  # nothing was asked upstream for the hidden URI
                return
            assert result_of(await c.subscribe_resource(README)) == {}
            assert _watched_upstream(gw) == ["memo://readme"]
            touched = await c.call_tool(TOUCH, {"uri": "memo://readme"})
            assert [b.text for b in touched.content] == ["touched memo://readme"]
            update = await inbox.next(ResourceUpdatedNotification)
            assert str(update.params.uri) == README
            assert result_of(await c.unsubscribe_resource(README)) == {}
            assert _watched_upstream(gw) == []


@pytest.mark.parametrize("cell", MODERN_CELLS, ids=str)
async def test_subscriptions_listen(matrix, cell: Cell) -> None:
    gw = matrix.serves[cell.serve]
    with anyio.fail_after(STEP_SECONDS):
        async with connect(matrix, cell) as (c, _inbox):
            mark = len(gw.journal)
            async with c.listen(resource_subscriptions=[README, NO_URI]) as sub:
                # a hidden URI is acknowledged exactly like an unknown one (both honored, neither ever fires)
                assert sub.honored.resource_subscriptions == [README, NO_URI]
                if not cell.sees:
                    assert _watched_since(gw, mark) == []
                    return
                assert _watched_upstream(gw) == ["memo://readme"]
                touched = await c.call_tool(TOUCH, {"uri": "memo://readme"})
                assert [b.text for b in touched.content] == ["touched memo://readme"]
                assert await sub.__anext__() == ResourceUpdated(uri=README)


# -- the local admin (the CLI through a running serve) ----------------------------------------------
@pytest.mark.parametrize("serve", LOCAL_ADMIN_SERVES, ids="-".join)
async def test_local_admin_lists_searches_and_calls_every_tool(matrix, serve: tuple[str, ...]) -> None:
    gw = matrix.serves[serve]
    base = gw.url.removesuffix("/mcp") + "/admin/api"
    with anyio.fail_after(STEP_SECONDS):
        async with httpx2.AsyncClient(base_url=base, timeout=STEP_SECONDS,
                                      headers={"Authorization": f"Bearer {gw.admin_token}"}) as api:
            visible = (await api.get("/tools/visible")).json()
            assert ([t["name"] for t in visible["tools"]], visible["held"]) == ([ECHO, TOUCH], [])
            found = (await api.get("/search", params={"q": "echo"})).json()
            assert [h["name"] for h in found["hits"]] == [ECHO]
            called = await api.post("/call", json={"name": ECHO, "arguments": {"text": "hi"}})
            assert called.status_code == 200, called.text
            result = called.json()
            assert (result["status"], result["content"][0]["text"]) == ("ok", "echo: hi")


async def test_local_admin_toolhost_call_goes_through_the_serve(matrix) -> None:
    gw = matrix.serves[("http", "keys", "search")]  # users exist: only the local admin token lets the CLI in
    with anyio.fail_after(STEP_SECONDS):
        done = await anyio.run_process([TOOLHOST, "call", ECHO, '{"text": "hi"}', "--data-dir", str(gw.home / "data")],
                                       check=False, env=_env())
    assert (done.returncode, done.stdout.decode().strip()) == (0, "echo: hi"), done.stderr.decode()


async def test_the_local_admin_token_is_no_mcp_credential(matrix) -> None:
    gw = matrix.serves[("http", "keys", "search")]
    with anyio.fail_after(STEP_SECONDS):
        async with httpx2.AsyncClient(timeout=STEP_SECONDS) as http:
            answer = await http.post(gw.url, headers={"Authorization": f"Bearer {gw.admin_token}",
                                                      "Accept": "application/json, text/event-stream"},
                                     json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    assert answer.status_code == 401
