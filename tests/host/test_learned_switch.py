"""The learned definition signal's on/off switch: config file ``toolhost.definition_scan.learned``,
environment ``TOOLHOST_LEARNED_SCAN`` over it, on by default (the rules alone without the dense model)."""

from __future__ import annotations

import pytest

from host.access import open_access
from host.config_model import HostDefaults
from host.safety import ENV_LEARNED, EmbeddingScorer, ScoreCache, learned_scan_enabled


def test_on_by_default_in_the_config_model_and_without_the_variable(monkeypatch):
    monkeypatch.delenv(ENV_LEARNED, raising=False)
    assert HostDefaults().definition_scan.learned is True
    assert HostDefaults.model_validate({"definition_scan": {"learned": False}}).definition_scan.learned is False
    assert learned_scan_enabled() is True
    assert learned_scan_enabled(False) is False


@pytest.mark.parametrize(("raw", "configured", "expected"), [
    ("1", False, True), ("on", False, True), ("TRUE", False, True),
    ("0", True, False), ("off", True, False), ("no", True, False), ("", True, True),
])
def test_the_variable_overrides_the_config_file(monkeypatch, raw, configured, expected):
    monkeypatch.setenv(ENV_LEARNED, raw)
    assert learned_scan_enabled(configured) is expected


def test_a_bad_value_is_an_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv(ENV_LEARNED, "maybe")
    with pytest.raises(ValueError, match=r"TOOLHOST_LEARNED_SCAN='maybe': expected 1/true/on or 0/false/off"):
        learned_scan_enabled()


def test_a_typo_in_the_block_is_refused():
    with pytest.raises(ValueError, match="leaned"):
        HostDefaults.model_validate({"definition_scan": {"leaned": True}})


def test_open_access_keeps_the_rules_alone_when_off(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_LEARNED, raising=False)
    access, enforce = open_access(tmp_path, "auto")
    try:
        assert enforce is False
        assert access is not None and access.pins.safety.scorer is None
    finally:
        access.close()


def test_open_access_with_the_variable_on_scores_with_the_probe_and_keeps_scores(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_LEARNED, "1")
    monkeypatch.setenv("TOOLHOST_DENSE_SEARCH", "1")  # the suite runs with the dense model off
    access, _enforce = open_access(tmp_path, "auto")
    try:
        assert access is not None
        assert isinstance(access.pins.safety.scorer, EmbeddingScorer)
        saved = access.pins.safety.saved
        assert isinstance(saved, ScoreCache) and saved.path == tmp_path / "search" / "definition-scores.sqlite3"
        assert saved.version == access.pins.safety.scorer.probe.version
    finally:
        access.close()
