"""The configuration's data model: servers (stdio / remote), their ``toolhost`` options, the host
defaults and the lifecycle policy derived from both. Parsing and loading: :mod:`host.config`."""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from host.limits.config import RateLimitConfig, SessionLimits
from registry import DEFAULT_MAX_OUTPUT_CHARS, DEFAULT_TIMEOUT_SECONDS, Risk, ToolOverrides
from registry.naming import sanitize_prefix
from registry.safety.flow import FlowConfig
from registry.safety.taint import TaintRule

if TYPE_CHECKING:
    from host.upstream.serverlog import LogLimits

__all__ = [
    "DEFAULT_CONFIG_PATH",
    "CodeModeOptions",
    "FailedServer",
    "HostConfig",
    "HostDefaults",
    "LifecyclePolicy",
    "PACKAGE_RUNNERS",
    "RemoteServerConfig",
    "SandboxOptions",
    "ServerConfig",
    "ServerOptions",
    "StdioServerConfig",
]

DEFAULT_CONFIG_PATH = Path(__file__).resolve().parent.parent / "servers" / "default_config.json"
"""The bundled default config (example servers + mcp-server-time)."""


_INHERIT_CHOICES = ("network", "minimal", "all")


def _check_inherit_env(value: Any) -> Any:
    """A clear error for a bad ``inherit_env`` (with a did-you-mean for a misspelt choice)."""
    if isinstance(value, str) and value not in _INHERIT_CHOICES:
        close = difflib.get_close_matches(value, _INHERIT_CHOICES, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f'expected "network", "minimal", "all" or a list of variable names / patterns{hint}')
    if not isinstance(value, (str, list)) or (isinstance(value, list) and not all(isinstance(v, str) for v in value)):
        raise ValueError('expected "network", "minimal", "all" or a list of variable names / patterns')
    return value


InheritEnvSetting = Annotated[Literal["network", "minimal", "all"] | list[str], BeforeValidator(_check_inherit_env)]
"""``inherit_env``: ``"network"`` (default: safe base + CA, proxy and package-manager settings),
``"minimal"`` (safe base only), ``"all"`` (the whole environment) or a list of names / patterns
added to the safe base (see :mod:`host.upstream.child_env`)."""


class OAuthOptions(BaseModel):
    """``toolhost.oauth`` of an HTTP server: toolhost authorizes itself with OAuth
    (:mod:`host.upstream.oauth`). ``true`` means all defaults.

    Attributes:
        scope: scopes to ask for (space-separated; default: what the server's metadata says).
        client_name: the name toolhost registers under (dynamic client registration).
        client_id, client_secret: a client registered beforehand with the authorization server
            (then no dynamic registration).
        redirect_port: loopback port of the redirect URI (0: the one registered earlier, else a free one).
        grant: ``"authorization_code"`` (a user authorizes in a browser) or ``"client_credentials"``
            (machine-to-machine; needs ``client_id`` and ``client_secret``).
        token_endpoint_auth_method: how a ``client_credentials`` client authenticates at the token
            endpoint (``client_secret_basic`` or ``client_secret_post``).
    """

    model_config = ConfigDict(extra="forbid")

    grant: Literal["authorization_code", "client_credentials"] = "authorization_code"
    token_endpoint_auth_method: Literal["client_secret_basic", "client_secret_post"] = "client_secret_basic"

    scope: str | None = None
    client_name: str = "toolhost"
    client_id: str | None = None
    client_secret: str | None = None
    redirect_port: int = Field(default=0, ge=0, le=65535)

    @model_validator(mode="after")
    def _credentials_for_client_credentials(self) -> OAuthOptions:
        if self.grant == "client_credentials" and not (self.client_id and self.client_secret):
            raise ValueError('oauth grant "client_credentials" needs client_id and client_secret')
        return self


class SandboxOptions(BaseModel):
    """``toolhost.sandbox`` of a stdio server: run it under bubblewrap (``bwrap``,
    :mod:`host.upstream.sandbox`). ``true`` means all defaults.

    Attributes:
        network: keep the host's network (default: none, only a private loopback).
        writable: folders the server may write (bound read-write at the same path), e.g.
            ``["${workspaceFolder}"]``; everything else is read-only.
        hidden: extra paths covered by an empty folder (or, for a file, an empty file) inside the
            sandbox, beyond the built-in ones (toolhost's data folder and the usual credential
            folders of ``$HOME``: see :data:`host.upstream.sandbox.HIDDEN_IN_HOME`).
        command: the bubblewrap executable (name on ``PATH`` or a full path).
    """

    model_config = ConfigDict(extra="forbid")

    network: bool = False
    writable: list[str] = Field(default_factory=list)
    hidden: list[str] = Field(default_factory=list)
    command: str = "bwrap"

    @field_validator("writable", "hidden")
    @classmethod
    def _absolute(cls, value: list[str]) -> list[str]:
        out = []
        for raw in value:
            path = os.path.expanduser(raw)
            if not os.path.isabs(path):
                raise ValueError(f"{raw!r} is not an absolute path (write e.g. \"${{workspaceFolder}}/out\")")
            out.append(os.path.normpath(path))
        return out


class ServerOptions(BaseModel):
    """The ``toolhost`` block of one server entry.

    Attributes:
        prefix: namespace prefix of the server's tools, prompts and resources (default: the server
            name, sanitized). ``""`` serves them under their original names and URIs; a name that
            then collides with another server's is refused with an error naming both servers.
        enabled: if set, only these original tool names are registered.
        disabled: original tool names never registered.
        risk: per-tool risk override, ``{"tool": "read" | "write" | "destructive"}``.
        timeout_seconds: per-call budget for every tool of the server (seconds).
        max_output_chars: model-visible output budget for every tool (characters).
        always_load: tools declared to the model without a prior ``tool_search``.
        connect_timeout_seconds: budget for start + handshake + listing (seconds).
        tools: full per-tool overrides, ``{"tool": {"timeout_seconds": 5, "concurrency_safe": true}}``.
        first_connect_timeout_seconds, ping_interval_seconds, healthy_after_seconds,
        backoff_max_seconds, relist_min_interval_seconds: lifecycle settings, see
        :class:`LifecyclePolicy` (``None``: the top-level default).
        protocol: ``"auto"`` (probe 2026-07-28 ``server/discover``, fall back to ``initialize``; a
            server that refuses its own mid-call request there, e.g. ``ctx.elicit()``, is reconnected
            with the handshake and the call sent again, see :mod:`host.upstream.connection`) or
            ``"legacy"`` (always the 2025-11-25 ``initialize`` handshake, e.g. for servers whose
            sampling/elicitation/subscriptions only work on handshake-era sessions).
        oauth: MCP authorization for an HTTP server that answers ``401`` with
            ``WWW-Authenticate`` resource metadata (``true`` or :class:`OAuthOptions` fields).
        inherit_env: which of toolhost's environment variables a stdio server inherits:
            ``"network"``, ``"minimal"``, ``"all"`` or a list of names / patterns
            (:mod:`host.upstream.child_env`; ``None``: the top-level ``toolhost.inherit_env``).
        max_message_mib: the largest message read from a stdio server's stdout (MiB; ``None``:
            16, :data:`host.upstream.stdio_pipe.MAX_LINE_BYTES`); a longer line is dropped as it
            arrives and the call it answers fails.
        flow: data-flow label overrides for the server and its tools
            (:class:`registry.safety.flow.FlowConfig`).
        sandbox: run a stdio server under bubblewrap (:class:`SandboxOptions`; ``true``: defaults).
        auto_accept: ``"cosmetic"``: a changed definition whose drift class
            (:func:`registry.safety.drift.classify_drift`) is purely cosmetic is pinned without an
            admin; ``"none"`` (default): every change is held. A risk downgrade, a new URL or a
            scanner finding is never auto-accepted.
        sampling: ``false``: the server's ``sampling/createMessage`` requests are refused with an
            error and never reach the user (default ``true``: relayed, attributed to the server).
        trust_definitions: prompts, resources, templates and ``instructions`` of this server an
            admin read and released although the definition scanner holds them (entries
            ``prompt:<name>``, ``resource:<uri>``, ``template:<uri template>``, ``instructions``;
            :mod:`registry.catalog_scan`).
    """

    model_config = ConfigDict(extra="forbid")

    prefix: str | None = None
    enabled: list[str] | None = None
    disabled: list[str] = Field(default_factory=list)
    risk: dict[str, Risk] = Field(default_factory=dict)
    timeout_seconds: float | None = Field(default=None, gt=0)
    max_output_chars: int | None = Field(default=None, gt=0)
    always_load: list[str] = Field(default_factory=list)
    connect_timeout_seconds: float | None = Field(default=None, gt=0)
    tools: dict[str, ToolOverrides] = Field(default_factory=dict)
    first_connect_timeout_seconds: float | None = Field(default=None, gt=0)
    ping_interval_seconds: float | None = Field(default=None, ge=0)
    healthy_after_seconds: float | None = Field(default=None, ge=0)
    backoff_max_seconds: float | None = Field(default=None, gt=0)
    relist_min_interval_seconds: float | None = Field(default=None, ge=0)
    protocol: Literal["auto", "legacy"] = "auto"
    oauth: OAuthOptions | None = None
    max_message_mib: float | None = Field(default=None, gt=0, le=1024)
    inherit_env: InheritEnvSetting | None = None
    flow: FlowConfig = Field(default_factory=FlowConfig)
    sandbox: SandboxOptions | None = None
    auto_accept: Literal["none", "cosmetic"] = "none"
    sampling: bool = True
    trust_definitions: list[str] = Field(default_factory=list)

    @field_validator("trust_definitions")
    @classmethod
    def _trust_entries(cls, value: list[str]) -> list[str]:
        """Each entry names one item kind: ``prompt:``, ``resource:``, ``template:`` or ``instructions``."""
        for entry in value:
            kind, sep, rest = entry.partition(":")
            if entry != "instructions" and not (sep and rest and kind in ("prompt", "resource", "template")):
                raise ValueError(f"trust_definitions entry {entry!r} must be 'prompt:<name>', 'resource:<uri>', "
                                 "'template:<uri template>' or 'instructions' (the upstream's own names/URIs)")
        return value

    @field_validator("sandbox", mode="before")
    @classmethod
    def _sandbox_flag(cls, value: Any) -> Any:
        """``true`` means every default; ``false`` none."""
        if value is True:
            return {}
        if value is False:
            return None
        return value

    @field_validator("oauth", mode="before")
    @classmethod
    def _oauth_flag(cls, value: Any) -> Any:
        """``true`` means every default; ``false`` none."""
        if value is True:
            return {}
        if value is False:
            return None
        return value

    def includes(self, tool: str) -> bool:
        """Whether the tool named ``tool`` (original name) is registered at all."""
        if tool in self.disabled:
            return False
        return self.enabled is None or tool in self.enabled

    def overrides_for(self, tool: str) -> ToolOverrides:
        """The merged overrides of one tool: ``tools.<name>`` then ``risk``/``always_load``/budgets."""
        base = self.tools.get(tool, ToolOverrides())
        update: dict[str, Any] = {}
        if base.risk is None and tool in self.risk:
            update["risk"] = self.risk[tool]
        if tool in self.always_load:
            update["always_load"] = True
        if base.timeout_seconds is None and self.timeout_seconds is not None:
            update["timeout_seconds"] = self.timeout_seconds
        if base.max_output_chars is None and self.max_output_chars is not None:
            update["max_output_chars"] = self.max_output_chars
        return base.model_copy(update=update) if update else base


class _ServerBase(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = ""
    toolhost: ServerOptions = Field(default_factory=ServerOptions)
    disabled: bool = False

    @property
    def prefix(self) -> str:
        """The sanitized namespace prefix of this server's tools (``""``: un-namespaced)."""
        if self.toolhost.prefix == "":
            return ""
        return sanitize_prefix(self.toolhost.prefix or self.name)


class StdioServerConfig(_ServerBase):
    """A server started as a child process speaking MCP over stdin/stdout."""

    transport: Literal["stdio"] = "stdio"
    command: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


class RemoteServerConfig(_ServerBase):
    """A server reached over the network: streamable HTTP (default) or legacy SSE.
    ``toolhost.oauth`` (:class:`OAuthOptions`) makes toolhost authorize itself with OAuth.
    """

    transport: Literal["streamable-http", "sse"] = "streamable-http"
    url: str
    headers: dict[str, str] = Field(default_factory=dict)


ServerConfig = StdioServerConfig | RemoteServerConfig


PACKAGE_RUNNERS = frozenset({"npx", "uvx", "pipx", "bunx", "pnpx", "pnpm", "yarn", "docker", "podman"})
"""Commands that may download/install a package on their first start (``npx -y pkg``)."""


@dataclass(frozen=True)
class LifecyclePolicy:
    """How one connection is kept alive. Units: seconds.

    Attributes:
        first_connect_timeout_seconds: budget of the **first** connect attempt when longer than
            the connect timeout (``None``: same as every attempt). Default: 120 s for stdio
            commands in :data:`PACKAGE_RUNNERS` (``npx -y`` may install first), else ``None``.
        ping_interval_seconds: MCP ``ping`` period for HTTP/SSE servers (0 disables).
        healthy_after_seconds: uptime after which the reconnect backoff resets.
        backoff_initial_seconds: first reconnect delay.
        backoff_max_seconds: cap of a reconnect delay.
        relist_min_interval_seconds: minimum time between two re-lists on ``list_changed``.
    """

    first_connect_timeout_seconds: float | None = None
    ping_interval_seconds: float = 30.0
    healthy_after_seconds: float = 60.0
    backoff_initial_seconds: float = 1.0
    backoff_max_seconds: float = 60.0
    relist_min_interval_seconds: float = 1.0


class FailedServer(BaseModel):
    """A server entry that could not be used as written (only this server fails).

    Attributes:
        name: the entry's name.
        transport: ``stdio``, ``streamable-http`` or ``sse`` (best guess from the entry).
        reason: one line naming the JSON path and the fix.
        prefix: the namespace its tools would have had (``toolhost.prefix`` when the entry gives a
            usable one, else the sanitized name; ``None`` when neither is a valid prefix), so a call
            to one of them can name this server and its reason.
    """

    name: str
    transport: str
    reason: str
    prefix: str | None = None


class CodeModePoolOptions(BaseModel):
    """``toolhost.code_mode.pool``: the sandbox worker processes (:class:`host.code_mode.PoolConfig`)."""

    model_config = ConfigDict(extra="forbid")

    min_workers: int = Field(default=1, ge=0, le=64)
    max_workers: int | None = Field(default=None, ge=1, le=64)
    """Most live workers (``None``: the CPU count, at most 4)."""
    max_scripts_per_caller: int | None = Field(default=None, ge=1, le=64)
    """Most scripts one caller has running or waiting (``None``: half the pool, at least 1)."""
    max_queued_scripts: int | None = Field(default=None, ge=1, le=1024)
    """Most scripts waiting for a worker (``None``: twice the pool)."""
    max_anonymous_scripts: int | None = Field(default=None, ge=1, le=2048)
    """Most scripts all anonymous sessions have running or waiting together (``None``: pool + queue)."""
    checkout_timeout_seconds: float = Field(default=10.0, gt=0)
    turn_timeout_seconds: float = Field(default=15.0, gt=0)
    max_scripts_per_worker: int = Field(default=200, ge=1)


class CodeModeLimitOptions(BaseModel):
    """``toolhost.code_mode.limits``: what one script may use (:class:`host.code_mode.ScriptLimits`)."""

    model_config = ConfigDict(extra="forbid")

    wall_clock_seconds: float = Field(default=30.0, gt=0)
    cpu_seconds: float = Field(default=10.0, gt=0)
    max_memory_bytes: int = Field(default=64 * 1024 * 1024, gt=0)
    max_recursion_depth: int = Field(default=200, gt=0)
    max_inner_calls: int = Field(default=100, gt=0)
    max_output_bytes: int = Field(default=1024 * 1024, gt=0)
    max_print_bytes: int = Field(default=64 * 1024, gt=0)


class CodeModeOptions(BaseModel):
    """The ``toolhost.code_mode`` block: the ``execute`` meta tool (scripts calling tools in a
    sandbox), off by default; ``toolhost serve --code-mode`` turns it on for one run.

    Example: ``{"toolhost": {"code_mode": {"enabled": true, "pool": {"max_workers": 2},
    "limits": {"wall_clock_seconds": 20}}}}``.
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    pool: CodeModePoolOptions = Field(default_factory=CodeModePoolOptions)
    limits: CodeModeLimitOptions = Field(default_factory=CodeModeLimitOptions)

    def to_config(self, *, enabled: bool | None = None) -> Any:
        """The :class:`host.code_mode.CodeModeConfig` of this block (``enabled`` overrides the file's)."""
        from host.code_mode.config import CodeModeConfig, PoolConfig, ScriptLimits

        pool = self.pool.model_dump(exclude_none=True)
        if "max_workers" not in pool:
            pool["max_workers"] = max(PoolConfig().max_workers, self.pool.min_workers)
        return CodeModeConfig(
            enabled=self.enabled if enabled is None else enabled,
            pool=PoolConfig(**pool),
            limits=ScriptLimits(**self.limits.model_dump()),
        )


class DefinitionScanOptions(BaseModel):
    """``toolhost.definition_scan``: the poisoned-definition scanner's optional learned signal."""

    model_config = ConfigDict(extra="forbid")

    learned: bool = True
    """Hold tools the learned probe flags besides the rules (needs the dense model; without it the
    rules alone hold). On by default: on attacks in languages it never trained on it lifts recall
    from 55 % to 89 % (``bench/definition_scan_train.py --synthetic-split``) while holding 4 of 3,379
    real tools instead of 1 (``bench/definition_scan.py --learned``). ``$TOOLHOST_LEARNED_SCAN`` overrides it
    (:func:`host.safety.learned_scan_enabled`)."""


class HostDefaults(BaseModel):
    """The top-level ``toolhost`` block: defaults for every server (lifecycle fields: see
    :class:`LifecyclePolicy`)."""

    model_config = ConfigDict(extra="forbid")

    timeout_seconds: float = Field(default=DEFAULT_TIMEOUT_SECONDS, gt=0)
    max_output_chars: int = Field(default=DEFAULT_MAX_OUTPUT_CHARS, gt=0)
    connect_timeout_seconds: float = Field(default=30.0, gt=0)
    first_connect_timeout_seconds: float = Field(default=120.0, gt=0)
    ping_interval_seconds: float = Field(default=30.0, ge=0)
    healthy_after_seconds: float = Field(default=60.0, ge=0)
    backoff_max_seconds: float = Field(default=60.0, gt=0)
    relist_min_interval_seconds: float = Field(default=1.0, ge=0)
    startup_wait_seconds: float = Field(default=10.0, ge=0, le=600)
    """While ``serve`` starts (it answers at once), how long a listing, search or call waits for the
    servers' first connect attempts before answering with what is connected (seconds, from start-up;
    later servers' tools are announced with ``list_changed``)."""
    inherit_env: InheritEnvSetting = "network"
    """What stdio servers inherit of toolhost's environment (:mod:`host.upstream.child_env`); a
    server's ``toolhost.inherit_env`` overrides it."""
    audit_durability: Literal["commit", "interval"] = "commit"
    """``commit``: a call is answered only after its audit row is committed (no answered call's row
    is lost even if the process crashes); ``interval``: rows are committed in the background within
    ``audit_flush_seconds`` (see :mod:`host.access.audit_writer`)."""
    audit_flush_seconds: float = Field(default=0.05, gt=0, le=60)
    audit_read_calls: Literal["best_effort", "required"] = "best_effort"
    """Read-only tools when the audit log cannot be written: ``best_effort`` runs and answers them
    (their rows stay queued); ``required`` refuses them as not sent, like write and destructive
    tools always are (see :mod:`host.access.audit_gate`)."""
    audit_wait_seconds: float = Field(default=10.0, gt=0, le=600)
    """How long a call that ran waits for its audit row before it is answered "outcome unknown"."""
    log_max_mib: float = Field(default=10.0, gt=0, le=4096)
    """Largest size of one server log file under ``logs/`` before it is rotated (MiB)."""
    log_backups: int = Field(default=2, ge=0, le=100)
    """Rotated files kept per server log (``x.log.1`` … ``x.log.N``)."""
    log_notifications_per_second: float = Field(default=50.0, gt=0)
    """Logged ``notifications/message`` per second and server (bursts up to 10 s worth; the rest
    are dropped and counted in the log)."""
    new_tools: Literal["held", "trusted"] = "held"
    """Tools that appear on a server that already has pins: ``held`` until ``toolhost pins accept``
    (default), or ``trusted`` at once (see :mod:`host.store.pins`)."""
    rate_limits: RateLimitConfig | None = None  # per-user / per-tool token buckets
    sessions: SessionLimits = Field(default_factory=SessionLimits)  # fair HTTP sessions: per-user limit, idle expiry
    taint: TaintRule = Field(default_factory=TaintRule)
    """The session-taint rule's default decision for an egress call after private and untrusted
    results (:mod:`registry.safety.taint`; ``{"decision": "approve"}``; grants may override it)."""
    code_mode: CodeModeOptions = Field(default_factory=CodeModeOptions)
    """Code mode: the ``execute`` meta tool, its sandbox pool and limits (:class:`CodeModeOptions`)."""
    definition_scan: DefinitionScanOptions = Field(default_factory=DefinitionScanOptions)
    """The definition scanner's learned signal on or off (:class:`DefinitionScanOptions`)."""


class HostConfig(BaseModel):
    """A parsed, expanded configuration.

    Attributes:
        servers: enabled servers by name, in file order.
        defaults: the top-level ``toolhost`` block.
        source: the file it came from (``None`` for in-memory configs).
        skipped: names of entries with ``"disabled": true``.
        failed: entries that could not be used, by name (each fails only itself).
        warnings: ignored keys, with a suggestion when one looks like a typo (other clients'
            keys such as ``autoApprove`` are ignored silently).
    """

    servers: dict[str, ServerConfig] = Field(default_factory=dict)
    defaults: HostDefaults = Field(default_factory=HostDefaults)
    source: str | None = None
    skipped: list[str] = Field(default_factory=list)
    failed: dict[str, FailedServer] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)

    def log_limits(self) -> LogLimits:
        """Size caps and rates of every server's log files (from the ``toolhost`` block)."""
        from host.upstream.serverlog import LogLimits

        d = self.defaults
        return LogLimits(max_bytes=int(d.log_max_mib * 1024 * 1024), backups=d.log_backups,
                         notifications_per_second=d.log_notifications_per_second)

    def connect_timeout_for(self, server: ServerConfig) -> float:
        """Connect budget of one server in seconds (its own, else the default)."""
        return server.toolhost.connect_timeout_seconds or self.defaults.connect_timeout_seconds

    def lifecycle_for(self, server: ServerConfig) -> LifecyclePolicy:
        """The server's :class:`LifecyclePolicy` (its ``toolhost`` block, else the defaults)."""
        o, d = server.toolhost, self.defaults
        first = o.first_connect_timeout_seconds
        if first is None and isinstance(server, StdioServerConfig):
            if Path(server.command).name.lower().removesuffix(".cmd") in PACKAGE_RUNNERS:
                first = d.first_connect_timeout_seconds

        def pick(mine, default):  # the server's own setting, else the default
            return default if mine is None else mine

        return LifecyclePolicy(
            first_connect_timeout_seconds=first,
            ping_interval_seconds=pick(o.ping_interval_seconds, d.ping_interval_seconds),
            healthy_after_seconds=pick(o.healthy_after_seconds, d.healthy_after_seconds),
            backoff_initial_seconds=min(1.0, pick(o.backoff_max_seconds, d.backoff_max_seconds)),
            backoff_max_seconds=pick(o.backoff_max_seconds, d.backoff_max_seconds),
            relist_min_interval_seconds=pick(o.relist_min_interval_seconds, d.relist_min_interval_seconds),
        )

