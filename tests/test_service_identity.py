"""Identity that cannot leak (issue 13 item 2): the documented order of sources, per-user tokens from
a file and from the environment, single-user mode, and the refusal to merge people into `default`
in a multi-user deployment. The pure resolution as a table; the tokens and the memory API through
uvicorn on 127.0.0.1."""

from __future__ import annotations

from urllib.parse import quote, unquote

import httpx
import pytest

from engine.config import ServiceConfig
from engine.errors import ConfigError
from engine.testing.fake_openai import FakeOpenAIServer
from engine.service.app import create_app
from engine.service.errors import ServiceError
from engine.service.identity import IdentityPolicy, Principal, TokenTable, chat_id, resolve
from engine.testing.serve import ServiceThread, copy_demo, service_config

U, C, OU, OC = "X-Kioku-User", "X-Kioku-Chat", "X-OpenWebUI-User-Id", "X-OpenWebUI-Chat-Id"


def policy(*, trusted=("kioku",), tokens=1, require=False) -> IdentityPolicy:
    table = TokenTable(b"s" if tokens else None, tuple((f"t{i}".encode(), f"u{i}") for i in range(max(tokens - 1, 0))))
    return IdentityPolicy.from_config(ServiceConfig(trusted_headers=list(trusted), require_user=require), table)


def headers(**values):
    names = {"u": U, "c": C, "ou": OU, "oc": OC}
    return {names[k]: v for k, v in values.items()}


@pytest.mark.parametrize(
    ("principal", "user_field", "metadata", "sent", "pol", "expected"),
    [(Principal("ali"), "bob", None, headers(u="carol"), policy(), ("ali", "token", "default", "default")),
     (Principal(None), "bob", None, headers(u="carol"), policy(), ("bob", "user-field", "default", "default")),
     (Principal(None), {"id": "小月迷", "name": "x"}, None, {}, policy(), ("小月迷", "user-field", "default", "default")),
     (Principal(None), None, None, headers(u="carol", c="c1"), policy(), ("carol", "x-kioku-user", "c1", "x-kioku-chat")),
     (Principal(None), None, None, headers(ou="owu-1", oc="chat-9"), policy(),
      ("default", "single-user", "default", "default")),
     (Principal(None), None, None, headers(ou="owu-1", oc="chat-9"), policy(trusted=("kioku", "openwebui")),
      ("owu-1", "x-openwebui-user-id", "chat-9", "x-openwebui-chat-id")),
     (Principal(None), None, {"chat_id": "m1"}, headers(u="carol", c="c1"), policy(),
      ("carol", "x-kioku-user", "m1", "metadata.chat_id")),
     (Principal(None), None, None, headers(u="carol", c="c1"), policy(trusted=("openwebui",)) , None),
     (Principal(None), None, None, {}, policy(tokens=0), ("default", "single-user", "default", "default")),
     (Principal(None), None, {"chat_id": "local:abc/1"}, {}, policy(), ("default", "single-user", chat_id("local:abc/1"),
                                                                        "metadata.chat_id"))],
    ids=["token-wins", "field-before-header", "field-object", "kioku-headers", "openwebui-untrusted",
         "openwebui-trusted", "metadata-chat-first", "kioku-untrusted-multi", "no-token-single-user", "odd-chat-id"],
)
def test_resolution_order(principal, user_field, metadata, sent, pol, expected):
    if expected is None:
        with pytest.raises(ServiceError, match="names no user"):
            resolve(principal, body_user=user_field, metadata=metadata, headers=sent, policy=pol)
        return
    who = resolve(principal, body_user=user_field, metadata=metadata, headers=sent, policy=pol)
    assert (who.user, who.user_source, who.chat, who.chat_source) == expected


@pytest.mark.parametrize(
    ("pol", "why"),
    [(policy(tokens=2), "2 tokens are configured"), (policy(trusted=("kioku", "openwebui")), "Open WebUI's identity"),
     (policy(require=True), "require_user")],
    ids=["two-tokens", "trusted-frontend", "require-user"],
)
def test_multi_user_deployments_refuse_requests_that_name_nobody(pol, why):
    with pytest.raises(ServiceError, match=why) as info:
        resolve(Principal(None), body_user=None, metadata=None, headers={}, policy=pol)
    assert info.value.status == 400 and info.value.code == "user_required"


def test_chat_ids_that_are_not_ids_get_a_stable_digest():
    assert chat_id("22b914b1-e5a1-4f87-a1c6-8d6194142815") == "22b914b1-e5a1-4f87-a1c6-8d6194142815"
    assert chat_id("local:x/y") == chat_id("local:x/y") != chat_id("local:x/z")
    assert chat_id("local:x/y").startswith("c-") and chat_id("../../etc").startswith("c-")


class TestTokenTable:
    def test_file_and_env(self, tmp_path):
        path = tmp_path / "tokens.yaml"
        path.write_text("ali: tok-a\n林舟: [tok-l1, tok-l2]\n", encoding="utf-8")
        table = TokenTable.from_config(
            ServiceConfig(user_tokens_file=path, user_token_envs={"bo": "BO_TOKEN"}), {"BO_TOKEN": "tok-b"})
        assert table.count == 4
        assert [table.match(t) for t in ("tok-a", "tok-l2", "tok-b", "nope")] == [
            Principal("ali"), Principal("林舟"), Principal("bo"), None]

    @pytest.mark.parametrize(
        ("text", "env", "words"),
        [("ali: same\nbo: same\n", {}, "one token is given to two users"),
         ("ali: ''\n", {}, "non-empty string"),
         ("../x: tok\n", {}, "is not allowed"),
         ("- tok\n", {}, "expected a mapping"),
         ("ali: tok\n", {"SHARED": "tok"}, "is the shared token")],
        ids=["duplicate", "empty", "bad-user", "not-a-mapping", "shared-reused"],
    )
    def test_bad_files_name_the_problem(self, tmp_path, text, env, words):
        path = tmp_path / "tokens.yaml"
        path.write_text(text, encoding="utf-8")
        config = ServiceConfig(user_tokens_file=path)
        if env:
            from pydantic import SecretStr

            config = config.model_copy(update={"token": SecretStr(env["SHARED"])})
        with pytest.raises(ConfigError, match=words):
            TokenTable.from_config(config, {})

    def test_missing_env_variable_is_an_error(self):
        with pytest.raises(ConfigError, match=r"\$BO_TOKEN .* is not set"):
            TokenTable.from_config(ServiceConfig(user_token_envs={"bo": "BO_TOKEN"}), {})


@pytest.fixture(scope="module")
def svc(tmp_path_factory, embedder):
    base = tmp_path_factory.mktemp("identity")
    data_dir = copy_demo(base / "data")
    tokens = base / "tokens.yaml"
    tokens.write_text("ali: ali-token-123456\n", encoding="utf-8")
    with FakeOpenAIServer() as upstream:
        config = service_config(data_dir, upstream.base_url, token="shared-token",
                                service={"user_tokens_file": str(tokens), "user_token_envs": {"小月迷": "FAN_TOKEN"}})
        app = create_app(config=config, embedder=embedder, env={"FAN_TOKEN": "fan-token-123456"})
        with ServiceThread(app) as server:
            yield server, upstream, data_dir


def bearer(token, **extra):
    return {"Authorization": f"Bearer {token}", **extra}


class TestOverHTTP:
    def chat(self, server, token, text, **fields):
        extra = fields.pop("headers", {})
        return httpx.post(f"{server.url}/v1/chat/completions", headers=bearer(token, **extra), timeout=30,
                          json={"model": "xiaoyue", "messages": [{"role": "user", "content": text}], **fields})

    def test_a_per_user_token_is_its_user_whatever_the_request_claims(self, svc):
        server, _, data_dir = svc
        r = self.chat(server, "ali-token-123456", "我是谁？", user="bo", headers={U: "mallory"})
        assert r.status_code == 200, r.text
        assert (unquote(r.headers["x-kioku-user"]), r.headers["x-kioku-user-source"]) == ("ali", "token")
        r = self.chat(server, "fan-token-123456", "晚上好")
        assert unquote(r.headers["x-kioku-user"]) == "小月迷"
        assert not (data_dir / "agents/xiaoyue/users/bo").exists() and not (data_dir / "agents/xiaoyue/users/mallory").exists()

    def test_shared_token_with_nobody_named_is_refused(self, svc):
        server, upstream, _ = svc
        before = len(upstream.requests)
        r = self.chat(server, "shared-token", "你好")
        assert r.status_code == 400 and r.json()["error"]["code"] == "user_required"
        assert "3 tokens are configured" in r.json()["error"]["message"]
        assert len(upstream.requests) == before
        assert self.chat(server, "shared-token", "你好", headers={U: quote("林舟")}).status_code == 200

    def test_memory_api_a_user_token_reaches_only_its_own_memory(self, svc):
        server, _, _ = svc
        base = f"{server.url}/v1/characters/xiaoyue/users"
        assert httpx.get(f"{base}/ali/facts", headers=bearer("ali-token-123456"), timeout=30).status_code == 200
        for path in ("bo/facts", "林舟/short-term", "小月迷/diary?start=2026-11-20"):
            r = httpx.get(f"{base}/{path}", headers=bearer("ali-token-123456"), timeout=30)
            assert r.status_code == 403 and r.json()["error"]["code"] == "not_your_user", path
        r = httpx.post(f"{base}/bo/prompt", headers=bearer("ali-token-123456"), json={"message": "x"}, timeout=30)
        assert r.status_code == 403
        assert httpx.get(f"{base}/bo/facts", headers=bearer("shared-token"), timeout=30).status_code == 200

    def test_unknown_tokens_are_refused(self, svc):
        server, _, _ = svc
        assert self.chat(server, "ali-token-12345", "x").status_code == 401
