"""Poisoned-definition scanner: hidden instructions in a tool's name, description, schemas and annotations.

A tool definition is text the model reads as instructions ("tool poisoning", Invariant Labs,
https://invariantlabs.ai/blog/mcp-security-notification-tool-poisoning-attacks; "line jumping",
Trail of Bits, https://blog.trailofbits.com/2025/04/21/jumping-the-line-how-mcp-servers-can-attack-you-before-you-ever-use-them/).
Every field the model sees can carry it ("full-schema poisoning", CyberArk,
https://www.cyberark.com/resources/threat-research-blog/poison-everywhere-no-output-from-your-mcp-server-is-safe),
so :func:`scan_definition` walks the name, title, description, every string and every property
name in ``inputSchema`` / ``outputSchema`` (all nested levels) and the annotations.

Finding kinds (:class:`FindingKind`); *strong* findings alone make a tool suspicious, *weak* ones
only in the combinations of :func:`ScanResult.suspicious`:

========================  =====================================================================
kind                      what fires (strong unless marked weak)
========================  =====================================================================
``instruction``           fake control tags (``<IMPORTANT>``, ``<SYSTEM>``), HTML comments,
                          overriding instructions (ignore/disregard/bypass … instructions,
                          guidelines, the user's request, "whatever X told you"), new orders ("your
                          real task", "you are now in maintenance mode"), "the user has already
                          consented / pre-approved", "from now on", "otherwise the tool will not
                          work", redirecting recipients, BCC to an address, "never use any other
                          tool", piping curl into a shell, a note addressed to the model (also in
                          French, Spanish, Portuguese, Italian, German), a hidden copy (BCC, "copie
                          cachée", "copia oculta" …) next to an address; weak:
                          imperatives aimed at the model (you must / make sure to / please … +
                          read/send/include/call …), "before/after/whenever you … read/send",
                          "also paste/include …", data put "into the `x` argument", role markers
                          ("SYSTEM: "), "silently", "VERY important", polite requests ("it is very
                          helpful if you include …", "for the best results, fill this with …"),
                          "pass the raw output …", "no need to redact / to ask the user", "when you
                          send …, append …", "ajoutez toujours / añade siempre …"
``concealment``           hiding from the user: "do not tell/mention/let … the user/anyone/in your
                          reply", "without the user's knowledge", "the user does not need to know",
                          "hidden from the user", "keep this to yourself", the same in French,
                          Spanish, Portuguese, Italian, German ("n'est pas nécessaire d'en informer
                          l'utilisateur", "ohne den Benutzer zu informieren"), text placed "after
                          ~200 blank lines"; weak: "don't mention this"
``manipulation``          "other tools are deprecated/compromised", "never use other tools"; weak:
                          "instead of other tools", "the only/best tool to use", "the preferred tool
                          for every task", "should be preferred"
``confirmation_bypass``   weak: "pre-approved", "no confirmation needed", "without checking back with
                          the user", "proceed directly"; strong: approval claimed for an authority
                          ("pre-authorised by the workspace administrator"), "asking the user first
                          breaks …" (:mod:`registry.safety.scan_intent`)
``side_effect``           weak: an extra destructive step ("also/afterwards/after using … delete,
                          wipe, drop, revoke")
``tool_reference``        weak: an imperative naming another tool ("call export_chat",
                          "when send_message is invoked", "chaque fois que vous utilisez
                          send_email"); informative, never flags on its own
``secret_reference``      credential/local paths (``~/.ssh``, ``id_rsa``, ``.env``, ``.aws``,
                          ``mcp.json``, ``/etc/passwd``, gcloud credentials, shell rc files …),
                          weak in a text when the tool's name or property names are about that
                          credential (``ssh_exec`` and ``~/.ssh/id_rsa``, ``list_s3_buckets`` and
                          ``~/.aws/credentials``; a name *carrying* a path is no topic);
                          weak: "API key", "token", "password", "private key", "conversation
                          history", "environment variables", named tokens (OAuth, bot, AWS …),
                          cookies, wallets, personal data, the whole conversation, env-variable
                          names ending in ``_API_KEY`` / ``_TOKEN`` / ``_SECRET``, a dump of what
                          the model sees (output of ``env``, the conversation so far, results of
                          earlier tool calls, the 30 most recent messages, every unread e-mail)
``exfiltration``          "a copy of every … to <literal URL or address>"; weak: send/post/upload/
                          forward … to a URL, e-mail address, phone number, webhook, remote or
                          telemetry server
``invisible_unicode``     Unicode tag characters U+E0000–E007F (emoji flag sequences excepted), bidi
                          overrides/isolates U+202A–202E, U+2066–2069, runs of ≥ 2 zero-width
                          characters, or one inside an ASCII word
``control_chars``         C0/C1 control characters other than tab/newline/CR (ANSI escapes)
``encoded_payload``       base64 (≥ 40 chars) or hex (≥ 64 chars) that decodes to printable text;
                          weak when it decodes to binary (an example key or hash)
``padding``               ≥ 40 spaces/tabs or ≥ 12 consecutive line breaks (pushes text off-screen)
``oversized``             weak: description over the budget (2,000 + 250 per schema property chars);
                          strong over 3× the budget
``learned``               the learned probe's score of a text unit at or over its threshold
                          (:mod:`registry.safety.learned`; only when a scorer is given)
========================  =====================================================================

A tool is suspicious (:attr:`ScanResult.suspicious`) when it has a strong finding, or two weak
findings of families that together read as an attack, in the same field within
:data:`WEAK_PAIR_CHARS` (the pair table ``_PAIR_LIST``): a secret with an instruction, exfiltration,
tool reference or side effect; an instruction with exfiltration, manipulation or a side effect; a
tool reference with exfiltration; concealment or a confirmation bypass with any other weak family;
two different manipulation or confirmation-bypass claims. Single weak signals are common in honest
tools ("you must pass the id", "API key required", "instead of the generic HTTP tool"); their
combinations are not. Rules live in three tables, :data:`registry.safety.scan_rules.RULES`,
:data:`registry.safety.scan_lexicon.RULES` and :data:`registry.safety.scan_intent.RULES`
(confirmation bypass, reply hijacking, preference manipulation, rendered-URL exfiltration, context
harvesting).

Two more passes read what the tables cannot: every field's *decoded views* (ROT13, percent-encoding,
HTML references, look-alike and invisible-character folding; :mod:`registry.safety.scan_decode`) go
through the same rules, and *placement* (:mod:`registry.safety.scan_placement`) makes an
instruction-like weak finding in a value, title or property name strong and adds three structural
checks that need no language's words (an identifier naming a secret and an action, a value or title
addressed to the model, another tool's name beside a destination in one sentence).
Measured recall and false positives: ``bench/definition_scan.py``.

Shapes: input is a ``tools/list`` entry (``{"name", "title"?, "description"?, "inputSchema",
"outputSchema"?, "annotations"?}``), a :class:`~registry.tool.ToolDefinition` or a
:class:`~registry.tool.ToolRecord`. Paths are JSON paths from the tool object, e.g.
``inputSchema.properties.note.description``; a property *name* is reported as
``inputSchema.properties.note`` with ``in_key=True``. Spans are escaped (:func:`escape_span`) so
invisible characters show as ``\\U000e0041``. Pure; no I/O.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from registry.safety import scan_decode as decode
from registry.safety import scan_intent as intent
from registry.safety import scan_lexicon as lexicon
from registry.safety import scan_placement as placed
from registry.safety import scan_rules as rules
from registry.safety.scan_chars import Finding, escape_span, segment_findings
from registry.safety.scan_rules import FindingKind
from registry.tool import ToolDefinition, ToolRecord

__all__ = [
    "Finding",
    "FindingKind",
    "ScanResult",
    "escape_span",
    "scan_definition",
    "scan_text",
    "tool_document",
]

MAX_FIELD_CHARS = 65_536
"""Characters of one field that are scanned; a longer field is a strong ``oversized`` finding."""

MAX_TOTAL_CHARS = 262_144
"""Characters of one definition that are scanned (all fields); past it: a strong ``oversized`` finding.
Scanning is linear (≈ 1–1.5 µs per character), so one hostile definition costs at most ~0.4 s."""

MAX_FINDINGS = 100
"""Findings kept per tool (strong ones first)."""


@dataclass(frozen=True)
class ScanResult:
    """All findings of one tool, in document order."""

    findings: tuple[Finding, ...] = ()

    @property
    def suspicious(self) -> bool:
        """A strong finding, or two weak ones of families that together read as an attack (module
        docstring) in the same field within :data:`WEAK_PAIR_CHARS` of each other."""
        if any(f.strong for f in self.findings):
            return True
        weak = [f for f in self.findings if f.kind in _PAIRS]
        for i, a in enumerate(weak):
            for b in weak[i + 1:]:
                same_field = a.path == b.path and a.in_key == b.in_key
                # two claims, not two readings of one phrase ("without asking for confirmation")
                apart = a.end <= b.start or b.end <= a.start or _K.CONFIRMATION_BYPASS not in (a.kind, b.kind)
                pair = (a.kind, b.kind) in _PAIRS[a.kind] or (a.kind is b.kind and a.kind in _SELF_PAIRS
                                                              and a.rule != b.rule)
                if pair and apart and same_field and abs(a.start - b.start) <= WEAK_PAIR_CHARS:
                    return True
        return False

    @property
    def kinds(self) -> frozenset[FindingKind]:
        """The kinds found."""
        return frozenset(f.kind for f in self.findings)

    def reasons(self) -> list[str]:
        """One line per finding (:meth:`Finding.describe`), strong ones first."""
        return [f.describe() for f in sorted(self.findings, key=lambda f: not f.strong)]


WEAK_PAIR_CHARS = 300
"""Two weak findings count together only this close (characters between their starts, same field)."""

_K = FindingKind
_PAIR_LIST = ((_K.SECRET_REFERENCE, _K.INSTRUCTION), (_K.SECRET_REFERENCE, _K.EXFILTRATION),
              (_K.SECRET_REFERENCE, _K.TOOL_REFERENCE), (_K.INSTRUCTION, _K.EXFILTRATION),
              (_K.TOOL_REFERENCE, _K.EXFILTRATION),
              # concealment makes any other weak family an attack: nothing benign hides what it does
              *((_K.CONCEALMENT, k) for k in (_K.INSTRUCTION, _K.SECRET_REFERENCE, _K.EXFILTRATION,
                                              _K.TOOL_REFERENCE, _K.SIDE_EFFECT, _K.MANIPULATION, _K.OVERSIZED)),
              (_K.MANIPULATION, _K.INSTRUCTION), (_K.MANIPULATION, _K.OVERSIZED),
              (_K.SIDE_EFFECT, _K.INSTRUCTION), (_K.SIDE_EFFECT, _K.SECRET_REFERENCE),
              (_K.SIDE_EFFECT, _K.EXFILTRATION),
              # a claim that nobody needs to confirm makes any other move the model is asked to make an attack
              *((_K.CONFIRMATION_BYPASS, k) for k in (_K.INSTRUCTION, _K.TOOL_REFERENCE, _K.SIDE_EFFECT,
                                                      _K.SECRET_REFERENCE, _K.EXFILTRATION, _K.MANIPULATION,
                                                      _K.CONCEALMENT)))
_SELF_PAIRS = frozenset({_K.MANIPULATION, _K.CONFIRMATION_BYPASS})
"""Kinds whose two *different* claims together read as an attack ("other tools are stale" + "prefer
this"). A confirmation bypass pairs only with a finding it does not overlap."""
_PAIRS: dict[FindingKind, set[tuple[FindingKind, FindingKind]]] = {}
for _a, _b in _PAIR_LIST:
    for _x, _y in ((_a, _b), (_b, _a)):
        _PAIRS.setdefault(_x, set()).add((_x, _y))

DESCRIPTION_BUDGET_CHARS = 2000
"""Description allowance of a tool without parameters (characters)."""
DESCRIPTION_CHARS_PER_PROPERTY = 250
"""Extra allowance per schema property (characters, counted at every nesting level)."""


_SEPARATOR = "\n\n"
_ALL_RULES = rules.RULES + lexicon.RULES + intent.RULES


def _scan_segments(segments: list[tuple[str, str, bool]], chars: bool = True) -> list[Finding]:
    """Findings of many fields at once: the word rules run once over all fields joined by blank
    lines (no rule crosses a blank line; a match is reported in the field where it starts).
    ``chars``: also the character-level checks (:func:`registry.safety.scan_chars.segment_findings`)."""
    out: list[Finding] = []
    starts: list[int] = []
    probes: list[str] = []
    pos = 0
    for path, text, in_key in segments:
        if chars:
            out.extend(segment_findings(text, path, in_key))
        starts.append(pos)
        probe = text.replace("_", " ").replace("-", " ") if in_key else text
        probes.append(probe)
        pos += len(probe) + len(_SEPARATOR)
    joined = _SEPARATOR.join(probes)
    lowered = joined.lower()
    same_length = len(lowered) == len(joined)  # lower() keeps offsets except for a few letters (İ)
    for kind, rule, strong, triggers, lower_pattern, any_case_pattern in _ALL_RULES:
        # literal pre-check (every group needs one of its words): most tools skip most rules
        if not all(any(t in lowered for t in group) for group in triggers):
            continue
        pattern, text_in = (lower_pattern, lowered) if same_length else (any_case_pattern, joined)
        for m in pattern.finditer(text_in):
            i = bisect.bisect_right(starts, m.start()) - 1
            path, text, in_key = segments[i]
            a, b = m.start() - starts[i], min(m.end() - starts[i], len(text))
            out.append(Finding(kind, path, escape_span(text[a:b]), a, b, strong, rule, in_key))
    return out


def scan_text(text: str, path: str, *, in_key: bool = False) -> list[Finding]:
    """Findings in one field's text (every kind except ``oversized``), in order of position.

    ``in_key``: ``text`` is a property name; ``_`` and ``-`` are read as spaces.
    """
    if not text:
        return []
    return sorted(_all_findings([(path, text, in_key)]), key=lambda f: f.start)


def _all_findings(segments: list[tuple[str, str, bool]]) -> list[Finding]:
    """Every check on the fields: characters and word rules, the decoded views of each field
    (:mod:`registry.safety.scan_decode`), then placement (:mod:`registry.safety.scan_placement`)."""
    findings = _scan_segments(segments)
    for path, text, in_key in segments:
        for view, decoded in decode.decoded_views(text):
            found = _scan_segments([(path, decoded, in_key)], chars=False)
            findings += decode.view_findings(view, path, text, in_key, found, findings)
    return placed.promote(findings + placed.placement_findings(segments))


def tool_document(tool: Mapping[str, Any] | ToolDefinition | ToolRecord) -> dict[str, Any]:
    """The wire-shaped dict of ``tool`` (``name``, ``title``, ``description``, ``inputSchema``,
    ``outputSchema``, ``annotations``) whatever form it came in."""
    if isinstance(tool, ToolRecord):
        return {"name": tool.original_name, "title": tool.title, "description": tool.description,
                "inputSchema": tool.input_schema, "outputSchema": tool.output_schema,
                "annotations": tool.annotations.to_wire()}
    if isinstance(tool, ToolDefinition):
        return {"name": tool.name, "title": tool.title, "description": tool.description,
                "inputSchema": tool.input_schema, "outputSchema": tool.output_schema,
                "annotations": tool.annotations.to_wire()}
    return dict(tool)


def _key_path(path: str, key: str) -> str:
    return f"{path}.{key}" if re.fullmatch(r"[A-Za-z_$][\w$-]*", key) else f"{path}[{key!r}]"


MAX_DEPTH = 64
"""Nesting levels of a schema the scanner reads; anything deeper is an ``oversized`` finding (held)."""

_TOO_DEEP = "\x00toolhost: nested too deep\x00"
"""The text :func:`_walk` yields where it stops (:func:`_bounded` turns it into a strong finding)."""

SCHEMA_KEYWORDS = frozenset({
    "$schema", "$id", "$ref", "$defs", "$comment", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary",
    "type", "title", "description", "default", "examples", "example", "enum", "const", "properties",
    "patternProperties", "additionalProperties", "unevaluatedProperties", "unevaluatedItems", "required",
    "items", "prefixItems", "additionalItems", "contains", "minContains", "maxContains", "minItems", "maxItems",
    "uniqueItems", "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minProperties", "maxProperties", "propertyNames", "dependentRequired",
    "dependentSchemas", "dependencies", "anyOf", "oneOf", "allOf", "not", "if", "then", "else", "readOnly",
    "writeOnly", "deprecated", "contentEncoding", "contentMediaType", "contentSchema", "definitions", "nullable",
    "discriminator", "xml", "externalDocs", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint",
})
"""Object keys that are JSON Schema (draft 2020-12 and older) or MCP annotation keywords: not scanned as
text. Every other key is (a property name, a key inside a ``default``/``examples``/``const`` value, a
vendor ``x-…`` keyword): text an upstream chose, served to the model as it is."""


def _walk(node: Any, path: str, depth: int = 0) -> Iterator[tuple[str, str, bool]]:
    """``(path, text, in_key)`` for every string and every object key under ``node`` but the
    :data:`SCHEMA_KEYWORDS` of schema objects; past :data:`MAX_DEPTH` levels one ``_TOO_DEEP`` marker."""
    if depth > MAX_DEPTH:
        yield path, _TOO_DEEP, False
        return
    if isinstance(node, str):
        yield path, node, False
    elif isinstance(node, Mapping):
        names = path.endswith((".properties", ".patternProperties", ".$defs", ".definitions"))
        for key, value in node.items():
            key = str(key)
            sub = _key_path(path, key)
            if names or key not in SCHEMA_KEYWORDS:
                yield sub, key, True
            yield from _walk(value, sub, depth + 1)
    elif isinstance(node, list | tuple):
        for i, value in enumerate(node):
            yield from _walk(value, f"{path}[{i}]", depth + 1)


def _count_properties(node: Any, depth: int = 0) -> int:
    if depth > 64 or not isinstance(node, Mapping):
        return 0
    n = 0
    props = node.get("properties")
    if isinstance(props, Mapping):
        n += len(props)
        n += sum(_count_properties(v, depth + 1) for v in props.values())
    for key in ("items", "additionalProperties"):
        n += _count_properties(node.get(key), depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(node.get(key), list):
            n += sum(_count_properties(v, depth + 1) for v in node[key])
    return n


def _bounded(segments: list[tuple[str, str, bool]]) -> tuple[list[tuple[str, str, bool]], list[Finding]]:
    """The segments cut to :data:`MAX_FIELD_CHARS` each and :data:`MAX_TOTAL_CHARS` together, and one
    strong ``oversized`` finding per cut (a definition that large is held for review anyway)."""
    out: list[tuple[str, str, bool]] = []
    cut: list[Finding] = []
    total = 0
    for path, text, in_key in segments:
        if text == _TOO_DEEP:
            if any(f.rule == "scan_depth" for f in cut):
                continue  # one finding names the first place it stopped
            cut.append(Finding(FindingKind.OVERSIZED, path, f"nested deeper than {MAX_DEPTH} levels; what lies "
                               "below was not scanned", 0, 0, True, "scan_depth", in_key))
            continue
        if total >= MAX_TOTAL_CHARS:
            cut.append(Finding(FindingKind.OVERSIZED, path, f"definition text over {MAX_TOTAL_CHARS} characters; "
                               "this field and the rest were not scanned", 0, len(text), True, "scan_budget", in_key))
            break
        if len(text) > MAX_FIELD_CHARS:
            cut.append(Finding(FindingKind.OVERSIZED, path, f"{len(text)} characters; only the first "
                               f"{MAX_FIELD_CHARS} were scanned", MAX_FIELD_CHARS, len(text), True, "scan_budget",
                               in_key))
            text = text[:MAX_FIELD_CHARS]
        total += len(text)
        out.append((path, text, in_key))
    return out, cut


def _on_topic_paths_weak(findings: list[Finding], segments: list[tuple[str, str, bool]]) -> list[Finding]:
    """``findings`` with each credential-path finding in a text made weak when the tool's name or
    property names say the credential is the tool's own business
    (:data:`registry.safety.scan_lexicon.SECRET_TOPICS`): an SSH tool naming ``~/.ssh/id_rsa`` is held
    only if an instruction or exfiltration pairs with it. A name that itself carries a credential path
    (``content_from_reading_ssh_id_rsa``) is no topic and stays strong."""
    named_paths = {f.path for f in findings if f.in_key and f.rule in _PATH_RULES}
    topics = lexicon.credential_topics(text for path, text, in_key in segments if in_key and path not in named_paths)
    if not topics:
        return findings
    return [replace(f, strong=False) if f.rule in _PATH_RULES and not f.in_key and any(p.search(f.span) for p in topics)
            else f for f in findings]


_PATH_RULES = frozenset({"secret_path", "secret_file"})


def scan_definition(tool: Mapping[str, Any] | ToolDefinition | ToolRecord) -> ScanResult:
    """Scan one tool definition (module docstring: fields, kinds, verdict).

    ``tool`` is a ``tools/list`` entry dict, a :class:`~registry.tool.ToolDefinition` or a
    :class:`~registry.tool.ToolRecord`. Unknown or non-string fields are skipped, never an error.
    """
    doc = tool_document(tool)
    segments: list[tuple[str, str, bool]] = []
    name = doc.get("name")
    if isinstance(name, str) and name:
        segments.append(("name", name, True))
    for field in ("title", "description"):
        if isinstance(doc.get(field), str) and doc[field]:
            segments.append((field, doc[field], False))
    for field in ("inputSchema", "outputSchema", "annotations"):
        segments.extend(seg for seg in _walk(doc.get(field), field) if seg[1])
    segments, cut = _bounded(segments)
    order = {seg[0]: i for i, seg in enumerate(segments)}
    findings = sorted(_all_findings(segments), key=lambda f: (order.get(f.path, 0), f.in_key is False, f.start))
    findings = _on_topic_paths_weak(findings, segments)
    findings += cut
    description = doc.get("description")
    if isinstance(description, str):
        budget = DESCRIPTION_BUDGET_CHARS + DESCRIPTION_CHARS_PER_PROPERTY * _count_properties(doc.get("inputSchema"))
        if len(description) > budget:
            findings.append(Finding(FindingKind.OVERSIZED, "description",
                                    f"{len(description)} characters (budget {budget})", 0, len(description),
                                    len(description) > 3 * budget, "description_budget"))
    if len(findings) > MAX_FINDINGS:  # keep every strong finding first, then the earliest weak ones
        keep = set(map(id, sorted(findings, key=lambda f: not f.strong)[:MAX_FINDINGS]))
        findings = [f for f in findings if id(f) in keep]
    return ScanResult(tuple(findings))
