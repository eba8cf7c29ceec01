"""Child process of test_perm_regex: hostile ``regex:`` patterns under an address-space cap.

Prints one JSON line: ``{"results": [[pattern, message], ...], "peak_rss_mb": float,
"cap_mb": int}``. Run as ``python regex_under_cap.py CAP_MB``: the cap is added to the memory the
process already maps after imports, so a pattern that compiles to more dies with MemoryError
(exit 1) instead of taking the machine down.
"""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path

from registry import ToolDefinition, build_record
from registry.safe_regex import RegexSyntaxError, compile_pattern
from registry.search import SearchIndex

HOSTILE = [
    "((a{1000}){1000}){1000}",  # the 20 GB pattern kind: nested counted repetition
    "(?:a{1000}){1000}",
    "(?:x{99999}){99999}",
    "(?:a{1,}){4294967294}",
    "a{65535}b{65535}c{65535}",
    "(?:(?:(?:(?:a{10}){10}){10}){10}){10}",
    "(?:[\\w\\W]{100}){100}",
    "(?:foo){e<=3}",
    "(" * 40 + "a" + ")" * 40,
    "(?:(a|aa)+)+$",
    "(\\w|\\w)+!",
]

AT_CAP = [  # accepted: the most expensive patterns the limits let through (search, then library default)
    "(?:[\\w\\W]{99}){100}",
    "(?:a{99}|b{99}){50}",
    "(?:[\\w\\W]{140}){140}",
    "a{20000}",
]


def _peak_rss_mb() -> float:
    """This process's own peak resident set (``VmHWM``, MiB). Not ``ru_maxrss``: Linux carries the
    parent's high-water mark across fork + exec, so a child of a big pytest process would report it."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _vm_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")


def main() -> None:
    cap_mb = int(sys.argv[1])
    index = SearchIndex()
    tools = [
        build_record(server="s", qualified_name=f"s__tool_{i}",
                     definition=ToolDefinition(name=f"tool_{i}", description="a" * 40 + " aaaa " * 20))
        for i in range(50)
    ]
    index.replace_server("s", tools)
    index.search("regex:warm", limit=1)
    limit = _vm_bytes() + cap_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    results = []
    for pattern in HOSTILE:
        results.append([pattern, index.search("regex:" + pattern, limit=5).message])
        try:  # the library default limits (schema patterns of upstream servers)
            compile_pattern(pattern)
            results.append([pattern, "compiled"])
        except RegexSyntaxError as exc:
            results.append([pattern, str(exc)])
    for pattern in AT_CAP:
        results.append([pattern, index.search("regex:" + pattern, limit=5).message])
        try:
            compile_pattern(pattern, ignore_case=True).search("x" * 100, timeout=0.25)
            results.append([pattern, "compiled"])
        except (RegexSyntaxError, TimeoutError) as exc:
            results.append([pattern, str(exc)])
    peak = _peak_rss_mb()
    print(json.dumps({"results": results, "peak_rss_mb": round(peak, 1), "cap_mb": cap_mb}))


if __name__ == "__main__":
    main()
