"""An agent loop governed like ``toolhost serve``: the same policy, approvals, pins and audit.

:func:`governed_runtime` builds the object graph once (the permission store of the data folder,
:func:`host.access.build_policy`, :meth:`host.access.AccessControl.approval_hook`, the store as the
auditor, definition pins watching the registry, the learned definition scan run off the event loop
before a listing reaches the registry) and yields a :class:`GovernedRuntime`;
:meth:`GovernedRuntime.ask` runs one conversation with a provider adapter and your ``send``::

    async with governed_runtime(load_config(data_dir=d), d, user="alice") as gov:
        outcome = await gov.ask(OpenAIChatAdapter(), send, "Where is order A1001?", model="gpt-4.1")
    print(outcome.final_text)

Access follows the gateway's modes: with users in the data folder, ``user`` is required and that
user's grants decide (destructive tools need an approver's approval unless a grant says
``--no-approval``; ``toolhost approvals approve ID``); without users, open access (every tool,
changed definitions held until ``toolhost pins accept``). Every call, whatever its outcome, gets an
audit row (``toolhost audit``). Runnable examples: ``examples/``.

With ``programmatic=True`` (Anthropic Messages, OpenAI Responses), the provider's code runtime may
call tools too: read-risk ones always, write/destructive ones only under an allow grant with
``--no-approval``; every call a program made runs through the same pipeline and its audit row
names the program (:mod:`host.agent.programmatic`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from host.access import AccessControl, build_policy, open_access
from host.agent.loop import LoopOutcome, run_conversation
from host.agent.programmatic import GrantedPrograms, ProgrammaticCalls, ProgrammaticPolicy, ReadOnlyPrograms
from host.agent.providers import ProviderAdapter, ProviderModel, WithToolSearch
from host.agent.providers.driver import Send
from host.agent.transcript import Message
from host.config import HostConfig
from host.pipeline import CallContext
from host.runtime import HostRuntime
from registry import Principal, ToolRecord
from registry.search import DeferredLoadingState

__all__ = ["GovernedRuntime", "governed_runtime"]


@dataclass
class GovernedRuntime:
    """A running :class:`HostRuntime` with the gateway's governance, and who the agent acts as.

    Attributes:
        runtime: connections, registry, search and the audited call path.
        principal: the caller every tool call is decided, approved and audited as.
        access: the permission store (grants, approvals, pins, audit).
        state: the conversation's deferred-loading state (tools ``tool_search`` loaded).
        enforced: see the attribute below.
    """

    runtime: HostRuntime
    principal: Principal
    access: AccessControl
    state: DeferredLoadingState = field(default_factory=DeferredLoadingState)
    enforced: bool = False
    """Grants decide (users exist, or a user was named); ``False``: open access."""

    def programmatic_policy(self) -> ProgrammaticPolicy:
        """Which non-read tools a provider's program may call for this principal: under users, an
        allow grant with ``--no-approval``; in open access, none."""
        return GrantedPrograms(self.access, self.principal) if self.enforced else ReadOnlyPrograms()

    def declared(self) -> list[ToolRecord]:
        """The tools declared to the model now: loaded (or ``always_load``) and visible to the principal."""
        rt = self.runtime
        return [t for t in self.state.declared(rt.registry.snapshot()) if rt.is_visible(self.principal, t)]

    async def ask(
        self,
        adapter: ProviderAdapter,
        send: Send,
        text: str | Sequence[Message],
        *,
        model: str,
        params: dict[str, Any] | None = None,
        conversation_id: str = "agent",
        max_turns: int = 12,
        programmatic: bool = False,
    ) -> LoopOutcome:
        """Run one conversation to its final answer (or a loop limit).

        Args:
            adapter: :class:`~host.agent.providers.OpenAIChatAdapter`,
                :class:`~host.agent.providers.OpenAIResponsesAdapter` or
                :class:`~host.agent.providers.AnthropicMessagesAdapter`.
            send: ``async send(params) -> response dict | async iterator of stream events`` (the
                provider SDK call; see ``examples/``).
            text: the user's message, or a whole history.
            model: the provider's model name.
            params: extra request parameters (``{"max_tokens": 1024}`` for Anthropic, ``{"stream": True}``).
            conversation_id: names the event log (``<data_dir>/events/``) and spill folder.
            max_turns: model turns at most.
            programmatic: let the provider's code runtime call tools (module docstring).

        Returns:
            The :class:`~host.agent.loop.LoopOutcome` (``final_text``, ``messages``, ``stop_reason``).

        Raises:
            ValueError: ``programmatic`` with OpenAI Chat Completions (it has no programmatic callers).
        """
        rt = self.runtime
        policy = self.programmatic_policy()
        provider = ProviderModel(adapter, send, self.declared, model=model, tool_search=True, params=params,
                                 programmatic=policy.allows if programmatic else None)
        calls: Any = WithToolSearch(rt, rt.search_index, self.state,
                                    visible=lambda t: rt.is_visible(self.principal, t))
        if programmatic:
            calls = ProgrammaticCalls(calls, rt, provider.programs, policy, api=adapter.api)
        history = [Message(role="user", text=text)] if isinstance(text, str) else list(text)
        ctx = CallContext(principal=self.principal, conversation_id=conversation_id, adapter=adapter.api)
        return await run_conversation(provider, calls, history, ctx, max_turns=max_turns)


@asynccontextmanager
async def governed_runtime(
    config: HostConfig, data_dir: Path, *, user: str | None = None, db_url: str | None = None
) -> AsyncIterator[GovernedRuntime]:
    """Connect ``config``'s servers under the data folder's permissions (module docstring).

    Args:
        config: the parsed configuration (:func:`host.config.load_config`).
        data_dir: the data folder (its ``toolhost.db`` holds users, grants, approvals, pins, audit).
        user: the user the agent acts for (required once users exist; default ``agent`` in open access).
        db_url: a PostgreSQL URL instead of the folder's SQLite database.

    Raises:
        ValueError: users exist but no ``user`` was given.
        host.store.NotFound: ``user`` is not a user of the data folder.
    """
    access, enforce = open_access(data_dir, "auto", db_url=db_url,
                                  learned_scan=config.defaults.definition_scan.learned)
    assert access is not None  # "auto" always opens the store
    try:
        if user is not None:
            principal, enforce = access.principal_for_user(user), True
        elif enforce:
            raise ValueError("users are configured in this data folder: pass user=NAME (the user the agent acts "
                             "for; `toolhost users list`)")
        else:
            principal = Principal(user="agent")
        rt = HostRuntime(config, data_dir=data_dir, conversation_id="agent",
                         policy=build_policy(access, enforce=enforce),
                         approvals=access.approval_hook() if enforce else None, auditor=access,
                         prescorer=access.pins.safety)  # the learned scan runs in a thread, before listing
        access.watch(rt.registry)  # pin definitions from the first listing on
        async with rt:
            yield GovernedRuntime(rt, principal, access, enforced=enforce)
    finally:
        access.close()
