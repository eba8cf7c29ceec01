"""``toolhost search`` answers alike with and without a running serve on the data folder: the same
``--json`` shape (each hit's definition with its data-flow labels, score and why), "No tool fits"
for a weak result (as MCP ``tool_search`` says), and exit 2 with the error for a query that cannot
run (an invalid ``regex:`` pattern)."""

from __future__ import annotations

import json
import os
import subprocess

from tests.admin.support import TOOLHOST, Serve, config

WEAK = "order a pizza with extra cheese for delivery tonight"
NO_FIT = "No tool fits this request well"


def _search(cfg, data, *args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"TOOLHOST_DENSE_SEARCH": "0", "COLUMNS": "200"}
    return subprocess.run([TOOLHOST, "search", *args, "--config", str(cfg), "--data-dir", str(data)],
                          capture_output=True, text=True, timeout=90, env=env)


def _answers(cfg, data) -> dict[str, subprocess.CompletedProcess[str]]:
    return {"json": _search(cfg, data, "cancel my order", "--json"), "weak": _search(cfg, data, WEAK),
            "weak_json": _search(cfg, data, WEAK, "--json"), "bad": _search(cfg, data, "regex:["),
            "bad_json": _search(cfg, data, "regex:[", "--json")}


def _shape(hits: list[dict]) -> list[tuple]:
    return [(h["name"], sorted(h), sorted(h["flow"]), sorted(h["flow"]["reasons"])) for h in hits]


def test_search_answers_alike_with_and_without_a_running_serve(tmp_path) -> None:
    data = tmp_path / "data"
    cfg = config(tmp_path)
    alone = _answers(cfg, data)
    with Serve(cfg, data):
        served = _answers(cfg, data)
    for answers in (alone, served):
        assert answers["json"].returncode == 0, answers["json"].stderr
        hits = json.loads(answers["json"].stdout)
        assert hits[0]["name"] == "orders__cancel_order" and hits[0]["risk"] == "destructive"
        assert hits[0]["why"] == ["name: cancel, order", "description: cancel, order", "parameters: order"]
        assert sorted(hits[0]["flow"]) == ["conflicts", "labels", "reasons", "short"]
        assert answers["weak"].returncode == 0 and answers["weak"].stdout.startswith(NO_FIT)
        assert answers["weak_json"].stderr.startswith(NO_FIT) and json.loads(answers["weak_json"].stdout)
        for bad in (answers["bad"], answers["bad_json"]):
            assert (bad.returncode, bad.stdout) == (2, "")
            assert bad.stderr.startswith("error: Invalid regex '[': unterminated character set")
    assert _shape(json.loads(alone["json"].stdout)) == _shape(json.loads(served["json"].stdout))
    assert json.loads(alone["json"].stdout) == json.loads(served["json"].stdout)
