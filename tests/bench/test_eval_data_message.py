"""The search benchmarks say which eval data they need and where it goes, instead of failing with
a ``FileNotFoundError`` deep in a loader (the data are not part of the repo)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.parametrize(("script", "args"), [
    ("search_suite.py", ["--eval-dir", "{missing}"]),
    ("search_tune.py", ["--eval-dir", "{missing}"]),
    ("search_latency.py", []),
    ("search_memory_tune.py", []),
])
def test_a_search_benchmark_without_its_data_names_what_is_missing_and_where_it_goes(script, args, tmp_path):
    missing = tmp_path / "no-eval-data"
    out = subprocess.run([sys.executable, str(BENCH / script), *(a.format(missing=missing) for a in args)],
                         capture_output=True, text=True, timeout=120, check=False,
                         env={**os.environ, "TOOLHOST_EVAL_DATA": str(missing)})
    assert out.returncode == 2, out.stderr
    assert out.stderr == (
        f"{script}: needs the tool-search eval data, which is not part of the repo; missing under {missing}: "
        "toollens/normalized, livemcpbench/normalized, metatool/normalized, docker-mcp-registry/normalized.\n"
        "Put the eval-data folder (sub-folders toollens, livemcpbench, metatool and docker-mcp-registry, each "
        "with normalized/tools.jsonl, queries*.jsonl and qrels*.tsv; format in bench/search_data.py) at "
        "../shared/eval-data next to this checkout, or pass --eval-dir DIR (where the script has it) or set "
        "TOOLHOST_EVAL_DATA=DIR.\n")
