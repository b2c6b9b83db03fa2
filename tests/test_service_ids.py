"""Ids of any script on every route (issue 12 item 1), through uvicorn on 127.0.0.1 with the official
`openai` client and raw httpx: the JSON `user` field, `X-Kioku-User` as percent-encoding, as RFC 8187
and as raw UTF-8 bytes all name the same user; response headers carry ids percent-encoded."""

from __future__ import annotations

from urllib.parse import quote, unquote

import httpx
import openai
import pytest
import yaml

from engine.testing.fake_openai import Delay
from engine.testing.serve import demo_service

TOKEN = "ids-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CHARACTERS = ["xiaoyue", "小月"]


@pytest.fixture(scope="module")
def svc(tmp_path_factory, embedder):
    data_dir = tmp_path_factory.mktemp("ids")
    with demo_service(data_dir, characters=CHARACTERS, token=TOKEN, embedder=embedder) as (server, upstream):
        yield server, upstream, data_dir


def history(data_dir, character, user):
    path = data_dir / "agents" / character / "users" / user / "history.yaml"
    if not path.exists():
        return []
    return [m["content"] for m in (yaml.safe_load(path.read_text(encoding="utf-8")) or [])]


def users(data_dir, character):
    root = data_dir / "agents" / character / "users"
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def send_user(how: str, user: str) -> tuple[dict, dict]:
    """(extra JSON fields, extra headers as bytes) that name `user` the way `how` says."""
    if how == "json":
        return {"user": user}, {}
    if how == "header-percent":
        return {}, {"X-Kioku-User": quote(user).encode()}
    if how == "header-rfc8187":
        return {}, {"X-Kioku-User": f"UTF-8''{quote(user)}".encode()}
    if how == "header-raw-utf8":
        return {}, {"X-Kioku-User": user.encode("utf-8")}
    raise AssertionError(how)


IDS = [("ascii", "alice"), ("latin1-range", "ü"), ("chinese", "林舟"), ("japanese", "ユーザー_1"), ("mixed", "小月-fan.2")]
HOW = ["json", "header-percent", "header-rfc8187", "header-raw-utf8"]


class TestChatWithAnyId:
    @pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
    @pytest.mark.parametrize("character", CHARACTERS)
    @pytest.mark.parametrize("how", HOW)
    @pytest.mark.parametrize(("label", "user"), IDS, ids=[i for i, _ in IDS])
    def test_every_way_of_naming_a_user_lands_in_that_user(self, svc, label, user, how, character, stream):
        server, _, data_dir = svc
        fields, headers = send_user(how, user)
        message = f"{label} {how} {character} {'s' if stream else 'p'}"
        body = {"model": character, "stream": stream, "messages": [{"role": "user", "content": message}], **fields}
        with httpx.Client(timeout=30) as c:
            r = c.post(f"{server.url}/v1/chat/completions", json=body, headers={**AUTH, **headers})
            text = r.text
        assert r.status_code == 200, text
        assert unquote(r.headers["x-kioku-user"]) == user
        assert unquote(r.headers["x-kioku-character"]) == character
        assert r.headers["x-kioku-user"].isascii()
        if stream:
            assert text.rstrip().endswith("data: [DONE]")
        assert message in history(data_dir, character, user)
        assert user in users(data_dir, character)

    def test_the_same_id_by_field_and_by_raw_header_is_one_user(self, svc):
        server, _, data_dir = svc
        with httpx.Client(timeout=30) as c:
            for i, how in enumerate(HOW):
                fields, headers = send_user(how, "ü")
                r = c.post(f"{server.url}/v1/chat/completions", headers={**AUTH, **headers},
                           json={"model": "xiaoyue", "messages": [{"role": "user", "content": f"one user, message number {i}"}], **fields})
                assert r.status_code == 200, r.text
        mine = [m for m in history(data_dir, "xiaoyue", "ü") if m.startswith("one user")]
        assert mine == [f"one user, message number {i}" for i in range(len(HOW))]
        assert "Ã¼" not in users(data_dir, "xiaoyue")

    def test_official_client_with_chinese_ids(self, svc):
        server, _, data_dir = svc
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=TOKEN, max_retries=0,
                               default_headers={"X-Kioku-Character": quote("小月"), "X-Kioku-User": quote("阿丽")})
        raw = client.chat.completions.with_raw_response.create(
            model="fake-upstream", messages=[{"role": "user", "content": "我叫阿丽。"}])
        assert raw.parse().choices[0].message.content == "echo: 我叫阿丽。"
        assert unquote(raw.headers["x-kioku-user"]) == "阿丽"
        chunks = client.chat.completions.create(model="小月", user="阿丽", stream=True,
                                                messages=[{"role": "user", "content": "晚安"}])
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "echo: 晚安"
        assert history(data_dir, "小月", "阿丽") == ["我叫阿丽。", "echo: 我叫阿丽。", "晚安", "echo: 晚安"]

    @pytest.mark.parametrize(
        ("header", "value", "words"),
        [("X-Kioku-User", "ü".encode("latin-1"), "not UTF-8"),
         ("X-Kioku-User", b"%E5%B0", "do not decode"),
         ("X-Kioku-User", b"abc%zz", "does not start a %XX escape"),
         ("X-Kioku-Character", b"\xff\xfe", "not UTF-8"),
         ("X-Kioku-User", quote("../etc").encode(), "not allowed")],
        ids=["latin1-bytes", "truncated-escape", "bad-escape", "garbage-character", "escaped-traversal"],
    )
    def test_unreadable_header_ids_are_refused_with_400(self, svc, header, value, words):
        server, upstream, _ = svc
        before = len(upstream.requests)
        r = httpx.post(f"{server.url}/v1/chat/completions", headers={**AUTH, header: value}, timeout=30,
                       json={"model": "xiaoyue", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 400, r.text
        assert words in r.json()["error"]["message"]
        assert len(upstream.requests) == before  # refused before the upstream is called


class TestEveryRouteWithChineseIds:
    """The memory API with a Chinese character id and a Chinese user id in the path."""

    def test_memory_api(self, svc):
        server, _, _ = svc
        base = f"{server.url}/v1/characters/小月/users/林舟"
        with httpx.Client(headers=AUTH, timeout=60) as c:
            r = c.post(f"{server.url}/v1/chat/completions",
                       json={"model": "小月", "user": "林舟", "messages": [{"role": "user", "content": "我今天吃了火锅"}]})
            assert r.status_code == 200, r.text
            assert [m["id"] for m in c.get(f"{server.url}/v1/models").json()["data"]] == sorted(CHARACTERS)
            assert c.post(f"{base}/prompt", json={"message": "缆车今天开吗？"}).status_code == 200
            short = c.get(f"{base}/short-term")
            assert short.status_code == 200 and "我今天吃了火锅" in [m["content"] for m in short.json()["messages"]]
            added = c.post(f"{base}/facts", json={"text": "喜欢吃火锅"})
            assert added.status_code == 201, added.text
            fid = added.json()["id"]
            assert c.put(f"{base}/facts/{fid}", json={"text": "最喜欢吃火锅"}).status_code == 200
            assert [f["text"] for f in c.get(f"{base}/facts").json()] == ["最喜欢吃火锅"]
            assert c.delete(f"{base}/facts/{fid}").status_code == 200
            diary = c.get(f"{base}/diary", params={"start": "2026-01-01", "end": "2026-12-31"})
            assert diary.status_code == 200, diary.text
            wb = c.get(f"{server.url}/v1/characters/小月/world-book")
            assert wb.status_code == 200 and wb.json()["entries"] > 0


class TestNothingRecordedTwice:
    def test_a_client_that_times_out_records_nothing_and_its_retry_records_once(self, svc):
        """A plain request whose client gave up (a timeout) before the reply was sent records
        nothing, so the client's retry is the only recorded turn."""
        server, upstream, data_dir = svc
        started = server.done.count
        upstream.push(Delay(1.5, "late reply"))
        body = {"model": "xiaoyue", "user": "重试", "messages": [{"role": "user", "content": "在吗？我想跟你说件事。"}]}
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{server.url}/v1/chat/completions", headers=AUTH, json=body, timeout=0.5)
        assert server.done.wait_for(started + 1), "the server never finished the abandoned request"
        assert history(data_dir, "xiaoyue", "重试") == []
        r = httpx.post(f"{server.url}/v1/chat/completions", headers=AUTH, json=body, timeout=30)
        assert r.status_code == 200
        assert history(data_dir, "xiaoyue", "重试") == ["在吗？我想跟你说件事。", "echo: 在吗？我想跟你说件事。"]
