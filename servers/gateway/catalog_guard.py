"""Audit rows and session taint for what the gateway's catalog hands out (prompts, resources, completion).

A resource's text and a prompt's messages reach the model like a tool result, so:

* **Session taint.** A ``resources/read`` or ``prompts/get`` that answered counts in the caller's
  taint session (the one its tool calls use, :class:`servers.gateway.taint_sessions.TaintSessions`)
  with the labels :func:`registry.safety.catalog_labels` gives it (its server's source labels, a
  ``file://`` resource private). It is recorded as ``resources/read <exposed URI>`` /
  ``prompts/get <name>`` with the request id, so the reasons of a later hold name it.
* **Audit.** Every ``prompts/get`` (action ``prompt``), ``resources/read`` (``resource``) and
  ``completion/complete`` (``complete``: the client's argument value and context go upstream) is
  a row wherever the gateway has an auditor (open access and API keys alike; ``--auth off`` has
  none), refused ones included: status ``ok``, ``error``, ``input_required``, ``unknown`` (no
  such name/URI) or ``hidden`` (exists, but the caller's grants do not cover it; the client gets
  the same answer as for ``unknown``). The name or URI is stored with secrets masked
  (:func:`registry.redaction.redact_text`, e.g. ``?api_key=[REDACTED]``); prompt arguments and
  completion values are stored redacted like call arguments.
* **Sampling.** A ``sampling/createMessage`` an upstream makes while serving a read or get gets
  the session-taint rule like one made during a tool call (:meth:`CatalogGuard.sampling`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

import anyio

from host.runtime import HostRuntime
from host.upstream.relay import sample_gate_scope
from registry import Principal
from registry.redaction import redact_text
from servers.gateway.request_view import RequestView
from servers.gateway.taint_sessions import TaintSessions

__all__ = ["CatalogAuditor", "CatalogGuard"]

_ACTION_NAMES = {"resource": "resources/read", "prompt": "prompts/get"}


class CatalogAuditor(Protocol):
    """Where the rows go (:class:`host.access.AccessControl`)."""

    async def audit_async(self, *, timeout: float | None = ..., **fields: Any) -> int | None: ...


class CatalogGuard:
    """See module docstring.

    Args:
        runtime: the running host (its taint stage and registry).
        resolve: maps a request to its caller.
        auditor: where rows go; ``None``: no audit (``--auth off``).
    """

    def __init__(self, runtime: HostRuntime, resolve: Callable[[RequestView], Principal],
                 auditor: CatalogAuditor | None) -> None:
        self.runtime = runtime
        self.resolve = resolve
        self.auditor = auditor
        self.sessions = TaintSessions(runtime.end_session)
        """The session-taint session of each connection or stateless caller (shared with tool calls)."""

    async def audit(self, request: RequestView, action: str, name: str, status: str,
                    arguments: Any = None) -> None:
        """One audit row (module docstring); shielded, so a cancelled request is still audited."""
        if self.auditor is not None:
            with anyio.CancelScope(shield=True):
                await self.auditor.audit_async(action=action, principal=self.resolve(request), tool=redact_text(name),
                                               status=status, arguments=arguments)

    async def delivered(self, request: RequestView, kind: str, exposed: str, server: str,
                        upstream_uri: str | None, arguments: Any = None) -> None:
        """Content of ``kind`` (``resource``/``prompt``) named ``exposed`` from ``server`` reached the
        caller: record it in the caller's taint session, then audit it (status ``ok``)."""
        self.record(request, kind, exposed, server, upstream_uri)
        await self.audit(request, kind, exposed, "ok", arguments)

    def sampling(self, request: RequestView) -> AbstractContextManager[None]:
        """Within this block, a sampling request an upstream makes for this read or get gets the
        session-taint rule (:meth:`host.pipeline.TaintStage.sampling_verdict`, the config rule); a
        triggered verdict is an audit row ``taint`` (status ``sampling_refused``/``sampling_allowed``)."""

        async def gate(server: str) -> str | None:
            session = self.sessions.of(request, self.resolve(request))
            verdict, refusal = self.runtime.taint.sampling_verdict(session, str(request.request_id), server)
            if verdict.triggered:
                await self.audit(request, "taint", f"sampling/createMessage by {server}",
                                 "sampling_refused" if refusal else "sampling_allowed")
            return refusal

        return sample_gate_scope(gate)

    def record(self, request: RequestView, kind: str, exposed: str, server: str,
               upstream_uri: str | None) -> None:
        """Count the content in the caller's taint session when it carries a source label."""
        taint = self.runtime.taint
        labels = taint.catalog_labels(server, kind, upstream_uri, self.runtime.registry.snapshot().tools())
        if not labels.labels:
            return
        session = self.sessions.of(request, self.resolve(request))
        taint.record_content(session, str(request.request_id), f"{_ACTION_NAMES[kind]} {exposed}", labels)
