"""One connection for every character and persona (issue 38 item 2): the names a request tells,
from headers (newer SillyTavern fills them from its macros) or from a known frontend's prompt shape
(SillyTavern 1.12's default main prompt), select the character and name the user in the prompt."""

from __future__ import annotations

from urllib.parse import unquote

import httpx
import pytest

from engine.service.app import create_app
from engine.service.speakers import SHAPES, speakers
from engine.testing.fake_openai import FakeOpenAIServer
from engine.testing.serve import ServiceThread, copy_demo, service_config

ST_PROMPT = "Write 小月's next reply in a fictional chat between 小月 and 林舟."


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_each_shape_reads_its_example(shape):
    told = speakers([shape.example], character_header=None, user_header=None)
    assert told.character and told.user and told.source == shape.name


@pytest.mark.parametrize(
    ("system", "char_header", "user_header", "expected"),
    [([ST_PROMPT], None, None, ("小月", "林舟")),
     (["Write Seraphina's next reply in a fictional chat between Seraphina and Ann Lee. Stay in character."],
      None, None, ("Seraphina", "Ann Lee")),
     ([ST_PROMPT], "xiaoyue", "阿丽", ("xiaoyue", "阿丽")),
     ([ST_PROMPT], None, "{{user}}", ("小月", "林舟")),
     (["你是小月。"], None, None, (None, None)),
     (["Write a poem about 小月 and 林舟."], None, None, (None, None))],
    ids=["sillytavern-default", "english-names", "headers-first", "unexpanded-macro", "no-shape", "look-alike"],
)
def test_names_the_request_tells(system, char_header, user_header, expected):
    told = speakers(system, character_header=char_header, user_header=user_header)
    assert (told.character, told.user) == expected


@pytest.fixture
def svc(tmp_path, embedder):
    data_dir = copy_demo(tmp_path / "data")
    with FakeOpenAIServer() as upstream:
        app = create_app(config=service_config(data_dir, upstream.base_url), embedder=embedder)
        with ServiceThread(app) as server:
            yield server, upstream


def test_sillytavern_persona_is_the_user_in_the_prompt_and_its_character_is_selected(svc):
    """The model names no character; SillyTavern's main prompt names 小月 (the demo character's
    display name) and the persona 林舟, which replaces the character file's user name (旅人)."""
    server, upstream = svc
    body = {"model": "gpt-4o", "user": "lin", "stream": False,
            "messages": [{"role": "system", "content": ST_PROMPT}, {"role": "assistant", "content": "欢迎光临～"},
                         {"role": "user", "content": "晚上好～今天又下雨了，我刚下班。"}]}
    r = httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=60)
    assert r.status_code == 200, r.text
    assert r.headers["x-kioku-character"] == "xiaoyue"
    sent = "\n".join(m["content"] for m in upstream.requests[-1]["messages"] if m["role"] == "system")
    assert "林舟" in sent and "旅人" not in sent
    assert upstream.requests[-1]["model"] == "gpt-4o"


CARD = "墨白是城南旧书铺的老板，三十来岁，话不多，记得每本书的来历。"


def st_body(character: str, user: str = "林舟") -> dict:
    return {"model": "gpt-4o", "user": "lin", "stream": False,
            "messages": [{"role": "system", "content": f"Write {character}'s next reply in a fictional chat between "
                                                       f"{character} and {user}."},
                         {"role": "system", "content": CARD}, {"role": "system", "content": "[Start a new Chat]"},
                         {"role": "assistant", "content": "随便看看，书都不贵。"},
                         {"role": "user", "content": "老板，有没有关于雾川镇的旧地方志？"}]}


@pytest.mark.parametrize(("switch", "tokens", "created"),
                         [("auto", 0, True), ("on", 0, True), ("off", 0, False), ("auto", 2, False)],
                         ids=["auto-single-user", "on", "off", "auto-several-users"])
def test_an_unknown_sillytavern_character_is_created_behind_the_switch(tmp_path, embedder, switch, tokens, created):
    """The card text SillyTavern sends becomes the new character's setting; the persona its user."""
    data_dir = copy_demo(tmp_path / "data")
    env = {f"TOK{i}": f"token-{i}-0123456789" for i in range(tokens)}
    service = {"create_characters": switch, "default_character": "xiaoyue",
               **({"user_token_envs": {f"u{i}": f"TOK{i}" for i in range(tokens)}} if tokens else {})}
    with FakeOpenAIServer() as upstream:
        config = service_config(data_dir, upstream.base_url, env=env, service=service)
        with ServiceThread(create_app(config=config, embedder=embedder, env=env)) as server:
            auth = {"Authorization": f"Bearer {env['TOK0']}"} if tokens else {}
            r = httpx.post(f"{server.url}/v1/chat/completions", json=st_body("墨白"), headers=auth, timeout=60)
            assert r.status_code == 200, r.text
            sent = "\n".join(m["content"] for m in upstream.requests[-1]["messages"] if m["role"] == "system")
    folder = data_dir / "agents" / "墨白"
    assert folder.joinpath("character.yaml").is_file() is created
    if created:
        assert unquote(r.headers["x-kioku-character"]) == "墨白"
        assert CARD in sent and "林舟" in sent and "[Start a new Chat]" not in folder.joinpath("character.yaml").read_text("utf-8")
    else:
        assert r.headers["x-kioku-character"] == "xiaoyue"


@pytest.mark.parametrize("sent_by_client", [False, True], ids=["kioku-injects-it", "client-sent-it"])
def test_lore_the_client_already_sent_is_not_injected_twice(tmp_path, embedder, sent_by_client):
    """With `client_system: append` the frontend's own lore stays in the prompt; the world-book
    entry it already holds is not injected a second time."""
    lore = "阿黄是茶馆里的橘猫，胖乎乎的，最喜欢趴在旧书堆上晒太阳，怕打雷。"
    data_dir = copy_demo(tmp_path / "data")
    body = st_body("小月")
    body["messages"][1]["content"] = CARD + ("\n" + lore if sent_by_client else "")
    body["messages"][-1]["content"] = "阿黄今天怎么没趴在书堆上？"
    with FakeOpenAIServer() as upstream:
        config = service_config(data_dir, upstream.base_url, service={"client_system": "append"})
        with ServiceThread(create_app(config=config, embedder=embedder)) as server:
            r = httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=60)
            assert r.status_code == 200, r.text
            sent = "\n".join(m["content"] for m in upstream.requests[-1]["messages"] if m["role"] == "system")
    assert sent.count(lore) == 1


@pytest.mark.parametrize("texts, field, want", [
    # SillyTavern's story string: each card field in its own shape, the rest is the setting.
    (["墨白是书铺老板。", "[墨白's personality: 话不多，记性好]", "[Start a new Chat]"],
     "personality", "话不多，记性好"),
    (["墨白是书铺老板。", "[墨白's personality: 话不多]", "[Start a new Chat]"], "settings", "墨白是书铺老板。"),
    (["Ann keeps the lighthouse.", "[Circumstances and context of the dialogue: a storm night]"],
     "settings", "Ann keeps the lighthouse.\n\na storm night"),
    (["Ann keeps the lighthouse.", "[Ann's personality: warm, chatty]"], "language", "en"),
    (["墨白是书铺老板。"], "language", None),
])
def test_a_created_character_takes_each_card_line_to_its_field(texts, field, want):
    from engine.service.speakers import CARD_LINES, Speakers, character_from

    assert all(c.pattern.match(c.example) for c in CARD_LINES)
    made = character_from(Speakers("墨白" if "墨白" in texts[0] else "Ann", "林舟", "headers"), texts)
    got = made.config.get("language") if field == "language" else getattr(made, field)
    assert got == want
    assert made.user_name == "林舟"
