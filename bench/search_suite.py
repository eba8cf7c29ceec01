"""Run bench/search_eval.py over every set in shared/eval-data, alone and pooled, and padded.

    python bench/search_suite.py [--eval-dir ../shared/eval-data] [--fastmcp-python PATH|none]
                                 [--quick] [--only NAME ...] [--no-expansion]

Sets: ToolLens test, LiveMCPBench, MetaTool single, MetaTool multi, each over its own tools and
over all 3,379 real tools pooled (ToolLens + G3 corpus + LiveMCPBench + MetaTool + Docker MCP
registry, deduplicated on (server, name)); then ToolLens test queries over the pool padded to
1k / 10k / 100k tools (latency, memory and update time only). Each set runs in its own process.
Prints one markdown table (ours / baseline / FastMCP) and, as the last line, all results as JSON.
``--quick`` evaluates at most 1,000 queries per set (spaced evenly) for a fast look.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_EVAL = HERE.parent.parent / "shared" / "eval-data"


def sets(e: Path) -> list[dict]:
    tl = e / "toollens/normalized"
    lm = e / "livemcpbench/normalized"
    mt = e / "metatool/normalized"
    pool = [
        tl / "tools.jsonl",
        tl / "toolbench_g3_corpus_tools.jsonl",
        lm / "tools.jsonl",
        mt / "tools.jsonl",
        e / "docker-mcp-registry/normalized/tools.jsonl",
    ]
    q = {
        "ToolLens test": (tl / "queries_test.jsonl", tl / "qrels_test.tsv", [tl / "tools.jsonl"]),
        "LiveMCPBench": (lm / "queries.jsonl", lm / "qrels.tsv", [lm / "tools.jsonl"]),
        "MetaTool single": (mt / "queries_single.jsonl", mt / "qrels_single.tsv", [mt / "tools.jsonl"]),
        "MetaTool multi": (mt / "queries_multi.jsonl", mt / "qrels_multi.tsv", [mt / "tools.jsonl"]),
    }
    out = []
    for name, (queries, qrels, tools) in q.items():
        out.append({"name": name, "tools": tools, "queries": queries, "qrels": qrels})
        out.append({"name": f"{name} (pooled)", "tools": pool, "queries": queries, "qrels": qrels})
    for n, maxq in ((1_000, 500), (10_000, 300), (100_000, 100)):
        out.append(
            {
                "name": f"padded {n // 1000}k",
                "tools": pool,
                "queries": tl / "queries_test.jsonl",
                "qrels": tl / "qrels_test.tsv",
                "pad": n,
                "max_queries": maxq,
            }
        )
    return out


def run_one(spec: dict, fastmcp_python: str, quick: bool, no_expansion: bool = False) -> dict:
    cmd = [sys.executable, str(HERE / "search_eval.py"), "--tools", *map(str, spec["tools"])]
    cmd += ["--queries", str(spec["queries"]), "--qrels", str(spec["qrels"]), "--label", spec["name"]]
    cmd += ["--fastmcp-python", fastmcp_python]
    if spec.get("pad"):
        cmd += ["--pad", str(spec["pad"])]
    if no_expansion:
        cmd += ["--no-expansion"]
    maxq = spec.get("max_queries", 0)
    if quick:
        maxq = min(maxq or 1000, 1000)
    if maxq:
        cmd += ["--max-queries", str(maxq)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    sys.stderr.write(proc.stdout + proc.stderr[-2000:])
    sys.stderr.write(f"({spec['name']}: {time.perf_counter() - t0:.0f} s)\n\n")
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:] or ["failed"]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL)
    ap.add_argument("--fastmcp-python", default="/tmp/fastmcp-venv/bin/python")
    ap.add_argument("--quick", action="store_true", help="at most 1,000 queries per set")
    ap.add_argument("--no-expansion", action="store_true", help="ours without query expansion")
    ap.add_argument("--only", nargs="*", help="run only sets whose name contains one of these words")
    args = ap.parse_args(argv)

    results: dict[str, dict] = {}
    for spec in sets(args.eval_dir):
        if args.only and not any(w.lower() in spec["name"].lower() for w in args.only):
            continue
        results[spec["name"]] = run_one(spec, args.fastmcp_python, args.quick, args.no_expansion)

    print("| set | tools | queries | system | R@1 | R@5 | R@10 | NDCG@10 | p50 ms | p95 ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, res in results.items():
        if "error" in res:
            print(f"| {name} | | | error: {res['error']} | | | | | | |")
            continue
        meta = res["meta"]
        for system in ("ours", "baseline", "fastmcp"):
            m = res.get(system)
            if m:
                print(
                    f"| {name} | {meta['tools']} | {meta['queries']} | {system} | {m['r@1']:.2f} | {m['r@5']:.2f} | "
                    f"{m['r@10']:.2f} | {m['ndcg@10']:.2f} | {m['p50_ms']:.3f} | {m['p95_ms']:.3f} |"
                )
    print()
    print("| set | ΔR@5 vs baseline | ΔNDCG@10 | ΔR@5 vs FastMCP | p50 speed-up vs baseline | index MiB | "
          "connect / list_changed / disconnect 500 tools (ms) |")
    print("|---|---|---|---|---|---|---|")
    for name, res in results.items():
        if "error" in res:
            continue
        o, b, f = res["ours"], res["baseline"], res.get("fastmcp")
        dfm = f"{o['r@5'] - f['r@5']:+.2f}" if f else "n/a"
        print(
            f"| {name} | {o['r@5'] - b['r@5']:+.2f} | {o['ndcg@10'] - b['ndcg@10']:+.2f} | {dfm} | "
            f"{res['meta']['p50_speedup_vs_baseline']:.1f}x | {o['index_mib']:.1f} | "
            f"{o['connect_ms']:.0f} / {o['list_changed_ms']:.0f} / {o['disconnect_ms']:.0f} |"
        )
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
