"""Data-flow labels of a tool: private source, untrusted source, egress (the "lethal trifecta").

A session that has read private data, then read content someone else wrote, and then calls a
tool that can send data out can be steered to exfiltrate (Simon Willison, "The lethal trifecta
for AI agents", https://simonwillison.net/2025/Jun/16/the-lethal-trifecta/; Invariant Labs' GitHub
MCP exploit, https://invariantlabs.ai/blog/mcp-github-vulnerability). :func:`derive_labels` gives
each tool its labels; :mod:`registry.safety.taint` tracks them per session.

Derivation (first matching row wins per label; "name cue" = a token of the tool's original name,
split at ``_``, ``-``, ``.``, ``/``, spaces and camelCase, in the cue sets below):

=================  ===========================================================================
label              derived as
=================  ===========================================================================
private_source     1. ``toolhost.flow.tools.<tool>.private_source`` (config, per tool)
                   2. ``toolhost.flow.private_source`` (config, per server)
                   3. name cue in :data:`PRIVATE_CUES` (file, inbox, mail, calendar, db, sql,
                      drive, note, secret, repo, memory, …) and the tool reads (read-only, or a
                      read verb in :data:`READ_VERBS`: read, get, list, search, query, …) → true
                   4. otherwise false: a closed-world read without a cue (``get_current_time``,
                      ``echo``) is not private; mark a server that holds private data with
                      ``"flow": {"private_source": true}``
untrusted_source   1./2. config as above (``untrusted_source``)
                   3. name cue in :data:`UNTRUSTED_CUES` (fetch, browse, scrape, web, url, inbox,
                      email, issue, comment, message, chat, news, feed, …) → true (the content is
                      third-party text even when the endpoint is closed-world)
                   4. open world (``openWorldHint`` true **or absent**: the MCP default) → true
                   5. otherwise false
egress             1./2. config as above (``egress``)
                   3. read-only by config (``toolhost.risk`` / ``tools.<tool>.risk`` ``read``) → false
                   4. name cue in :data:`EGRESS_CUES` (send, post, publish, upload, share, reply,
                      comment, tweet, webhook, notify, push, submit, forward, gist, …) → true,
                      also when the server claims ``readOnlyHint: true`` (a *conflict*, see below)
                   5. read-only by annotation (``readOnlyHint: true``) → false
                   6. open world (``openWorldHint`` true or absent) → true
                   7. otherwise false
=================  ===========================================================================

Annotations are untrusted hints from the server (MCP 2025-11-25, tools: "clients MUST consider tool
annotations to be untrusted unless they come from trusted servers"), so an annotation never removes a
label that the tool's name implies: a ``send_report`` that claims ``readOnlyHint: true`` stays egress,
a ``fetch_page`` that claims ``openWorldHint: false`` stays an untrusted source. Each such disagreement
is listed in :attr:`FlowLabels.conflicts` (shown as ``(hint conflict)`` in tables); only the operator's
config (``flow`` or ``risk``) clears the label. The defaults err towards labelling: a tool with no
annotations at all is an untrusted source and an egress (spec defaults: not read-only, open world).
A read-only fetcher is *not* egress by these rules even though a URL's query string can carry data
out; mark it with ``"tools": {"fetch": {"egress": true}}`` to be strict.

Config shape (the ``toolhost.flow`` block of a server entry, :class:`FlowConfig`)::

    "toolhost": {"flow": {"private_source": true,
                          "tools": {"fetch": {"untrusted_source": true, "egress": true},
                                    "list_dir": {"private_source": false}}}}

Pure; no I/O.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from registry.safety.flow_hints import hint_conflicts
from registry.tool import Risk, ToolRecord

__all__ = [
    "EGRESS_CUES",
    "PRIVATE_CUES",
    "READ_VERBS",
    "UNTRUSTED_CUES",
    "FlowConfig",
    "FlowLabels",
    "Label",
    "LabelOverride",
    "derive_labels",
    "name_tokens",
]


class Label(str, enum.Enum):
    """A data-flow label."""

    PRIVATE_SOURCE = "private_source"
    UNTRUSTED_SOURCE = "untrusted_source"
    EGRESS = "egress"


PRIVATE_CUES = frozenset({
    "file", "files", "fs", "filesystem", "dir", "directory", "directories", "folder", "path", "inbox", "mail",
    "email", "emails", "gmail", "outlook", "message", "messages", "calendar", "event", "events", "contact",
    "contacts", "database", "db", "sql", "query", "table", "tables", "drive", "doc", "docs", "document",
    "documents", "note", "notes", "secret", "secrets", "credential", "credentials", "password", "passwords",
    "env", "history", "repo", "repos", "repository", "repositories", "customer", "customers", "account",
    "accounts", "memory", "memories", "clipboard", "notion", "obsidian", "sheet", "sheets", "spreadsheet",
    "crm", "invoice", "invoices", "ssh", "vault", "keychain", "photos", "private", "git", "commit", "commits",
    "blame",
})
"""Name tokens that mark a tool reading the user's or organisation's data."""

UNTRUSTED_CUES = frozenset({
    "fetch", "browse", "browser", "navigate", "scrape", "crawl", "web", "url", "http", "https", "download",
    "rss", "feed", "feeds", "inbox", "mail", "email", "emails", "gmail", "issue", "issues", "comment",
    "comments", "pr", "pull", "review", "reviews", "ticket", "tickets", "message", "messages", "chat", "chats",
    "slack", "discord", "tweet", "tweets", "twitter", "reddit", "news", "page", "html", "webpage", "website",
    "search", "google", "bing", "duckduckgo", "youtube", "transcript", "forum", "post", "posts",
})
"""Name tokens that mark a tool returning text written by third parties."""

EGRESS_CUES = frozenset({
    "send", "post", "publish", "upload", "share", "reply", "comment", "tweet", "webhook", "notify", "push",
    "submit", "forward", "gist", "invite", "transfer", "pay", "email", "mail", "sms", "message", "broadcast",
})
"""Name tokens that mark a tool that can send data out (only for tools that are not read-only)."""

READ_VERBS = frozenset({
    "read", "get", "list", "search", "query", "fetch", "find", "show", "view", "open", "load", "export",
    "download", "cat", "tree", "lookup", "retrieve", "describe", "select", "recall", "browse",
})
"""Name tokens that mark a tool returning data (for the private-source cue of a tool that may also write)."""

_TOKEN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def name_tokens(name: str) -> frozenset[str]:
    """Lower-case word tokens of a tool name: ``fetchURL_v2`` → ``{"fetch", "url", "v", "2"}``."""
    return frozenset(t.lower() for t in _TOKEN.findall(name))


class LabelOverride(BaseModel):
    """Config values for the labels; ``None`` means "derive it"."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    private_source: bool | None = None
    untrusted_source: bool | None = None
    egress: bool | None = None


class FlowConfig(LabelOverride):
    """The ``toolhost.flow`` block of one server: server-wide label values plus per-tool ones
    (keyed by the tool's original name) and one for its prompts and resources (``catalog``, see
    :mod:`registry.safety.catalog_flow`). Per tool (or ``catalog``) beats per server beats derivation."""

    tools: dict[str, LabelOverride] = Field(default_factory=dict)
    catalog: LabelOverride = Field(default_factory=LabelOverride)


@dataclass(frozen=True)
class FlowLabels:
    """The labels of one tool and why: ``reasons`` maps each label to one line
    (``"name cue 'fetch'"``, ``"openWorldHint absent (MCP default: open world)"``, ``"config
    toolhost.flow.tools.fetch"``), also for a label that is false."""

    private_source: bool
    untrusted_source: bool
    egress: bool
    reasons: dict[Label, str]
    conflicts: tuple[str, ...] = ()
    """Annotations the labels overrule, one line each naming the config key that clears the label
    (``"readOnlyHint true contradicts name cue 'send': still egress; if the tool really sends
    nothing, set toolhost.flow.tools.send_report.egress false (or toolhost.risk.send_report read)
    in the server's config"``; :func:`registry.safety.flow_hints.hint_conflicts`)."""

    @property
    def labels(self) -> frozenset[Label]:
        """The labels that are true."""
        return frozenset(
            label for label, on in ((Label.PRIVATE_SOURCE, self.private_source),
                                    (Label.UNTRUSTED_SOURCE, self.untrusted_source), (Label.EGRESS, self.egress))
            if on
        )

    def as_dict(self) -> dict[str, object]:
        """JSON form: ``{"labels": ["private_source", ...], "short": "private,egress", "reasons":
        {"private_source": "name cue 'file' and the tool reads", ...}, "conflicts": [...]}`` (reasons
        for every label; conflicts as :attr:`conflicts`)."""
        return {"labels": [x.value for x in Label if x in self.labels], "short": self.short(),
                "reasons": {k.value: v for k, v in self.reasons.items()}, "conflicts": list(self.conflicts)}

    def short(self) -> str:
        """Compact form for tables: ``private,untrusted,egress`` or ``-``; `` (hint conflict)``
        appended when an annotation was overruled."""
        names = {Label.PRIVATE_SOURCE: "private", Label.UNTRUSTED_SOURCE: "untrusted", Label.EGRESS: "egress"}
        text = ",".join(names[x] for x in Label if x in self.labels) or "-"
        return f"{text} (hint conflict)" if self.conflicts else text


def _configured(config: FlowConfig | None, tool: str, field: str) -> tuple[bool, str] | None:
    if config is None:
        return None
    per_tool = config.tools.get(tool)
    if per_tool is not None and getattr(per_tool, field) is not None:
        return getattr(per_tool, field), f"config toolhost.flow.tools.{tool}.{field}"
    if getattr(config, field) is not None:
        return getattr(config, field), f"config toolhost.flow.{field}"
    return None


def _cue(tokens: frozenset[str], cues: frozenset[str]) -> str | None:
    hits = sorted(tokens & cues)
    return hits[0] if hits else None


def derive_labels(record: ToolRecord, config: FlowConfig | None = None) -> FlowLabels:
    """The labels of ``record`` (module docstring table); ``config`` is its server's ``toolhost.flow``."""
    tokens = name_tokens(record.original_name)
    hint = record.annotations.open_world_hint
    world = ("openWorldHint true" if hint is True else "openWorldHint absent (MCP default: open world)"
             if hint is None else "openWorldHint false")
    if record.open_world != (hint is not False):
        world = f"open_world {str(record.open_world).lower()} (config)"
    read_only = record.risk is Risk.READ
    configured_read = read_only and record.risk_configured
    reasons: dict[Label, str] = {}

    def decide(label: Label, rows: list[tuple[bool, bool, str]]) -> bool:
        found = _configured(config, record.original_name, label.value)
        if found is not None:
            reasons[label] = found[1]
            return found[0]
        for applies, value, why in rows:
            if applies:
                reasons[label] = why
                return value
        reasons[label] = "no cue"
        return False

    private_cue = _cue(tokens, PRIVATE_CUES)
    untrusted_cue = _cue(tokens, UNTRUSTED_CUES)
    egress_cue = _cue(tokens, EGRESS_CUES)
    private = decide(Label.PRIVATE_SOURCE, [
        (private_cue is not None and (read_only or bool(tokens & READ_VERBS)), True,
         f"name cue {private_cue!r} and the tool reads"),
    ])
    untrusted = decide(Label.UNTRUSTED_SOURCE, [
        (untrusted_cue is not None, True, f"name cue {untrusted_cue!r}"),
        (record.open_world, True, world),
    ])
    egress = decide(Label.EGRESS, [
        (configured_read, False, "read-only (config risk read)"),
        (egress_cue is not None, True, f"name cue {egress_cue!r}" + (
            ", although the server claims readOnlyHint true" if read_only else " and not read-only")),
        (read_only, False, "read-only (readOnlyHint true)"),
        (record.open_world, True, f"{world} and not read-only"),
    ])
    return FlowLabels(private, untrusted, egress, reasons, hint_conflicts(record, reasons))
