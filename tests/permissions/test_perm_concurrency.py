"""Concurrent grant changes from two real processes on one database (SQLite file, PostgreSQL) lose nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from host.access import AccessControl

N = 40
WORKER = r"""
import sys
from host.access import AccessControl
url, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
access = AccessControl.open(url=url)
print("ready", flush=True)
sys.stdin.readline()  # wait until both processes are ready, then race
for i in range(n):
    access.grants.add("alice", f"{tag}_{i}__*", max_risk="write")
    access.grants.add("shared", f"t{i}__x", effect="allow" if tag == "a" else "deny")
    if i % 5 == 0:
        access.grants.remove("alice", f"{tag}_{i}__*")
print("done", flush=True)
"""


def test_two_processes_adding_and_removing_grants_lose_nothing(store_url: str) -> None:
    url = store_url
    access = AccessControl.open(url=url)
    access.users.add("alice")
    access.users.add("shared")
    start_rev = access.store.revision()
    root = Path(__file__).resolve().parents[2]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, url, tag, str(N)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=root,
        )
        for tag in ("a", "b")
    ]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            out, err = p.communicate(timeout=90)
            assert p.returncode == 0, err
            assert out.strip() == "done"
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    removed = set(range(0, N, 5))
    alice = {g.pattern for g in access.grants.list("alice")}
    assert alice == {f"{t}_{i}__*" for t in "ab" for i in range(N) if i not in removed}
    shared = {(g.effect.value, g.pattern) for g in access.grants.list("shared")}
    assert shared == {(e, f"t{i}__x") for e in ("allow", "deny") for i in range(N)}
    # every change bumped the revision exactly once: no lost read-modify-write
    changes = 2 * (2 * N + len(removed))
    assert access.store.revision() == start_rev + changes
    access.close()
