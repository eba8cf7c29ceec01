"""AdminService (over the store) and RemoteAdmin (over a running serve) are one seam: the same
public methods with the same signatures as the AdminActions protocol."""

from __future__ import annotations

import inspect

from servers.admin import AdminActions, AdminService
from servers.admin.user_actions import UserAdmin
from servers.cli.admin_common import ACTION_NAMES, Admin
from servers.cli.admin_remote import RemoteAdmin

SERVICE_ONLY = {"principal", "acting_as", "acted", "code_mode", "reset_taint"}
"""AdminService's own public methods: the server-side lookup of a caller's Principal, binding the
actor, recording an act done outside the store (config reload, reconnect), and the running serve's
code-mode pool and stateless taint sessions (held in that process, no store behind them, so not
actions of the CLI's store-backed Admin; `toolhost taint reset` asks the running serve)."""


def public_methods(cls: type) -> dict[str, inspect.Signature]:
    """The public methods ``cls`` defines itself (not inherited from the protocol's stubs)."""
    return {
        name: inspect.signature(value)
        for name, value in vars(cls).items()
        if not name.startswith("_") and inspect.isfunction(value)
    }


def test_both_implementations_have_exactly_the_protocol_methods() -> None:
    protocol = public_methods(AdminActions)
    service = public_methods(UserAdmin) | public_methods(AdminService)  # users, roles, keys: its base
    remote = public_methods(RemoteAdmin)
    assert len(protocol) == 33
    assert sorted(set(service) - SERVICE_ONLY) == sorted(protocol)
    assert sorted(remote) == sorted(protocol)


def test_signatures_agree_parameter_by_parameter() -> None:
    protocol = public_methods(AdminActions)
    service = public_methods(UserAdmin) | public_methods(AdminService)  # users, roles, keys: its base
    remote = public_methods(RemoteAdmin)
    for name, declared in protocol.items():
        assert str(service[name]) == str(declared), name
        assert str(remote[name]) == str(declared), name
    assert str(protocol["audit"]) == (
        "(self, *, user: 'str | None' = None, tool: 'str | None' = None, status: 'str | None' = None, "
        "action: 'str | None' = None, since: 'float | None' = None, after_id: 'int | None' = None, "
        "limit: 'int' = 50) -> 'list[dict[str, Any]]'"
    )


def test_both_are_declared_implementations() -> None:
    assert issubclass(AdminService, AdminActions)
    assert issubclass(RemoteAdmin, AdminActions)
    assert AdminActions in AdminService.__mro__ and AdminActions in RemoteAdmin.__mro__


def test_the_cli_admin_offers_exactly_the_protocol_actions_and_forwards_nothing_else(tmp_path) -> None:
    assert sorted(ACTION_NAMES) == sorted(public_methods(AdminActions))
    admin = Admin(tmp_path, None, use_serve=False)
    try:
        assert admin.users() == []  # an action runs on the store of the data folder
        assert not hasattr(admin, "principal")  # AdminService's helper is not an admin action
    finally:
        admin.close()


def test_the_cli_admin_is_a_third_explicit_implementation_with_the_same_signatures() -> None:
    protocol = public_methods(AdminActions)
    admin = {name: sig for name, sig in public_methods(Admin).items() if name not in ("local", "close")}
    assert {name: str(sig) for name, sig in admin.items()} == {name: str(sig) for name, sig in protocol.items()}
    assert isinstance(Admin.__new__(Admin), AdminActions)  # structurally the protocol (runtime_checkable)
