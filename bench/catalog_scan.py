"""Prompts/resources under the definition scanner: false holds on real texts, cost of a listing.

    .venv/bin/python bench/catalog_scan.py [--eval-dir ../shared/eval-data] [--rounds 5]

Data: every real tool of the eval corpus (3,379, as ``bench/definition_scan.py``) recast as the
catalog items a server would list — a prompt (the tool's name and description, each input property
as an argument with its description) and a resource (name and description) — plus the poisoned
peer's items (``tests/peers/poisoned_server.py``: the red team's ``<IMPORTANT>…`` text as a
description, an argument description, and a template description).

Prints one table: how many real items are held (false holds) and poisoned ones held (recall), and
the cost of screening one listing of all real prompts (:func:`registry.catalog_scan.screen_catalog`)
cold (every scan runs: first listing, changed items) against warm (the re-list of unchanged items:
scans remembered by document text), CPU µs per item, median of ``--rounds`` alternating rounds,
with the ratio. The machine's load average is printed first.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from definition_scan import REAL_FILES
from search_data import EVAL_DIR, dedupe_tools, load_tools

from registry.catalog_scan import _scan, screen_catalog
from tests.peers.poisoned_server import INJECTION


def _items(eval_dir: Path) -> tuple[list[dict], list[dict]]:
    tools = dedupe_tools(t for f in REAL_FILES for t in load_tools(eval_dir / f))
    prompts, resources = [], []
    for i, t in enumerate(tools):
        props = (t.input_schema or {}).get("properties") or {}
        args = [{"name": str(k), "description": str(v.get("description") or "") if isinstance(v, dict) else ""}
                for k, v in props.items()]
        prompts.append({"name": f"{t.name}_{i}", "description": t.description, "arguments": args})
        resources.append({"uri": f"memo://{i}", "name": t.name, "description": t.description})
    return prompts, resources


def _cpu_us_per_item(prompts: list[dict], *, cold: bool) -> float:
    if cold:
        _scan.cache_clear()
    else:
        screen_catalog("bench", prompts=prompts)  # fill the cache
    start = time.process_time()
    screen_catalog("bench", prompts=prompts)
    return (time.process_time() - start) / len(prompts) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--eval-dir", type=Path, default=EVAL_DIR)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    prompts, resources = _items(args.eval_dir)
    real = screen_catalog("real", prompts=prompts, resources=resources)
    poisoned = screen_catalog("evil", prompts=[{"name": "summarize", "description": INJECTION},
                                               {"name": "review", "arguments": [{"name": "code",
                                                                                 "description": INJECTION}]}],
                              resources=[{"uri": "page://news", "name": "news", "description": INJECTION}],
                              templates=[{"uriTemplate": "page://{slug}", "name": "pages", "description": INJECTION}])
    held_p = sum(h.kind == "prompt" for h in real.held)
    held_r = sum(h.kind == "resource" for h in real.held)
    cold, warm = [], []
    for _ in range(args.rounds):  # alternating rounds
        cold.append(_cpu_us_per_item(prompts, cold=True))
        warm.append(_cpu_us_per_item(prompts, cold=False))
    c, w = statistics.median(cold), statistics.median(warm)
    rows = [
        ("real tools as prompts held (false holds)", f"{held_p}/{len(prompts)} ({held_p / len(prompts):.2%})"),
        ("real tools as resources held (false holds)", f"{held_r}/{len(resources)} ({held_r / len(resources):.2%})"),
        ("poisoned peer items held (recall)", f"{len(poisoned.held)}/4"),
        ("listing screen, cold (µs CPU / prompt)", f"{c:.0f}"),
        ("listing screen, warm re-list (µs CPU / prompt)", f"{w:.1f}"),
        ("cold / warm", f"{c / w:.0f}x"),
    ]
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    for h in real.held[:10]:
        print(f"  held: {h.kind} {h.original[:40]!r}: {h.findings(2)[:160]}")


if __name__ == "__main__":
    main()
