"""The 401 answers of the MCP endpoint: one text per way an API key can be wrong.

:class:`ApiKeyRequired` stands where the SDK's ``RequireAuthMiddleware`` stands (in front of the
MCP route, after the bearer backend has run) and answers an unauthenticated request with a text
that says which of three things went wrong and what to do:

=====================  ====================  ==================================================
request                ``error``             ``WWW-Authenticate``
=====================  ====================  ==================================================
no ``Authorization``   (none, RFC 6750 3.1)  ``Bearer realm="toolhost"``
not ``Bearer ...``     ``invalid_request``   ``Bearer realm="toolhost", error=..., error_description=...``
unknown/revoked key    ``invalid_token``     as above
=====================  ====================  ==================================================

The JSON body is always ``{"error": ..., "error_description": ...}`` (``error`` is
``invalid_request`` for a missing header too). ``resource_metadata`` (RFC 9728) is added only when
an authorization server is configured (:func:`servers.http.api_keys.auth_settings` with
``issuer_url``): toolhost runs none, and advertising one makes OAuth-capable clients (the
Inspector, VS Code) start dynamic client registration against an endpoint that does not exist.
A request that is authenticated but lacks the scope gets the SDK's 403 unchanged.

A right key of a **disabled user** (:mod:`host.store.user_state`) is answered ``403`` with
``{"error": "user_disabled", "error_description": "user alice is disabled by ... since ...; an
admin runs `toolhost users enable alice`"}`` and no challenge. 403, not 401, by RFC 9110: 401
(15.5.2) says the request "lacks valid authentication credentials" and invites new ones, while
here the credentials are valid and identify the user; 403 (15.5.4) is for a server that
"understood the request but refuses to fulfill it", where "if authentication credentials were
provided in the request, the server considers them insufficient to grant access" and "the client
SHOULD NOT automatically repeat the request with the same credentials". A 401 would also make
OAuth-capable MCP clients start an authorization flow, where no new token could help. The
verifier marks such a key with :func:`refused_token`: an ``AccessToken`` without the ``tools``
scope, so even without this middleware the SDK answers 403 ``insufficient_scope``.

Source: RFC 6750 section 3 (the ``WWW-Authenticate`` response header field) and 3.1 (error codes).
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from starlette.types import Receive, Scope, Send

__all__ = ["NOT_BEARER", "NO_KEY", "REALM", "REFUSED_CLAIM", "ApiKeyRequired", "bad_key_text", "challenge_for",
           "refused_token"]

REALM = "toolhost"

NO_KEY = ("no API key: send the header `Authorization: Bearer th_...` with your toolhost API key "
          "(an admin creates one with `toolhost keys create USER`)")
NOT_BEARER = ("the Authorization header is not a Bearer token: send `Authorization: Bearer th_...` "
              "with your toolhost API key")
_KEY_ID = re.compile(r"th_([0-9a-f]{12})_")
REFUSED_CLAIM = "refused"
"""The claim of an :class:`AccessToken` whose (valid) key is refused; its value is the 403 text."""


def refused_token(token: str, user: str, text: str) -> AccessToken:
    """The ``AccessToken`` of a right key that is refused (its user is disabled): no scope, and
    the text of the 403 in :data:`REFUSED_CLAIM` (module docstring)."""
    return AccessToken(token=token, client_id=user, subject=user, scopes=[], claims={REFUSED_CLAIM: text})


def bad_key_text(token: str) -> str:
    """The 401 text for a Bearer token that is no valid key (names its key id when it has one, never its secret)."""
    m = _KEY_ID.match(token)
    which = f"API key {m.group(0)}... (key id {m.group(1)})" if m else "the API key"
    return (f"{which} is not recognised or was revoked: check it was copied whole, or ask an admin for a new "
            "one (`toolhost keys create USER`; `toolhost keys list USER` shows revoked keys)")


def challenge_for(headers: list[tuple[bytes, bytes]]) -> tuple[str | None, str]:
    """``(error code or None, description)`` for a request whose credentials were not accepted
    (module table); ``headers`` are the ASGI scope's raw headers."""
    value = next((v.decode("latin-1") for k, v in headers if k.lower() == b"authorization"), None)
    if value is None or not value.strip():
        return None, NO_KEY
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return "invalid_request", NOT_BEARER
    return "invalid_token", bad_key_text(token.strip())


class ApiKeyRequired(RequireAuthMiddleware):
    """The SDK's ``RequireAuthMiddleware`` with toolhost's 401 texts (module docstring)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        if isinstance(user, AuthenticatedUser):
            refused = (user.access_token.claims or {}).get(REFUSED_CLAIM)
            if refused:
                await _json(send, 403, {"error": "user_disabled", "error_description": refused}, [])
                return
            await super().__call__(scope, receive, send)  # the scope check (403) stays the SDK's
            return
        error, description = challenge_for(scope.get("headers") or [])
        parts = [f'realm="{REALM}"']
        if error is not None:
            parts += [f'error="{error}"', f'error_description="{description}"']
        if self.resource_metadata_url:
            parts.append(f'resource_metadata="{self.resource_metadata_url}"')
        await _json(send, 401, {"error": error or "invalid_request", "error_description": description},
                    [(b"www-authenticate", f"Bearer {', '.join(parts)}".encode())])


async def _json(send: Send, status: int, answer: dict[str, str], headers: list[Any]) -> None:
    body = json.dumps(answer).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
