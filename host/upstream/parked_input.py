"""Handshake-era upstream questions for 2026-07-28 clients: the upstream call is parked between rounds.

A server older than 2026-07-28 asks for input mid-call with a classic server→client request
(``elicitation/create``, ``sampling/createMessage``, ``roots/list``) and waits for the answer on
the open call. A 2026-07-28 client has no back channel: it learns of input needs from an
``InputRequiredResult`` and retries its request with ``inputResponses`` (SEP-2322). To join the
two, toolhost keeps the upstream call running in the background across the client's rounds:

1. The client's request starts the upstream call as a :class:`ParkedCall` (a task of the
   runtime's task group; upstream requests of the call are routed to it by the relay,
   :mod:`host.upstream.relay`) and waits for its result or its first question.
2. A question ends the round: the client gets an ``InputRequiredResult`` whose
   ``inputRequests`` hold the upstream's requests unchanged (keys ``toolhost-1``,
   ``toolhost-2``, ...) and whose ``requestState`` names the parked call (toolhost's state is
   sealed and bound to the user, method, tool and arguments by
   :func:`servers.gateway.input_flow.request_state_boundary`).
3. The retry carries the answers: each goes to the waiting upstream request, and the retry waits
   for the next question or the result, as in step 2.

Bounds (the upstream never hangs): a question not answered within
:data:`host.upstream.relay.FORWARD_TIMEOUT_SECONDS` is cancelled (elicitation ``cancel``; sampling
and roots get an error) and the call goes on; kinds the client did not declare are answered at
once (elicitation declined, sampling/roots an error), as for handshake-era clients; a client that
cancels its request cancels the upstream call; at most :data:`MAX_PARKED` calls are parked at
once (beyond that, calls run as before: questions are declined at once). A retry whose parked
call is gone (answered too late, toolhost restarted, another replica) gets ``-32602`` with
``data.reason == "input_call_gone"``: the client starts the call again.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import anyio
from mcp import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    ListRootsRequest,
    ListRootsResult,
)
from pydantic import BaseModel

from host.upstream.input_required import ELICIT, ROOTS, SAMPLE, InputExchange, encode_state, input_exchange
from host.upstream.relay import Downstream, current_downstream, downstream_scope

__all__ = ["CALL_GONE", "MAX_PARKED", "InputParking", "ParkedCall"]

MAX_PARKED = 256
"""Upstream calls parked at once for 2026-07-28 clients (all users together)."""
CALL_GONE = "input_call_gone"
"""``data.reason`` of the ``-32602`` answer to a retry whose parked call has ended."""

T = TypeVar("T")
Spawn = Callable[[Callable[[], Awaitable[None]]], None]


@dataclass
class _Question:
    key: str
    request: Any
    method: str
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: Any = None
    sent: bool = False


class ParkedCall(Generic[T]):
    """One upstream call kept across a 2026-07-28 client's rounds (module docstring).

    Attributes:
        id: random name carried in toolhost's ``requestState``.
        owner: the toolhost user who started it (a retry of another user is refused).
    """

    def __init__(self, owner: str, declared: frozenset[str]) -> None:
        self.id = secrets.token_urlsafe(18)
        self.owner = owner
        self.declared = declared
        self.questions: dict[str, _Question] = {}
        self.done = False
        self.result: T | None = None
        self.error: BaseException | None = None
        self.waiting = False
        self.scope = anyio.CancelScope()
        self._wake = anyio.Event()
        self._count = 0
        self.round_log: Callable[[Any, str], Awaitable[None]] | None = None
        """Where the upstream's log messages go: the log of the client request waiting on the call
        now (its round), ``None`` between rounds (then only the server's log file has them)."""

    async def _log(self, params: Any, server: str) -> None:
        if self.round_log is not None:
            await self.round_log(params, server)

    def _poke(self) -> None:
        wake, self._wake = self._wake, anyio.Event()
        wake.set()

    async def _ask(self, method: str, request: Any) -> Any:
        """Put one upstream request to the client and wait for its answer (the relay bounds the wait)."""
        self._count += 1
        question = _Question(key=f"toolhost-{self._count}", request=request, method=method)
        self.questions[question.key] = question
        self._poke()
        try:
            await question.answered.wait()
            return question.answer
        finally:
            self.questions.pop(question.key, None)

    async def _elicit(self, params: ElicitRequestParams) -> ElicitResult:
        answer = await self._ask(ELICIT, ElicitRequest(params=params))
        return ElicitResult.model_validate(_plain(answer))

    async def _sample(self, params: CreateMessageRequestParams) -> CreateMessageResult:
        answer = await self._ask(SAMPLE, CreateMessageRequest(params=params))
        return CreateMessageResult.model_validate(_plain(answer))

    async def _roots(self) -> ListRootsResult:
        answer = await self._ask(ROOTS, ListRootsRequest())
        return ListRootsResult.model_validate(_plain(answer))

    def downstream(self) -> Downstream:
        """The relay target of the parked call: questions of the declared kinds come here."""
        return Downstream(
            session=self,
            log=self._log,
            elicit=self._elicit if ELICIT in self.declared else None,
            sample=self._sample if SAMPLE in self.declared else None,
            roots=self._roots if ROOTS in self.declared else None,
        )

    def answer(self, responses: dict[str, Any] | None) -> None:
        """Hand the client's ``inputResponses`` to the waiting upstream requests; a question the
        retry left unanswered is asked again in the next round."""
        for key, question in list(self.questions.items()):
            if not question.sent:
                continue
            if responses is not None and key in responses:
                question.answer = responses[key]
                question.answered.set()
            else:
                question.sent = False

    async def next_outcome(self) -> tuple[bool, InputRequiredResult | None]:
        """Wait for the call's end ``(True, None)`` or its unsent questions ``(False, result)``."""
        while True:
            if self.done:
                return True, None
            fresh = {k: q for k, q in self.questions.items() if not q.sent}
            if fresh:
                for q in fresh.values():
                    q.sent = True
                return False, InputRequiredResult(
                    input_requests={k: q.request for k, q in fresh.items()},
                    request_state=encode_state(None, {}, parked=self.id))
            await self._wake.wait()


def _plain(answer: Any) -> Any:
    if isinstance(answer, BaseModel):
        return answer.model_dump(mode="json", by_alias=True, exclude_none=True)
    return answer


class InputParking:
    """The parked calls of one toolhost process (module docstring).

    Args:
        spawn: starts a task that may outlive the client's request (the runtime's task group:
            :meth:`host.upstream.manager.ServerManager.spawn`).
    """

    def __init__(self, spawn: Spawn) -> None:
        self._spawn = spawn
        self._calls: dict[str, ParkedCall[Any]] = {}

    @property
    def parked(self) -> int:
        """How many calls are parked now."""
        return len(self._calls)

    @staticmethod
    def applies(exchange: InputExchange | None, upstream_protocol: str | None) -> bool:
        """Whether a request goes through parking: a 2026-07-28 client's retry of a parked call,
        or its call to a handshake-era upstream (``upstream_protocol`` older than 2026-07-28)."""
        if exchange is None:
            return False
        return exchange.parked is not None or (upstream_protocol is not None and upstream_protocol < "2026")

    async def run(self, exchange: InputExchange, owner: str, op: Callable[[], Awaitable[T]]) -> T | None:
        """Run (or resume) ``op`` for ``exchange``; returns its result, or ``None`` with
        :attr:`InputExchange.pending` set when the upstream asked the client something.

        Raises:
            MCPError: ``-32602`` (``data.reason`` :data:`CALL_GONE`) for a retry whose call ended;
                whatever ``op`` raised.
        """
        if exchange.parked is not None:
            call = self._calls.get(exchange.parked)
            if call is None or call.owner != owner or call.waiting:
                raise MCPError(INVALID_PARAMS, "toolhost: the call waiting for this input has ended (answered "
                               "too late, or toolhost restarted); start the call again", {"reason": CALL_GONE})
            call.answer(exchange.input_responses)
        elif len(self._calls) >= MAX_PARKED:
            return await op()  # no room: questions are declined at once, as before parking existed
        else:
            call = ParkedCall[T](owner, exchange.declared)
            self._calls[call.id] = call
            self._spawn(lambda: self._drive(call, op))
        return await self._wait(call, exchange)

    async def _drive(self, call: ParkedCall[Any], op: Callable[[], Awaitable[Any]]) -> None:
        try:
            with call.scope, downstream_scope(call.downstream()), input_exchange(None):
                call.result = await op()
        except Exception as err:  # noqa: BLE001 - handed to the waiting request, which raises it
            call.error = err
        finally:
            call.done = True
            if call.scope.cancel_called or not call.waiting:
                self._calls.pop(call.id, None)  # nobody will collect it
            call._poke()

    async def _wait(self, call: ParkedCall[T], exchange: InputExchange) -> T | None:
        call.waiting = True
        waiting_request = current_downstream()
        call.round_log = waiting_request.log if waiting_request is not None else None
        try:
            done, pending = await call.next_outcome()
        except BaseException:
            call.scope.cancel()  # the client gave up on its request: so does the upstream call
            self._calls.pop(call.id, None)
            raise
        finally:
            call.waiting = False
            call.round_log = None
        if not done:
            exchange.pending = pending
            return None
        self._calls.pop(call.id, None)
        if call.error is not None:
            raise call.error
        return call.result
