"""Poisoned-definition scanner: recall on the poisoned fixtures, false positives on real tools, cost.

    .venv/bin/python bench/definition_scan.py [--eval-dir ../shared/eval-data] [--show-fp 20] [--rounds 5]

Data:
* poisoned: ``tests/registry/fixtures/poisoned_tools.json`` (in the repo; each case cites its
  public source; ``split`` tune / holdout);
* real: every tool of ``<eval-dir>/*/normalized/*tools*.jsonl`` deduplicated on (server, name)
  (3,379 tools; see that folder's README). The eval data is not part of the repo: put the shared
  ``eval-data`` folder next to the checkout (``../shared/eval-data``) or pass ``--eval-dir``.
  Rules were tuned looking at the even-numbered real tools (``tune``) and the fixtures' tune
  split; the table reports every part separately and all together;
* spent v2-v4: ``tests/registry/fixtures/poisoned_holdout_v{2,3,4}.json``, 40 poisoned and 40
  tricky benign definitions each, written by colleagues who never read the scanner (each case cites
  its source). Each was measured blind once (v2 35/40, v3 22/40, v4 22/40 by the rules of the day)
  and then tuned and trained on, so they are reported as one *spent* set, not as a test;
* blind v5, v6: ``tests/registry/fixtures/poisoned_holdout_v{5,6}.json``, 60 poisoned and 60 tricky
  benign definitions each (v6: 26 of its attacks in 15 languages other than English, 33 placed outside
  the top-level description), written by two colleagues who never read the scanner or the earlier sets.
  Each was measured once, blind, after the rules and the probe of that day were committed (rules
  39/60 and 36/60, rules + learned 43/60 and 46/60; honest held 3/60 and 11/60 with the probe): the
  only unseen figures for the scanner as shipped. From then on they are spent like v2-v4;
* synthetic: ``bench/definition_scan_synth.py`` (9 attack moves × 18 languages × 5 placements, and
  honest covers in the same languages). The rules were written without looking at its output; the
  probe is trained on all of it, so its ``+learn`` column there is in-sample: the honest figure for
  unseen languages is ``bench/definition_scan_train.py --synthetic-split`` (a probe trained without
  the held-out languages);
* false positives by half (even: tuned on; odd: the report) and by source (the shippable corpora
  the probe trains on, ToolLens, which it never trains on).

``--learned`` adds a ``+learn`` column (rules + the learned probe, :mod:`host.safety`; needs the
dense model), the cost per tool with embedding, and the discovery cost of 300 new tools.

Prints one table: recall per split, false-positive rate per part, and the scan cost per tool
(µs: CPU time and wall time, median of ``--rounds`` alternating rounds over all tools, one thread;
CPU p50/p99/max of single real tools). The machine's load average is printed first: on a shared machine the wall
times grow with it, the CPU times much less.

``--baseline-tree PATH`` (another checkout, e.g. ``/work/main``) adds a same-run A/B of the scan
cost: alternating child processes, one importing the scanner from PATH and one from this tree, each
scanning every real tool once per round (CPU µs per tool, median of ``--rounds``), with the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from definition_scan_synth import HELD_OUT_LANGUAGES, LANGUAGES, synth_tools
from search_data import EVAL_DIR, dedupe_tools, load_tools

if TYPE_CHECKING:
    from host.safety import EmbeddingScorer

from registry.safety import definition_hold, definition_units
from registry.safety.definition_scan import scan_definition

FIXTURE_DIR = Path(__file__).resolve().parent.parent / "tests" / "registry" / "fixtures"
FIXTURES = FIXTURE_DIR / "poisoned_tools.json"
BLIND_SETS = {"v2": FIXTURE_DIR / "poisoned_holdout_v2.json", "v3": FIXTURE_DIR / "poisoned_holdout_v3.json",
              "v4": FIXTURE_DIR / "poisoned_holdout_v4.json"}
FRESH_SETS = {"blind v5": FIXTURE_DIR / "poisoned_holdout_v5.json",
              "blind v6": FIXTURE_DIR / "poisoned_holdout_v6.json"}
"""The spent blind sets: each was measured blind once, then tuned and trained on (a set, not a test)."""
REAL_FILES = (
    "toollens/normalized/tools.jsonl",
    "toollens/normalized/toolbench_g3_corpus_tools.jsonl",
    "livemcpbench/normalized/tools.jsonl",
    "metatool/normalized/tools.jsonl",
    "docker-mcp-registry/normalized/tools.jsonl",
)


def real_tools(eval_dir: Path) -> list[dict]:
    """The deduplicated real tools as ``tools/list``-shaped dicts (``id`` kept for the report)."""
    missing = [f for f in REAL_FILES if not (eval_dir / f).exists()]
    if missing:
        raise SystemExit(f"eval data not found under {eval_dir} (missing {missing[0]}); pass --eval-dir")
    tools = dedupe_tools(t for f in REAL_FILES for t in load_tools(eval_dir / f))
    return [{"id": t.id, "name": t.name, "description": t.description,
             "inputSchema": t.input_schema or {"type": "object", "properties": {}}} for t in tools]


_COST_CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from registry.safety.definition_scan import scan_definition
docs = json.load(sys.stdin)
for d in docs[:50]:
    scan_definition(d)  # warm-up: regex compilation, caches
c0 = time.process_time()
for d in docs:
    scan_definition(d)
print((time.process_time() - c0) / len(docs) * 1e6)
"""


def ab_cost(trees: dict[str, Path], docs: list[dict], rounds: int) -> dict[str, float]:
    """CPU µs per tool of each tree's scanner (median over ``rounds`` alternating child processes)."""
    payload = json.dumps(docs)
    times: dict[str, list[float]] = {name: [] for name in trees}
    for r in range(rounds):
        order = list(trees.items()) if r % 2 == 0 else list(trees.items())[::-1]
        for name, tree in order:
            out = subprocess.run([sys.executable, "-c", _COST_CHILD, str(tree)], input=payload, capture_output=True,
                                 text=True, check=True)
            times[name].append(float(out.stdout))
    return {name: statistics.median(v) for name, v in times.items()}


def print_learned_cost(real: list[dict], scorer: EmbeddingScorer) -> None:
    """Cost of rules + learned per real tool (embedding included, CPU and wall, one pass, the
    model loaded and warm) and the discovery of 300 new tools through the pin store's cache."""
    from host.store.pin_safety import PinSafety
    from registry.tool import ToolDefinition, build_record

    for d in real[:20]:
        definition_hold(d, scorer)  # warm-up
    t0, c0 = time.perf_counter(), time.process_time()
    for d in real:
        definition_hold(d, scorer)
    wall, cpu = (time.perf_counter() - t0) / len(real) * 1e6, (time.process_time() - c0) / len(real) * 1e6
    units = sum(len(definition_units(d)) for d in real) / len(real)
    print(f"{'rules+learned per tool, CPU (µs)':38} {cpu:21.1f}  ({units:.1f} text units per tool)")
    print(f"{'rules+learned per tool, wall (µs)':38} {wall:21.1f}")
    records = [build_record(server="bench", qualified_name=f"bench__t{i}", definition=ToolDefinition(
        name=d["name"], description=d.get("description") or "", input_schema=d["inputSchema"]))
        for i, d in enumerate(real[1::11][:300])]
    for label, safety in (("rules", PinSafety()), ("rules+learned", PinSafety(scorer=scorer))):
        t0 = time.perf_counter()
        for r in records:
            safety.suspicious(r)
        print(f"{'discovery, 300 new tools, ' + label + ' (ms)':38} {(time.perf_counter() - t0) * 1e3:21.1f}")
    print_loop_stall(records, scorer)


def print_loop_stall(records: list, scorer: EmbeddingScorer) -> None:
    """The longest event-loop stall while 300 new tools are scanned: scored inline (as the registry
    listener did) vs pre-scored in a worker thread (:meth:`PinSafety.prescore`, what the server
    manager does), and after a restart with the scores saved (:class:`host.safety.ScoreCache`)."""
    import tempfile

    import anyio

    from host.safety import ScoreCache
    from host.store.pin_safety import PinSafety

    async def stall(safety: PinSafety, prescore: bool) -> tuple[float, float]:
        worst, done = 0.0, anyio.Event()

        async def ticker() -> None:
            nonlocal worst
            last = time.perf_counter()
            while not done.is_set():
                await anyio.sleep(0.001)
                now = time.perf_counter()
                worst, last = max(worst, now - last), now

        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            await anyio.sleep(0.01)
            if prescore:
                await safety.prescore(records)
            for r in records:
                safety.suspicious(r)
            done.set()
        return worst * 1e3, (time.perf_counter() - t0) * 1e3

    probe_version = scorer.probe.version
    with tempfile.TemporaryDirectory() as folder:
        runs = (("inline on the loop", PinSafety(scorer=scorer), False),
                ("pre-scored in a thread", PinSafety(scorer=scorer, saved=ScoreCache(Path(folder), probe_version)),
                 True),
                ("restart, scores saved", PinSafety(scorer=scorer, saved=ScoreCache(Path(folder), probe_version)),
                 True))
        for label, safety, prescore in runs:
            worst, total = anyio.run(stall, safety, prescore)
            print(f"{'300 new tools, ' + label + ': loop stall / total (ms)':58} {worst:9.1f} / {total:9.1f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eval-dir", type=Path, default=EVAL_DIR)
    ap.add_argument("--show-fp", type=int, default=10, help="print up to N flagged real tools with reasons")
    ap.add_argument("--show-missed", action="store_true", help="print the poisoned cases not flagged")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--learned", action="store_true",
                    help="also the learned probe (host.safety): a rules+learned column, its cost with embedding, "
                         "and the discovery cost of 300 new tools")
    ap.add_argument("--baseline-tree", type=Path, default=None, metavar="PATH",
                    help="another checkout whose scanner is timed against this one (same run, alternating)")
    args = ap.parse_args(argv)

    cases = json.loads(FIXTURES.read_text(encoding="utf-8"))["cases"]
    real = real_tools(args.eval_dir)
    scorer = None
    if args.learned:
        from host.safety import load_definition_scorer  # lazy: loads the dense model

        scorer = load_definition_scorer(True)
        if scorer is None:
            raise SystemExit("--learned: the dense model is not available (see the log line above)")

    def held(tools: list[dict]) -> tuple[int, int]:
        """(held by the rules, held by rules + learned) among ``tools``."""
        if scorer is None:
            n = sum(scan_definition(t).suspicious for t in tools)
            return n, n
        both = [definition_hold(t, scorer) is not None for t in tools]
        rules_only = [scan_definition(t).suspicious for t in tools]
        return sum(rules_only), sum(both)

    rows = []
    for split in ("tune", "holdout", "fresh", "fresh2", None):
        part = [c["tool"] for c in cases if split is None or c["split"] == split]
        rows.append((f"recall, poisoned {split or 'all'}", *held(part), len(part)))
    blind = {name: json.loads(path.read_text(encoding="utf-8"))["cases"] for name, path in BLIND_SETS.items()}
    spent = [c for set_cases in blind.values() for c in set_cases]
    for what, poisoned in (("recall", True), ("flagged", False)):
        part = [c["tool"] for c in spent if c["poisoned"] is poisoned]
        rows.append((f"{what}, spent v2-v4 {'poisoned' if poisoned else 'benign'}", *held(part), len(part)))
    fresh = {name: json.loads(path.read_text(encoding="utf-8"))["cases"] for name, path in FRESH_SETS.items()}
    for set_name, set_cases in fresh.items():
        for what, poisoned in (("recall", True), ("flagged", False)):
            part = [c["tool"] for c in set_cases if c["poisoned"] is poisoned]
            rows.append((f"{what}, {set_name} {'poisoned' if poisoned else 'benign'}", *held(part), len(part)))
    synth = synth_tools()
    for lang_part, langs in (("held-out languages", HELD_OUT_LANGUAGES),
                             ("other languages", tuple(x for x in LANGUAGES if x not in HELD_OUT_LANGUAGES))):
        for what, poisoned in (("recall", True), ("flagged", False)):
            part = [s["tool"] for s in synth if s["poisoned"] is poisoned and s["lang"] in langs]
            rows.append((f"{what}, synthetic {lang_part} {'poisoned' if poisoned else 'honest'}", *held(part),
                         len(part)))
    flagged = [(i, t, scan_definition(t)) for i, t in enumerate(real)]
    flagged = [(i, t, r) for i, t, r in flagged if r.suspicious]
    learned_flags = ({i for i, t in enumerate(real) if definition_hold(t, scorer) is not None} if scorer is not None
                     else {i for i, _, _ in flagged})
    toollens = {i for i, t in enumerate(real) if t["id"].startswith(("tl_", "g3_"))}
    for name, keep in (("tune (even)", lambda i: i % 2 == 0), ("report (odd)", lambda i: i % 2 == 1),
                       ("shippable corpora", lambda i: i not in toollens), ("ToolLens", lambda i: i in toollens),
                       ("all", lambda i: True)):
        n = sum(1 for i in range(len(real)) if keep(i))
        fp = sum(1 for i, _, _ in flagged if keep(i))
        rows.append((f"false positives, real {name}", fp, sum(1 for i in learned_flags if keep(i)), n))

    docs = [c["tool"] for c in cases] + [c["tool"] for set_cases in blind.values() for c in set_cases] + real
    wall, cpu = [], []
    for r in range(args.rounds):  # alternate the order so caches and frequency scaling even out
        order = docs if r % 2 == 0 else docs[::-1]
        t0, c0 = time.perf_counter(), time.process_time()
        for d in order:
            scan_definition(d)
        wall.append((time.perf_counter() - t0) / len(order) * 1e6)
        cpu.append((time.process_time() - c0) / len(order) * 1e6)
    single = []
    for d in real:  # CPU time of one tool (other processes' load does not count)
        c0 = time.process_time_ns()
        scan_definition(d)
        single.append((time.process_time_ns() - c0) / 1e3)
    single.sort()
    hostile = []  # worst shapes seen while bounding the rules, 200,000 characters each
    for text in ("a" + "\n" * 200_000, "a\u200b" * 100_000, "when a_b " * 22_222, "send http://x " * 14_285,
                 "word " * 40_000):
        c0 = time.process_time()
        scan_definition(
            {
                "name": "t",
                "description": text,
                "inputSchema": {"type": "object", "properties": {"p": {"type": "string", "description": text}}},
            }
        )
        hostile.append((time.process_time() - c0) * 1e3)

    load = os.getloadavg()[0]
    print(
        f"# machine load average {load:.1f} on {os.cpu_count()} CPUs (costs are inflated when it exceeds the CPU count)"
    )
    print(f"{'measure':48} {'rules':>6} {'of':>6} {'%':>8}" + (f" {'+learn':>7} {'%':>8}" if scorer else ""))
    for name, hit, both, n in rows:
        print(f"{name:48} {hit:6d} {n:6d} {100.0 * hit / n:8.2f}" + (f" {both:7d} {100.0 * both / n:8.2f}"
                                                                      if scorer else ""))
    print(f"{'cost per tool, CPU, median round (µs)':38} {statistics.median(cpu):21.1f}")
    print(f"{'cost per tool, wall, median round (µs)':38} {statistics.median(wall):21.1f}")
    print(f"{'cost, CPU, p50 single real tool (µs)':38} {single[len(single) // 2]:21.1f}")
    print(f"{'cost, CPU, p99 single real tool (µs)':38} {single[int(len(single) * 0.99)]:21.1f}")
    print(f"{'cost, CPU, max single real tool (µs)':38} {single[-1]:21.1f}")
    print(f"{'cost, CPU, worst hostile 400 kB tool (ms)':38} {max(hostile):21.1f}")
    if scorer is not None:
        print_learned_cost(real, scorer)
    if args.baseline_tree is not None:
        ab = ab_cost({"baseline": args.baseline_tree.resolve(), "this tree": Path(__file__).resolve().parent.parent},
                     [{k: v for k, v in t.items() if k != "id"} for t in real], args.rounds)
        print(f"{'A/B cost per real tool, CPU (µs)':38} {'baseline':>10} {'this tree':>10} {'ratio':>8}")
        print(f"{'':38} {ab['baseline']:10.1f} {ab['this tree']:10.1f} {ab['this tree'] / ab['baseline']:8.2f}")
    if args.show_missed:
        for c in cases:
            if not scan_definition(c["tool"]).suspicious:
                print(f"missed {c['id']} ({c['split']}): {c['technique']}")
        for set_name, set_cases in blind.items():
            for c in set_cases:
                if scan_definition(c["tool"]).suspicious is not c["poisoned"]:
                    print(f"{'missed' if c['poisoned'] else 'flagged'} {c['id']} ({set_name}): {c['technique']}")
    for i, t, r in flagged[: args.show_fp]:
        print(f"FP #{i} {t['id']}: " + " | ".join(r.reasons()[:3]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
