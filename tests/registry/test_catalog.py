"""registry.catalog: reversible names/URIs, template routing, collisions, grant names (prompts and
resources namespaced like tools)."""

from __future__ import annotations

import pytest

from registry import NameConflict, assign_qualified_names
from registry.catalog import Catalog, qualify_uri, split_uri
from registry.permissions import Grant, GrantEffect, GrantPolicy, UserAccess
from registry.policy import Principal


@pytest.mark.parametrize("uri", ["file:///docs/readme.md", "test://static-text", "https://x.example/a/b?c=d#e",
                                 "demo://resource/dynamic/text/{resourceId}"])
def test_uri_scheme_round_trips(uri: str) -> None:
    exposed = qualify_uri("docs", uri)
    assert exposed == f"toolhost://docs/{uri}"
    assert split_uri(exposed) == ("docs", uri)
    assert qualify_uri("", uri) == uri and split_uri(uri) is None


def test_prompts_resources_and_templates_are_namespaced_and_route_back() -> None:
    cat = Catalog()
    cat.replace_server("git", "git", prompts=[{"name": "review", "description": "Review"}])
    cat.replace_server("docs", "docs", resources=[{"uri": "file:///docs/readme.md", "name": "readme"}],
                       templates=[{"uriTemplate": "file:///docs/{path}", "name": "doc"}])
    review = cat.prompt("git__review")
    assert (review.server, review.original, review.wire["name"], review.grant_name) == (
        "git",
        "review",
        "git__review",
        "git__review",
    )
    readme = cat.resource("toolhost://docs/file:///docs/readme.md")
    assert (readme.original, readme.grant_name) == ("file:///docs/readme.md", "docs__readme")
    assert cat.route_uri("toolhost://docs/file:///docs/readme.md")[:2] == ("docs", "file:///docs/readme.md")
    server, original, item = cat.route_uri("toolhost://docs/file:///docs/guide/intro.md")
    assert (server, original, item.kind, item.grant_name) == (
        "docs",
        "file:///docs/guide/intro.md",
        "template",
        "docs__doc",
    )
    assert cat.route_uri("toolhost://git/file:///docs/x") is None  # wrong namespace: unknown
    assert cat.route_uri("file:///docs/readme.md") is None  # un-namespaced: only prefix "" servers
    assert cat.template("toolhost://docs/file:///docs/{path}").original == "file:///docs/{path}"


def test_empty_prefix_keeps_original_names_and_a_clash_names_both_servers() -> None:
    cat = Catalog()
    cat.replace_server("a", "", prompts=[{"name": "review"}], resources=[{"uri": "test://x", "name": "x"}])
    assert cat.prompt("review").server == "a" and cat.route_uri("test://x")[:2] == ("a", "test://x")
    with pytest.raises(NameConflict) as err:
        cat.replace_server("b", "", prompts=[{"name": "review"}])
    assert str(err.value) == (
        "qualified name 'review' is taken by a/review; b/review cannot use it "
        "(give one of the servers another toolhost.prefix)"
    )
    assert cat.prompt("review").server == "a" and "b" not in cat.servers()
    assert assign_qualified_names("", ["get_time", "a.b"], server="t") == {"get_time": "get_time", "a.b": "a_b"}


def test_grants_cover_prompts_and_resources_like_tools() -> None:
    cat = Catalog()
    cat.replace_server(
        "docs",
        "docs",
        prompts=[{"name": "summarize"}],
        resources=[{"uri": "file:///pub.md", "name": "pub"}, {"uri": "file:///secret.md", "name": "secret"}],
    )
    policy = GrantPolicy(
        {
            "alice": UserAccess(grants=(Grant(GrantEffect.ALLOW, "server:docs"),)),
            "bob": UserAccess(grants=(Grant(GrantEffect.ALLOW, "docs__*"), Grant(GrantEffect.DENY, "docs__secret"))),
            "carol": UserAccess(grants=(Grant(GrantEffect.ALLOW, "docs__pub"),)),
        }
    )

    def seen(user: str) -> set[str]:
        items = cat.items("prompt") + cat.items("resource")
        return {i.exposed for i in items if policy.visible(Principal(user=user), i.as_record())}

    everything = {"docs__summarize", "toolhost://docs/file:///pub.md", "toolhost://docs/file:///secret.md"}
    assert seen("alice") == everything
    assert seen("bob") == everything - {"toolhost://docs/file:///secret.md"}
    assert seen("carol") == {"toolhost://docs/file:///pub.md"}
    assert seen("mallory") == set()
