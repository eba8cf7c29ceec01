"""A tool's searchable document: weighted fields of its definition, as BM25 tokens.

Fields (source: the MCP ``Tool`` object and toolhost's record):

* ``name``: the tool's original name and its title, identifier-split (``get_weather_forecast``,
  ``getWeatherForecast`` → get weather forecast);
* ``server``: the server name (the part before ``__`` in the qualified name);
* ``description``: the tool description;
* ``param_names`` / ``param_descriptions``: top-level and nested property names of the input
  schema and their descriptions;
* ``enums``: enum and const values of the input schema.

Weights are BM25F-style repetitions of a field's tokens (BM25 stays rank-bm25's: a field of
weight 2 simply counts twice in term frequency and document length). Defaults come from the grid
search in ``bench/search_tune.py`` on dev data only (ToolLens train queries and a fixed 20 % dev
slice of MetaTool single queries).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from registry.search.tokenize import tokenize
from registry.tool import ToolRecord

__all__ = ["FieldWeights", "document_tokens", "schema_texts"]

_MAX_SCHEMA_DEPTH = 4
_MAX_SCHEMA_NODES = 200


@dataclass(frozen=True)
class FieldWeights:
    """Integer repetition count per field (0 drops the field)."""

    name: int = 1
    server: int = 1
    description: int = 1
    param_names: int = 1
    param_descriptions: int = 1
    enums: int = 1


def schema_texts(schema: Any) -> tuple[list[str], list[str], list[str]]:
    """``(property names, property descriptions, enum values)`` of a JSON Schema, depth-first.

    Walks ``properties``, ``items``, ``anyOf``/``oneOf``/``allOf`` and ``$defs`` up to a fixed
    depth and node count, so hostile or huge schemas cost bounded time.
    """
    names: list[str] = []
    descs: list[str] = []
    enums: list[str] = []
    budget = [_MAX_SCHEMA_NODES]

    def walk(node: Any, depth: int) -> None:
        if not isinstance(node, dict) or depth > _MAX_SCHEMA_DEPTH or budget[0] <= 0:
            return
        budget[0] -= 1
        for value in _enum_values(node):
            enums.append(value)
        props = node.get("properties")
        if isinstance(props, dict):
            for pname, sub in props.items():
                names.append(str(pname))
                if isinstance(sub, dict):
                    d = sub.get("description") or sub.get("title")
                    if isinstance(d, str) and d:
                        descs.append(d)
                walk(sub, depth + 1)
        items = node.get("items")
        if isinstance(items, dict):
            walk(items, depth + 1)
        for key in ("anyOf", "oneOf", "allOf"):
            branches = node.get(key)
            if isinstance(branches, list):
                for br in branches:
                    walk(br, depth + 1)
        defs = node.get("$defs")
        if depth == 0 and isinstance(defs, dict):
            for sub in defs.values():
                walk(sub, depth + 1)

    walk(schema, 0)
    return names, descs, enums


def _enum_values(node: dict[str, Any]) -> Iterator[str]:
    enum = node.get("enum")
    if isinstance(enum, list):
        for v in enum[:50]:
            if isinstance(v, str):
                yield v
    const = node.get("const")
    if isinstance(const, str):
        yield const


def document_tokens(
    record: ToolRecord,
    weights: FieldWeights = FieldWeights(),
    tokenizer: Callable[[str], list[str]] = tokenize,
) -> list[str]:
    """The token list BM25 indexes for ``record`` (fields repeated by their weights)."""
    names, descs, enums = schema_texts(record.input_schema)
    title = record.title or record.annotations.title or ""
    fields: list[tuple[int, str]] = [
        (weights.name, f"{record.original_name} {title}"),
        (weights.server, record.server),
        (weights.description, record.description),
        (weights.param_names, " ".join(names)),
        (weights.param_descriptions, "\n".join(descs)),
        (weights.enums, " ".join(enums)),
    ]
    out: list[str] = []
    for weight, text in fields:
        if weight <= 0 or not text:
            continue
        toks = tokenizer(text)
        for _ in range(weight):
            out.extend(toks)
    return out
