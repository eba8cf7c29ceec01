"""The adapters work on plain dicts: importing host.agent.providers loads neither SDK."""

from __future__ import annotations

import subprocess
import sys

import host.agent.providers


def test_no_sdk_imported_at_runtime():
    code = "import sys, host.agent.providers; print(sorted(m for m in ('openai', 'anthropic') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_public_names_resolve():
    assert host.agent.providers.__all__ == sorted(host.agent.providers.__all__)
    for name in host.agent.providers.__all__:
        assert getattr(host.agent.providers, name) is not None
    assert host.agent.providers.adapter_for("anthropic_messages").api == "anthropic_messages"


def test_every_adapter_implements_the_shared_interface():
    from host.agent.accumulate import ArgumentAccumulator
    from host.agent.providers import AccumulatorLike, ProviderAdapter, StreamParser, adapter_for

    assert isinstance(ArgumentAccumulator(), AccumulatorLike)
    for api in ("openai_chat", "openai_responses", "anthropic_messages"):
        adapter = adapter_for(api)
        assert isinstance(adapter, ProviderAdapter) and adapter.api == api
        assert isinstance(adapter.stream_parser(ArgumentAccumulator()), StreamParser)
