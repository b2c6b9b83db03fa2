"""The MCP server at /mcp of the service app, served by uvicorn on 127.0.0.1 and driven by the
official SDK's client over streamable HTTP (issue 40): the bearer token decides whose memory a call
reaches, every tool answers as the library does, a second user's token cannot see the first
user's memory, and a read-only service refuses changes."""

from __future__ import annotations

from contextlib import asynccontextmanager
from datetime import timedelta

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from engine.service.app import create_app
from engine.testing.serve import ServiceThread, copy_demo, service_config
from mcp_kit import (
    CHARACTER, ERROR_CASES, ME, NOW, OTHER, READ_CASES, HeldClient, check_case, check_edits, check_error, check_read_only,
    MEMORY_SETTINGS, check_tools, write_memory,
)

SHARED, MINE, THEIRS = "shared-token-0123456789", "linzhou-token-0123456789", "alice-token-0123456789"
NO_UPSTREAM = "http://127.0.0.1:9/v1"  # the chat endpoint is not used here


def mcp_client(url: str, token: str) -> HeldClient:
    @asynccontextmanager
    async def connect():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
                yield client

    return HeldClient(connect)


@pytest.fixture(scope="module")
def service(tmp_path_factory, embedder):
    """The app with a shared token and a token per user, changes allowed, on a week of memory."""
    data = copy_demo(tmp_path_factory.mktemp("mcp-http"))
    overrides = {**MEMORY_SETTINGS, "service": {"allow_edit": True, "user_token_envs": {ME: "LZ_TOKEN", OTHER: "AL_TOKEN"}}}
    config = service_config(data, NO_UPSTREAM, token=SHARED, env={"LZ_TOKEN": MINE, "AL_TOKEN": THEIRS}, **overrides)
    app = create_app(config=config, embedder=embedder, env={"LZ_TOKEN": MINE, "AL_TOKEN": THEIRS})
    with ServiceThread(app) as server:
        orch = app.state.registry.get(CHARACTER)  # the library behind the service
        yield server, orch, write_memory(orch)


@pytest.fixture(scope="module")
def mine(service):
    with mcp_client(service[0].url, MINE) as client:
        yield client


class TestPerUserToken:
    """linzhou's own token: every tool against the library, the errors, the changes."""

    def test_lists_every_tool_with_typed_schemas(self, mine):
        check_tools(mine)

    @pytest.mark.parametrize("case", READ_CASES, ids=[c.id for c in READ_CASES])
    def test_answers_as_the_library_does(self, mine, service, case):
        check_case(mine, service[1], case)

    @pytest.mark.parametrize(("tool", "args", "argument"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
    def test_bad_arguments_are_protocol_errors_naming_them(self, mine, tool, args, argument):
        check_error(mine, tool, args, argument)

    def test_changes_reach_the_library_and_keep_history(self, mine, service):
        _, orch, facts = service
        check_edits(mine, orch, others_fact=facts[OTHER])


def test_a_second_users_token_cannot_see_the_first_users_memory(service):
    _, orch, facts = service
    mine_ids = {e.id for e in orch.admin.diary(ME, NOW - timedelta(days=30), NOW)}
    assert mine_ids
    with mcp_client(service[0].url, THEIRS) as theirs:
        own = theirs.call("search_memory", {"query": "吉他比赛"}).structured_content
        assert own["diary"] and "吉他" in own["diary"][0]["turn"]["user"]
        found = theirs.call("search_memory", {"query": "缆车 小白 猫 夜市 海报"}).structured_content
        assert not {h["turn"]["id"] for h in found["diary"]} & mine_ids
        assert {t["id"] for t in theirs.call("recall", {"time": "这周"}).structured_content["turns"]} & mine_ids == set()
        assert "桂花乌龙" not in str(theirs.call("list_facts", {}).structured_content)
        check_error(theirs, "search_memory", {"query": "缆车", "user": ME}, "user")
        check_error(theirs, "correct_fact", {"fact_id": facts[ME], "text": "偷改"}, "fact_id")
        with pytest.raises(MCPError, match="^user: this connection reaches only user 'alice'"):
            theirs.run(lambda c: c.read_resource(f"kioku://characters/{CHARACTER}/users/{ME}/facts"))
        own = theirs.run(lambda c: c.read_resource(f"kioku://characters/{CHARACTER}/users/{OTHER}/facts"))
        assert "吉他" in own.contents[0].text
    assert orch.admin.facts.get(ME, facts[ME]).text == "喜欢喝桂花乌龙"


def test_the_shared_token_names_its_user(service):
    """Three tokens make a multi-user deployment: the shared token must name the user, an unknown
    user is an error naming `user`, and a named user's answers are the library's."""
    _, orch, _ = service
    with mcp_client(service[0].url, SHARED) as shared:
        err = shared.error("list_facts", {})
        assert err.error.message.startswith("user") and "several people" in err.error.message
        check_error(shared, "list_facts", {"user": "nobody"}, "user")
        listed = shared.call("list_facts", {"user": OTHER}).structured_content
        assert [f["text"] for f in listed["facts"]] == [f.text for f in orch.admin.facts.list(OTHER)]


@pytest.mark.parametrize("token", [None, "wrong-token"], ids=["missing", "wrong"])
def test_no_valid_token_no_mcp(service, token):
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    r = httpx.post(f"{service[0].url}/mcp", json=body, headers=headers)
    assert r.status_code == 401 and r.headers["WWW-Authenticate"] == "Bearer"
    assert "token" in r.json()["error"]["message"]


def test_read_only_service_refuses_changes(tmp_path, embedder):
    data = copy_demo(tmp_path)
    overrides = {**MEMORY_SETTINGS, "service": {"allow_edit": False}}
    app = create_app(config=service_config(data, NO_UPSTREAM, token=SHARED, **overrides), embedder=embedder)
    fact = app.state.registry.get(CHARACTER).admin.facts.add(ME, "喜欢喝桂花乌龙").fact
    with ServiceThread(app) as server, mcp_client(server.url, SHARED) as client:
        check_read_only(client, fact.id)
        assert client.call("list_facts", {"user": ME}).structured_content["facts"][0]["id"] == fact.id

