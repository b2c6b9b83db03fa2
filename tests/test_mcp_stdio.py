"""`kioku mcp` as a subprocess over stdio, driven by the official SDK's client (issue 40): every tool
answers as the library does for the same question, bad arguments are protocol errors naming the
argument, the configured user is the only one reachable, and a server without --allow-edit
refuses changes."""

from __future__ import annotations

import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import yaml

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from engine.config import load_config
from engine.orchestrator import MemoryOrchestrator
from engine.testing.serve import copy_demo
from mcp_kit import (
    CHARACTER, ERROR_CASES, ME, OTHER, READ_CASES, HeldClient, check_case, check_edits, check_error, check_read_only,
    check_tools, config_overrides, write_memory,
)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def world(tmp_path_factory, embedder):
    """The data folder with a week of memory, its config file, and an orchestrator of the test's
    own on it (the library the answers are checked against)."""
    root = tmp_path_factory.mktemp("mcp-stdio")
    data = copy_demo(root / "data")
    (root / "config.yaml").write_text(yaml.safe_dump(config_overrides(data), allow_unicode=True), encoding="utf-8")
    config = load_config(overrides=config_overrides(data), env={})
    with MemoryOrchestrator.from_config(CHARACTER, config=config, embedder=embedder) as orch:
        facts = write_memory(orch)
        yield root, orch, facts


def kioku_mcp(root: Path, *flags: str) -> HeldClient:
    """A held SDK client of `kioku mcp --config ... <flags>`, started as the client starts servers."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engine.cli", "mcp", "--config", str(root / "config.yaml"), *flags],
        env={"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", **{k: v for k, v in os.environ.items() if k == "TMPDIR"}},
        cwd=str(root),
    )

    @asynccontextmanager
    async def connect():
        with open(root / f"stderr{len(flags)}.log", "w", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                yield client

    return HeldClient(connect)


@pytest.fixture(scope="module")
def editing(world):
    root, _, _ = world
    with kioku_mcp(root, "--character", CHARACTER, "--user", ME, "--allow-edit") as client:
        yield client


class TestTools:
    """One `kioku mcp --allow-edit` process for the class: the read tools against the library, then
    the errors, then the changes."""

    def test_lists_every_tool_with_typed_schemas(self, editing):
        check_tools(editing)

    @pytest.mark.parametrize("case", READ_CASES, ids=[c.id for c in READ_CASES])
    def test_answers_as_the_library_does(self, editing, world, case):
        check_case(editing, world[1], case)

    @pytest.mark.parametrize(("tool", "args", "argument"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
    def test_bad_arguments_are_protocol_errors_naming_them(self, editing, tool, args, argument):
        check_error(editing, tool, args, argument)

    def test_only_the_configured_user_is_reachable(self, editing):
        check_error(editing, "search_memory", {"query": "吉他", "user": OTHER}, "user")
        found = editing.call("search_memory", {"query": "吉他比赛"}).structured_content
        assert "吉他比赛" not in str(found["diary"]) and "吉他" not in str(found["facts"])

    def test_resources_and_prompt(self, editing, world):
        orch = world[1]
        templates = {t.uri_template for t in editing.run(lambda c: c.list_resource_templates()).resource_templates}
        assert "kioku://characters/{character}/users/{user}/facts" in templates
        listed = editing.run(lambda c: c.read_resource("kioku://characters")).contents[0].text
        assert '"小月"' in listed
        persona = editing.run(lambda c: c.read_resource(f"kioku://characters/{CHARACTER}/persona")).contents[0].text
        assert "月光书茶馆" in persona and "{{user}}" not in persona
        facts = editing.run(lambda c: c.read_resource(f"kioku://characters/{CHARACTER}/users/{ME}/facts")).contents[0].text
        assert [f.text for f in orch.admin.facts.list(ME)][0] in facts
        prompt = editing.run(lambda c: c.get_prompt("with_memory", {"message": "还记得我喜欢喝什么吗？"}))
        assert "桂花乌龙" in prompt.messages[0].content.text and prompt.messages[0].role == "user"

    def test_changes_reach_the_library_and_keep_history(self, editing, world):
        _, orch, facts = world
        check_edits(editing, orch, others_fact=facts[OTHER])


def test_read_only_without_allow_edit(world):
    """No --allow-edit (and service.allow_edit off): every change is refused, naming the setting."""
    root, _, facts = world
    with kioku_mcp(root, "--user", ME) as client:  # the only character is the default
        check_read_only(client, facts[ME])
        assert client.call("list_facts", {}).structured_content["user"] == ME
