"""The tool record: one merged, immutable description of a tool the host can run.

A :class:`ToolRecord` joins what an MCP server said about a tool (name, title, description,
input/output schema, annotations) with toolhost's own metadata (risk, budgets, concurrency,
idempotency, deferred loading) and a stable hash of the server-provided definition.

Risk derivation follows the MCP specification's defaults for absent annotation hints
(https://modelcontextprotocol.io/specification/2025-11-25/schema#toolannotations):

* ``readOnlyHint`` absent → ``False`` (the tool may change its environment);
* ``destructiveHint`` absent → ``True`` (meaningful only when not read-only);
* ``idempotentHint`` absent → ``False``;
* ``openWorldHint`` absent → ``True``.

So a tool with no annotations at all is ``destructive``, ``open_world`` and not idempotent.
Annotations are untrusted hints; configuration overrides (:class:`ToolOverrides`) always win.
"""

from __future__ import annotations

import enum
import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "DEFAULT_TIMEOUT_SECONDS",
    "Risk",
    "ToolAnnotations",
    "ToolDefinition",
    "ToolOverrides",
    "ToolRecord",
    "build_record",
    "definition_hash",
    "derive_risk",
]

DEFAULT_TIMEOUT_SECONDS = 60.0
"""Per-call timeout used when neither config nor tool sets one (seconds)."""

DEFAULT_MAX_OUTPUT_CHARS = 20_000
"""Model-visible output budget used when config sets none (characters)."""


class Risk(str, enum.Enum):
    """How much a tool can change: ``read`` < ``write`` < ``destructive``."""

    READ = "read"
    WRITE = "write"
    DESTRUCTIVE = "destructive"

    @property
    def level(self) -> int:
        """0 for read, 1 for write, 2 for destructive: compare risks with this."""
        return _RISK_LEVEL[self]

    def __le__(self, other: object) -> bool:  # type: ignore[override]
        if not isinstance(other, Risk):
            return NotImplemented
        return self.level <= other.level

    def __lt__(self, other: object) -> bool:  # type: ignore[override]
        if not isinstance(other, Risk):
            return NotImplemented
        return self.level < other.level

    def __ge__(self, other: object) -> bool:  # type: ignore[override]
        if not isinstance(other, Risk):
            return NotImplemented
        return self.level >= other.level

    def __gt__(self, other: object) -> bool:  # type: ignore[override]
        if not isinstance(other, Risk):
            return NotImplemented
        return self.level > other.level

    __hash__ = str.__hash__


_RISK_LEVEL = {Risk.READ: 0, Risk.WRITE: 1, Risk.DESTRUCTIVE: 2}


class ToolAnnotations(BaseModel):
    """MCP tool annotations as sent by the server; ``None`` means the hint was absent.

    Source: MCP spec ``ToolAnnotations`` (``title``, ``readOnlyHint``, ``destructiveHint``,
    ``idempotentHint``, ``openWorldHint``).
    """

    model_config = ConfigDict(frozen=True)

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None

    def to_wire(self) -> dict[str, Any]:
        """The camelCase JSON form, absent hints omitted."""
        out: dict[str, Any] = {}
        for attr, key in _ANNOTATION_KEYS:
            value = getattr(self, attr)
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_wire(cls, data: dict[str, Any] | None) -> ToolAnnotations:
        """Build from the camelCase JSON form (unknown keys ignored, non-bool hints dropped)."""
        data = data or {}
        kwargs: dict[str, Any] = {}
        for attr, key in _ANNOTATION_KEYS:
            value = data.get(key, data.get(attr))
            if attr == "title":
                kwargs[attr] = value if isinstance(value, str) else None
            else:
                kwargs[attr] = value if isinstance(value, bool) else None
        return cls(**kwargs)


_ANNOTATION_KEYS = (
    ("title", "title"),
    ("read_only_hint", "readOnlyHint"),
    ("destructive_hint", "destructiveHint"),
    ("idempotent_hint", "idempotentHint"),
    ("open_world_hint", "openWorldHint"),
)


class ToolDefinition(BaseModel):
    """What an MCP server said about one tool (``tools/list`` entry), normalized.

    ``input_schema`` and ``output_schema`` are JSON Schema objects (dicts) as received.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    title: str | None = None
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations = Field(default_factory=ToolAnnotations)


class ToolOverrides(BaseModel):
    """Per-tool settings from configuration; every ``None`` field means "derive it"."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    risk: Risk | None = None
    open_world: bool | None = None
    timeout_seconds: float | None = Field(default=None, gt=0)
    max_output_chars: int | None = Field(default=None, gt=0)
    concurrency_safe: bool | None = None
    idempotent: bool | None = None
    always_load: bool = False
    resource_key: str | None = None


class ToolRecord(BaseModel):
    """One tool in the registry: server definition plus toolhost metadata.

    Attributes:
        qualified_name: provider-safe unique name (``^[a-zA-Z0-9_-]{1,64}$``), e.g. ``orders__cancel_order``.
        server: name of the owning server in the ``mcpServers`` config.
        original_name: the tool's name on that server (what ``tools/call`` needs).
        risk: ``read`` / ``write`` / ``destructive``.
        open_world: the tool talks to an open world (internet, third parties).
        timeout_seconds: per-call budget in seconds.
        max_output_chars: model-visible output budget in characters.
        concurrency_safe: may run in parallel with other calls of the same batch.
        idempotent: repeating the call with the same arguments has no further effect.
        always_load: declared to the model without a prior ``tool_search``.
        resource_key: calls sharing a key are serialized (``None``: no shared resource).
        definition_hash: sha256 hex of the server-provided definition (see :func:`definition_hash`).
        risk_configured: :attr:`risk` comes from the operator's config (``toolhost.risk`` or
            ``toolhost.tools.<tool>.risk``), not from the server's annotations (which are untrusted
            hints: :func:`registry.safety.derive_labels` lets only a configured ``read`` clear egress).
    """

    model_config = ConfigDict(frozen=True)

    qualified_name: str
    server: str
    original_name: str
    title: str | None = None
    description: str = ""
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations = Field(default_factory=ToolAnnotations)
    risk: Risk
    open_world: bool
    timeout_seconds: float
    max_output_chars: int
    concurrency_safe: bool
    idempotent: bool
    always_load: bool = False
    resource_key: str | None = None
    definition_hash: str
    risk_configured: bool = False

    @property
    def read_only(self) -> bool:
        """True when :attr:`risk` is ``read``."""
        return self.risk is Risk.READ

    @property
    def display_title(self) -> str:
        """Title for humans: ``title``, else the annotation title, else the original name."""
        return self.title or self.annotations.title or self.original_name


def derive_risk(annotations: ToolAnnotations) -> Risk:
    """Risk implied by MCP annotations, using the spec's defaults for absent hints.

    ``readOnlyHint: true`` → ``read``; otherwise ``destructiveHint`` (default true) decides
    between ``destructive`` and ``write``.
    """
    if annotations.read_only_hint is True:
        return Risk.READ
    if annotations.destructive_hint is False:
        return Risk.WRITE
    return Risk.DESTRUCTIVE


def definition_hash(definition: ToolDefinition) -> str:
    """Stable sha256 hex digest over name, title, description, schemas and annotations.

    Canonical JSON (sorted keys, no whitespace, UTF-8), so key order on the wire does not
    matter but any change of content does (the basis of definition pinning).
    """
    payload = {
        "name": definition.name,
        "title": definition.title,
        "description": definition.description,
        "inputSchema": definition.input_schema,
        "outputSchema": definition.output_schema,
        "annotations": definition.annotations.to_wire(),
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def build_record(
    *,
    server: str,
    qualified_name: str,
    definition: ToolDefinition,
    overrides: ToolOverrides | None = None,
    default_timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    default_max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
) -> ToolRecord:
    """Merge a server definition with config overrides into a :class:`ToolRecord`.

    Derived defaults: risk from annotations (:func:`derive_risk`); ``open_world`` from
    ``openWorldHint`` (default true); ``idempotent`` when read-only or ``idempotentHint``
    is true; ``concurrency_safe`` when the final risk is ``read``. Overrides win over all.
    """
    ov = overrides or ToolOverrides()
    ann = definition.annotations
    risk = ov.risk or derive_risk(ann)
    open_world = ov.open_world if ov.open_world is not None else ann.open_world_hint is not False
    idempotent = ov.idempotent if ov.idempotent is not None else (risk is Risk.READ or ann.idempotent_hint is True)
    concurrency_safe = ov.concurrency_safe if ov.concurrency_safe is not None else risk is Risk.READ
    return ToolRecord(
        qualified_name=qualified_name,
        server=server,
        original_name=definition.name,
        title=definition.title,
        description=definition.description,
        input_schema=definition.input_schema,
        output_schema=definition.output_schema,
        annotations=ann,
        risk=risk,
        open_world=open_world,
        timeout_seconds=ov.timeout_seconds or default_timeout_seconds,
        max_output_chars=ov.max_output_chars or default_max_output_chars,
        concurrency_safe=concurrency_safe,
        idempotent=idempotent,
        always_load=ov.always_load,
        resource_key=ov.resource_key,
        definition_hash=definition_hash(definition),
        risk_configured=ov.risk is not None,
    )
