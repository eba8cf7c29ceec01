"""Eval-data loading, conversion to tool records, padding and retrieval metrics for bench/search_*.py.

Input format: ``shared/eval-data/*/normalized`` (see its README): tools JSONL ``{id, name, server,
description, input_schema}``, queries JSONL ``{id, text}``, qrels TSV ``query_id tool_id score``.
Nothing here writes files.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from registry.naming import assign_qualified_names, sanitize_prefix
from registry.tool import ToolDefinition, ToolRecord, build_record

REPO_ROOT = Path(__file__).resolve().parent.parent
EVAL_DIR = Path(os.environ.get("TOOLHOST_EVAL_DATA") or REPO_ROOT.parent / "shared" / "eval-data")
"""Where the search benchmarks read the eval data: ``$TOOLHOST_EVAL_DATA``, else ``../shared/eval-data``
next to the checkout. The data are not in the repo (public sets with their own licences)."""
EVAL_SETS = ("toollens", "livemcpbench", "metatool", "docker-mcp-registry")
"""The sets every search benchmark reads (each a folder with ``normalized/``)."""


def require_eval_data(root: Path | str | None = None) -> Path:
    """``root`` (default :data:`EVAL_DIR`) when it holds every set of :data:`EVAL_SETS`.

    Raises:
        SystemExit: with a message naming what is missing, where it goes and how to point
            elsewhere (exit status 2), instead of a ``FileNotFoundError`` deep in a loader.
    """
    path = Path(root) if root is not None else EVAL_DIR
    missing = [s for s in EVAL_SETS if not (path / s / "normalized").is_dir()]
    if not missing:
        return path
    script = Path(sys.argv[0]).name or "this benchmark"
    sys.stderr.write(
        f"{script}: needs the tool-search eval data, which is not part of the repo; missing under {path}: "
        + ", ".join(f"{s}/normalized" for s in missing) + ".\n"
        "Put the eval-data folder (sub-folders toollens, livemcpbench, metatool and docker-mcp-registry, each "
        "with normalized/tools.jsonl, queries*.jsonl and qrels*.tsv; format in bench/search_data.py) at "
        "../shared/eval-data next to this checkout, or pass --eval-dir DIR (where the script has it) or set "
        "TOOLHOST_EVAL_DATA=DIR.\n")
    raise SystemExit(2)


@dataclass
class EvalTool:
    id: str
    name: str
    server: str | None
    description: str
    input_schema: dict[str, Any] | None


def load_tools(path: Path | str) -> list[EvalTool]:
    """Tools of one JSONL file, in file order."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                d = json.loads(line)
                out.append(
                    EvalTool(
                        id=str(d["id"]),
                        name=str(d.get("name") or d["id"]),
                        server=d.get("server"),
                        description=d.get("description") or "",
                        input_schema=d.get("input_schema"),
                    )
                )
    return out


def dedupe_tools(tools: Iterable[EvalTool]) -> list[EvalTool]:
    """First tool per (server, name), as the README's pooled 3,379-tool corpus."""
    seen: set[tuple[str | None, str]] = set()
    out = []
    for t in tools:
        key = (t.server, t.name)
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def pool_tools(e: Path) -> list[EvalTool]:
    """All 3,379 real tools of the eval data under ``e`` pooled (ToolLens + G3 corpus +
    LiveMCPBench + MetaTool + Docker MCP registry, deduplicated on (server, name))."""
    tl = e / "toollens/normalized"
    return dedupe_tools(
        load_tools(tl / "tools.jsonl")
        + load_tools(tl / "toolbench_g3_corpus_tools.jsonl")
        + load_tools(e / "livemcpbench/normalized/tools.jsonl")
        + load_tools(e / "metatool/normalized/tools.jsonl")
        + load_tools(e / "docker-mcp-registry/normalized/tools.jsonl")
    )


def load_queries(path: Path | str) -> list[tuple[str, str]]:
    """``[(query id, text)]`` in file order."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                d = json.loads(line)
                out.append((str(d["id"]), str(d["text"])))
    return out


def load_qrels(path: Path | str) -> dict[str, set[str]]:
    """``{query id: {gold tool id}}``."""
    out: dict[str, set[str]] = defaultdict(set)
    with open(path, encoding="utf-8") as fh:
        next(fh, None)
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 2 and (len(parts) < 3 or float(parts[2]) > 0):
                out[parts[0]].add(parts[1])
    return dict(out)


def template_half(gold: set[str]) -> int:
    """0 or 1: the half of ToolLens's query templates a query belongs to, from a hash of its gold
    tool set (a ToolLens scene, whose queries share one template, is identified by its gold set).
    Memory from one half and test queries from the other share no template (the cross-template
    protocol of ``search_suite.py``, ``search_memory_tune.py`` and ``search_memory_vote.py``)."""
    return int(hashlib.sha256(",".join(sorted(gold)).encode()).hexdigest(), 16) % 2


def metatool_slice(query_id: str) -> int:
    """0..4: the MetaTool slice of a query, ``sha256(query id) % 5``. Slice 0 is dev
    (``search_tune.py``), 1 and 2 train the reranker (``search_rerank.py``), 3 and 4 are test."""
    return int(hashlib.sha256(query_id.encode()).hexdigest(), 16) % 5


def to_records(tools: Sequence[EvalTool]) -> tuple[list[ToolRecord], dict[str, str]]:
    """ToolRecords for eval tools, and ``{qualified name: eval tool id}``.

    A tool without a server (MetaTool's plugins) is its own server, named after the tool.
    """
    by_server: dict[str, list[EvalTool]] = defaultdict(list)
    for t in tools:
        by_server[t.server or t.name].append(t)
    records: list[ToolRecord] = []
    qname_to_id: dict[str, str] = {}
    used_prefixes: dict[str, str] = {}
    for server, group in by_server.items():
        prefix = _unique_prefix(server, used_prefixes)
        names = assign_qualified_names(prefix, [t.name for t in group], server=server)
        for t in group:
            schema = t.input_schema if isinstance(t.input_schema, dict) else {"type": "object", "properties": {}}
            rec = build_record(
                server=server,
                qualified_name=names[t.name],
                definition=ToolDefinition(name=t.name, description=t.description, input_schema=schema),
            )
            if rec.qualified_name in qname_to_id:
                continue  # duplicate (server, name) inside one file
            records.append(rec)
            qname_to_id[rec.qualified_name] = t.id
    return records, qname_to_id


def _unique_prefix(server: str, used: dict[str, str]) -> str:
    try:
        base = sanitize_prefix(server)
    except Exception:  # noqa: BLE001 - a server name with nothing usable in it gets the fallback prefix
        base = "s"
    prefix, i = base, 1
    while prefix in used and used[prefix] != server:
        i += 1
        prefix = f"{base[:20]}-{i}"
    used[prefix] = server
    return prefix


_SYN_WORDS = "alpha beta gamma delta omega nova prime lite pro plus core hub cloud edge open".split()


def pad_tools(tools: Sequence[EvalTool], n: int, seed: int = 7) -> list[EvalTool]:
    """``tools`` plus synthetic variants up to ``n`` tools (for latency and memory only); the
    first ``n`` of ``tools`` when there are at least ``n``.

    A variant copies a real tool under a new server (``<server>-<word><i>``) with one extra
    made-up word in its description, so posting lists grow like a real catalog's and the
    vocabulary grows a little too.
    """
    out = list(tools)
    rng = random.Random(seed)
    i = 0
    while len(out) < n:
        t = tools[i % len(tools)]
        k = i // len(tools) + 1
        word = rng.choice(_SYN_WORDS)
        out.append(
            EvalTool(
                id=f"pad{i}::{t.id}",
                name=t.name,
                server=f"{t.server or t.name}-{word}{k}",
                description=f"{t.description} ({word}{k % 97} edition)",
                input_schema=t.input_schema,
            )
        )
        i += 1
    return out[:n]


# -- metrics -------------------------------------------------------------------------------
def recall_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    return len(gold.intersection(ranked[:k])) / len(gold)


def ndcg_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, t in enumerate(ranked[:k]) if t in gold)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal else 0.0


def percentile(values: Sequence[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    idx = min(len(s) - 1, max(0, math.ceil(p / 100 * len(s)) - 1))
    return s[idx]


def summarize(rankings: dict[str, list[str]], qrels: dict[str, set[str]], latencies_ms: Sequence[float]) -> dict:
    """R@1/5/10 and NDCG@10 (percent) over queries with gold, plus p50/p95 latency (ms)."""
    qs = [q for q in rankings if qrels.get(q)]
    n = len(qs) or 1

    def avg(fn) -> float:
        return 100.0 * sum(fn(rankings[q], qrels[q]) for q in qs) / n

    return {
        "n_queries": len(qs),
        "r@1": avg(lambda r, g: recall_at(r, g, 1)),
        "r@5": avg(lambda r, g: recall_at(r, g, 5)),
        "r@10": avg(lambda r, g: recall_at(r, g, 10)),
        "ndcg@10": avg(lambda r, g: ndcg_at(r, g, 10)),
        "p50_ms": percentile(latencies_ms, 50),
        "p95_ms": percentile(latencies_ms, 95),
    }


# -- the plain baseline's text (README "BM25 reference numbers") ---------------------------
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_BASE_TOKEN = re.compile(r"[a-z0-9]+")


def baseline_tokenize(text: str) -> list[str]:
    """Lowercase ``[a-z0-9]+`` after splitting camelCase (the README's reference tokenizer)."""
    return _BASE_TOKEN.findall(_CAMEL.sub(r"\1 \2", text).lower())


def baseline_text(t: EvalTool) -> str:
    """name + server + description + parameter names + parameter descriptions."""
    parts = [t.name, t.server or "", t.description]
    props = (t.input_schema or {}).get("properties") if isinstance(t.input_schema, dict) else None
    if isinstance(props, dict):
        for pname, sub in props.items():
            parts.append(str(pname))
            if isinstance(sub, dict) and isinstance(sub.get("description"), str):
                parts.append(sub["description"])
    return " ".join(parts)
