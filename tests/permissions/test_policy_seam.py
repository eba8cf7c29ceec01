"""The policy seam: every layer of the stack is a declared RequestPolicy whose views answer the
same questions, and build_policy assembles the stack each access mode uses."""

from __future__ import annotations

import inspect

import pytest

from host.access import (
    AccessControl,
    CallScopedPolicy,
    LocalAdminPolicy,
    OpenAccessPolicy,
    build_policy,
    local_admin_principal,
    local_policy,
)
from host.access.open_access import RESTART_REASON
from registry.permissions import GrantPolicy, PinnedPolicy
from registry.policy import AllowAll, Effect, PatternPolicy, PolicyView, Principal, RequestPolicy
from registry.tool import Risk

from tests.permissions.conftest import make_record

VIEW_MEMBERS = {name for name in vars(PolicyView) if not name.startswith("_")}
POLICY_MEMBERS = {"evaluate", "for_request", "per_user"}


def _layers(access: AccessControl) -> dict[str, RequestPolicy]:
    grants = GrantPolicy.from_grants({})
    return {
        "allow-all": AllowAll(),
        "pattern": PatternPolicy(),
        "grants": grants,
        "pins": PinnedPolicy(grants, {}),
        "store": access,
        "open": OpenAccessPolicy(access),
        "local-admin": LocalAdminPolicy(access, OpenAccessPolicy(access, fail_closed=False)),
        "call-scope": CallScopedPolicy(access),
    }


def test_every_layer_declares_the_request_policy_members_and_its_view_the_view_members(access) -> None:
    assert VIEW_MEMBERS == {"principal", "visible_key", "evaluate", "visible", "catalog_visible"}
    for name, layer in _layers(access).items():
        members = {m for m in POLICY_MEMBERS if inspect.getattr_static(type(layer), m, None) is not None}
        assert members == POLICY_MEMBERS, name
        view = layer.for_request(Principal("alice"))
        missing = {m for m in VIEW_MEMBERS if inspect.getattr_static(type(view), m, None) is None
                   and m not in getattr(type(view), "__dataclass_fields__", {})}
        assert missing == set(), (name, missing)
        assert view.principal == Principal("alice"), name
        # no layer forwards unknown attributes: asking for one fails
        assert not hasattr(layer, "no_such_member"), name


def test_per_user_is_true_only_where_grants_decide(access) -> None:
    assert {name: layer.per_user for name, layer in _layers(access).items()} == {
        "allow-all": False, "pattern": False, "grants": True, "pins": True, "store": True,
        "open": False, "local-admin": True, "call-scope": True,
    }


def test_open_access_hides_a_changed_tool_but_not_its_servers_prompts_and_closes_once_users_exist(access) -> None:
    tool = make_record("docs__search")
    access.observe("docs", [tool])
    changed = make_record("docs__search", description="now it does something else")
    prompt = make_record("docs__review")  # a prompt's stand-in record: not a pinned tool
    policy = OpenAccessPolicy(access)
    view = policy.for_request(Principal("local"))
    assert (view.visible(tool), view.visible(changed), view.catalog_visible(prompt)) == (True, False, True)
    assert view.evaluate(changed).rule == "pin:changed"
    first_key = view.visible_key
    access.users.add("alice")  # users added while it runs: it closes
    closed = policy.for_request(Principal("local"))
    assert (closed.visible(tool), closed.catalog_visible(prompt)) == (False, False)
    assert closed.evaluate(tool).reason == RESTART_REASON
    assert closed.visible_key != first_key  # a cached search mask of the open view is not reused


def test_the_store_view_hides_what_no_grant_covers_and_decides_catalog_items_by_grants_only(access) -> None:
    access.users.add("alice")
    access.grants.add("alice", "docs__*")
    tool = make_record("docs__search")
    access.observe("docs", [tool])
    changed = make_record("docs__search", description="changed")
    view = access.for_request(Principal("alice"))
    assert [view.visible(tool), view.visible(changed), view.visible(make_record("git__log"))] == [True, False, False]
    assert [view.catalog_visible(make_record("docs__readme")), view.catalog_visible(make_record("git__readme"))] == [
        True, False]
    assert view.visible_key == ("alice", (), access.revision)


@pytest.mark.parametrize("enforce", [True, False])
def test_build_policy_gives_the_local_admin_every_tool_with_pins_holding(access, enforce: bool) -> None:
    access.users.add("bob")
    tool, other = make_record("orders__cancel", Risk.DESTRUCTIVE), make_record("orders__get")
    access.observe("orders", [tool, other])
    policy = build_policy(access, enforce=enforce)
    admin = local_admin_principal("local:root")
    assert policy.evaluate(admin, tool).effect is Effect.ALLOW
    assert policy.evaluate(admin, make_record("orders__cancel", Risk.DESTRUCTIVE, description="x")).rule == "pin:changed"
    # bob has no grant (enforced) / the gateway started open and users now exist (closed)
    bob = policy.evaluate(Principal("bob"), other)
    assert (bob.effect, bob.rule) == (Effect.DENY, None if enforce else "open-access-closed")


def test_build_policy_without_a_store_allows_all_and_local_policy_follows_the_user(access) -> None:
    assert isinstance(build_policy(None, enforce=False), AllowAll)
    assert isinstance(local_policy(None), AllowAll)
    assert local_policy(access, user="alice") is access
    assert isinstance(local_policy(access), OpenAccessPolicy)
