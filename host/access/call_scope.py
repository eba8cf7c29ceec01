"""One policy decision per tool per call: the pipeline, the rate limit and the audit row of one
``HostRuntime.call`` share it.

A database policy reads the access revision on every evaluation (so a grant changed by any process
or replica is seen by the next request); ``toolhost serve`` evaluated a forwarded call two or three
times (rate limit, authorize stage, audit row), each a revision read and a policy walk (py-spy:
~5% of serve's CPU per call). :class:`CallScopedPolicy` remembers each decision inside a
:func:`call_scope` only, so the next call evaluates afresh: a grant revoked between two calls
denies the second one. Within a call, the audit row records the decision that let the call run
(the one the authorize stage made), not one re-derived after the call finished.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from registry.policy import Decision, PolicyView, Principal, RequestPolicy
from registry.tool import ToolRecord

__all__ = ["CallScopedPolicy", "call_scope"]

_DECISIONS: ContextVar[dict[tuple[Principal, str, str], Decision] | None] = ContextVar(
    "toolhost_call_decisions", default=None
)


@contextmanager
def call_scope() -> Iterator[None]:
    """Decisions of :class:`CallScopedPolicy` made inside are remembered until the scope ends
    (tasks started inside share them: they copy the context, not the memory)."""
    token = _DECISIONS.set({})
    try:
        yield
    finally:
        _DECISIONS.reset(token)


class CallScopedPolicy:
    """A :class:`registry.policy.RequestPolicy`: ``inner`` whose :meth:`evaluate` answers once per
    ``(principal, tool name, definition hash)`` inside a :func:`call_scope` (outside one, every
    evaluation asks ``inner``). A failing evaluation is not remembered. :meth:`for_request` and
    :attr:`per_user` are ``inner``'s (a view is already one consistent read)."""

    def __init__(self, inner: RequestPolicy) -> None:
        self.inner = inner

    @property
    def per_user(self) -> bool:
        return self.inner.per_user

    def for_request(self, principal: Principal) -> PolicyView:
        return self.inner.for_request(principal)

    def evaluate(self, principal: Principal, tool: ToolRecord) -> Decision:
        memo = _DECISIONS.get()
        if memo is None:
            return self.inner.evaluate(principal, tool)
        key = (principal, tool.qualified_name, tool.definition_hash)
        decision = memo.get(key)
        if decision is None:
            decision = memo[key] = self.inner.evaluate(principal, tool)
        return decision
