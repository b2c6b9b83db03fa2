"""The HTTP service with the official `openai` client: uvicorn on 127.0.0.1, a scripted upstream LLM
(a real OpenAI-compatible server), the demo character in a temp folder, the real embedder."""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import openai
import pytest
import yaml

from engine.config import load_config
from engine.errors import ConfigError
from engine.testing.fake_openai import Delay, Garbage, Status
from engine.service.app import create_app
from engine.service.errors import ServiceError
from engine.service.selection import select
from engine.service.run import check_bind, serve
from engine.testing.serve import ServiceThread

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "test-token-123"


def copy_demo(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "data/agents/xiaoyue", tmp_path / "agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    return tmp_path


def service_config(data_dir, base_url, *, token=TOKEN, **overrides):
    raw = {
        "data_dir": str(data_dir),
        "llm": {"backend": "openai", "base_url": base_url, "model": "fake-model", "max_retries": 0, "timeout_s": 2},
        "memory_llm": {"backend": "none"},
        "service": {"allow_edit": True},  # these tests change facts through the API
        **overrides,
    }
    return load_config(overrides=raw, env={"KIOKU_API_TOKEN": token} if token else {})


@pytest.fixture(scope="module")
def shared_service(tmp_path_factory, embedder):
    """One service for the module (opening the character takes seconds); tests use distinct users."""
    from engine.testing.fake_openai import FakeOpenAIServer

    data_dir = copy_demo(tmp_path_factory.mktemp("service"))
    with FakeOpenAIServer() as upstream:
        app = create_app(config=service_config(data_dir, upstream.base_url), embedder=embedder)
        with ServiceThread(app) as server:
            yield server.url, upstream, data_dir, app


@pytest.fixture
def svc(shared_service):
    """(service url, scripted upstream with no requests yet, data dir, app)."""
    shared_service[1].requests.clear()
    return shared_service


@pytest.fixture
def own_svc(tmp_path, openai_server, embedder):
    """A service of its own, for a test that changes the character's files."""
    data_dir = copy_demo(tmp_path)
    app = create_app(config=service_config(data_dir, openai_server.base_url), embedder=embedder)
    with ServiceThread(app) as server:
        yield server.url, openai_server, data_dir, app


def client(url, token=TOKEN, **kw):
    return openai.OpenAI(base_url=f"{url}/v1", api_key=token, max_retries=0, **kw)


def history(data_dir, user):
    path = data_dir / "agents/xiaoyue/users" / user / "history.yaml"
    if not path.exists():
        return []
    return [m["content"] for m in (yaml.safe_load(path.read_text(encoding="utf-8")) or [])]


def upstream_text(body):
    return "\n".join(m["content"] for m in body["messages"])


class TestChat:
    def test_reply_with_memory_injected_and_turn_recorded(self, svc):
        url, upstream, data_dir, _ = svc
        reply = client(url).chat.completions.create(
            model="xiaoyue", user="alice",
            messages=[{"role": "user", "content": "早上好"}, {"role": "assistant", "content": "早"},
                      {"role": "user", "content": "今天雾好大，缆车还开吗？"}],
        )
        assert reply.choices[0].message.content == "echo: 今天雾好大，缆车还开吗？"
        assert reply.model == "xiaoyue"
        sent = upstream.requests[-1]
        assert sent["model"] == "fake-model"
        text = upstream_text(sent)
        assert "月光书茶馆" in text  # the persona
        assert "每天早上七点到晚上十点运行" in text  # the world-book entry 缆车, triggered by the message
        # The client's history is the conversation (a frontend's edits and branches are followed);
        # only the new turn is recorded.
        assert [m["content"] for m in sent["messages"][-3:]] == ["早上好", "早", "今天雾好大，缆车还开吗？"]
        assert history(data_dir, "alice") == ["今天雾好大，缆车还开吗？", "echo: 今天雾好大，缆车还开吗？"]

        client(url).chat.completions.create(model="xiaoyue", user="alice",
                                            messages=[{"role": "user", "content": "那我明天再去。"}])
        window = [m["content"] for m in upstream.requests[-1]["messages"]]
        assert "今天雾好大，缆车还开吗？" in window  # the engine's own window carries the conversation

    def test_streaming_reply_is_relayed_and_recorded_after_the_last_chunk(self, svc):
        url, upstream, data_dir, _ = svc
        upstream.push("这是一段比较长的流式回答，分成好几块发送。")
        stream = client(url).chat.completions.create(
            model="xiaoyue/other-model", stream=True, user="bob",
            messages=[{"role": "user", "content": "给我讲讲雾川镇。"}],
        )
        chunks = [c.choices[0].delta.content or "" for c in stream if c.choices]
        assert len([c for c in chunks if c]) > 3
        assert "".join(chunks) == "这是一段比较长的流式回答，分成好几块发送。"
        assert upstream.requests[-1]["model"] == "other-model" and upstream.requests[-1]["stream"] is True
        assert history(data_dir, "bob") == ["给我讲讲雾川镇。", "这是一段比较长的流式回答，分成好几块发送。"]

    def test_user_and_character_headers(self, svc):
        """The character header names the character; the user header names the user when the body
        has no `user` field (the field comes first, see the README's identity order)."""
        url, upstream, data_dir, _ = svc
        c = client(url, default_headers={"X-Kioku-User": "carol", "X-Kioku-Character": "xiaoyue"})
        c.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "你好，今天雾好大"}])
        assert upstream.requests[-1]["model"] == "gpt-x"
        assert history(data_dir, "carol") == ["你好，今天雾好大", "echo: 你好，今天雾好大"]
        c.chat.completions.create(model="gpt-x", user="dora", messages=[{"role": "user", "content": "在吗？我刚下班"}])
        assert history(data_dir, "dora") == ["在吗？我刚下班", "echo: 在吗？我刚下班"]
        assert history(data_dir, "carol") == ["你好，今天雾好大", "echo: 你好，今天雾好大"]

    def test_sampling_parameters_are_forwarded(self, svc):
        url, upstream, _, _ = svc
        client(url).chat.completions.create(model="xiaoyue", messages=[{"role": "user", "content": "hi"}],
                                            temperature=0.2, max_tokens=33, stop=["\n\n"])
        sent = upstream.requests[-1]
        assert (sent["temperature"], sent["max_tokens"], sent["stop"]) == (0.2, 33, ["\n\n"])

    def test_client_system_messages_are_dropped_by_default(self, svc):
        url, upstream, _, _ = svc
        client(url).chat.completions.create(model="xiaoyue", messages=[
            {"role": "system", "content": "YOU ARE A PIRATE"}, {"role": "user", "content": "hi"}])
        assert "YOU ARE A PIRATE" not in upstream_text(upstream.requests[-1])


class TestSelection:
    """`select` is pure: the model name and the X-Kioku-Character header decide; a character is
    named by its id or its display name."""

    NAMES = {"xiaoyue": "小月", "小月": "小月", "bob": "Bob", "amy": "Twin", "ann": "Twin"}

    @pytest.mark.parametrize(
        ("model", "header", "expected"),
        [("xiaoyue", None, ("xiaoyue", None)),
         ("xiaoyue/gpt-4o", None, ("xiaoyue", "gpt-4o")),
         ("xiaoyue/org/model", None, ("xiaoyue", "org/model")),
         ("gpt-4o", "xiaoyue", ("xiaoyue", "gpt-4o")),
         ("xiaoyue/m", "xiaoyue", ("xiaoyue", "m")),
         ("Bob", None, ("bob", None)),
         ("Bob/gpt-4o", None, ("bob", "gpt-4o")),
         ("小月", None, ("小月", None)),
         ("gpt-4o", "Bob", ("bob", "gpt-4o")),
         ("Bob/m", "bob", ("bob", "m"))],
        ids=["id", "id-slash-model", "model-with-slash", "header-id", "header-and-model", "display-name",
             "display-name-slash-model", "id-before-name", "header-display-name", "header-id-model-name"],
    )
    def test_table(self, model, header, expected):
        sel = select(model, header, names=self.NAMES, default_character=None)
        assert (sel.character, sel.upstream_model) == expected

    def test_default_character_takes_unknown_models(self):
        sel = select("gpt-4o", None, names=self.NAMES, default_character="xiaoyue")
        assert (sel.character, sel.upstream_model) == ("xiaoyue", "gpt-4o")

    @pytest.mark.parametrize(("model", "status", "words"),
                             [("gpt-4o", 404, "names no character"), ("Twin", 400, "several characters (amy, ann)")],
                             ids=["unknown-model", "ambiguous-name"])
    def test_refusals(self, model, status, words):
        with pytest.raises(ServiceError, match=re.escape(words)) as info:
            select(model, None, names=self.NAMES, default_character=None)
        assert info.value.status == status


class TestErrors:
    """Failures answer with a status that says whose fault it is, and record nothing."""

    @pytest.mark.parametrize(
        ("action", "status", "words"),
        [(Status(500), 502, "failed (500)"), (Status(429), 429, "rate limiting"), (Status(401), 502, "credentials"),
         (Status(400, "bad param"), 400, "bad param"), (Delay(4.0), 504, "did not answer"),
         (Garbage(), 502, "not an OpenAI chat completion")],
        ids=["upstream-500", "upstream-429", "upstream-401", "upstream-400", "upstream-timeout", "upstream-garbage"],
    )
    def test_upstream_failures(self, svc, action, status, words):
        url, upstream, data_dir, _ = svc
        upstream.push(action)
        with pytest.raises(openai.APIStatusError) as info:
            client(url).chat.completions.create(model="xiaoyue", user="dave", messages=[{"role": "user", "content": "在吗"}])
        assert info.value.status_code == status
        assert words in info.value.message
        assert history(data_dir, "dave") == []

    def test_streaming_upstream_failure_before_the_first_chunk(self, svc):
        url, upstream, data_dir, _ = svc
        upstream.push(Status(503))
        with pytest.raises(openai.APIStatusError) as info:
            list(client(url).chat.completions.create(model="xiaoyue", user="erin", stream=True,
                                                     messages=[{"role": "user", "content": "在吗"}]))
        assert info.value.status_code == 502
        assert history(data_dir, "erin") == []

    def test_unknown_character_and_missing_user_message(self, svc):
        url, _, _, _ = svc
        with pytest.raises(openai.NotFoundError, match="names no character"):
            client(url).chat.completions.create(model="nobody", messages=[{"role": "user", "content": "x"}])
        with pytest.raises(openai.BadRequestError, match="no user message"):
            client(url).chat.completions.create(model="xiaoyue", messages=[{"role": "system", "content": "x"}])


class TestAuth:
    def test_missing_or_wrong_token_is_refused(self, svc):
        url, upstream, data_dir, _ = svc
        for token in ("wrong-token", ""):
            with pytest.raises(openai.AuthenticationError):
                client(url, token=token or "x").chat.completions.create(
                    model="xiaoyue", user="mallory", messages=[{"role": "user", "content": "hi"}])
        r = httpx.get(f"{url}/v1/characters/xiaoyue/world-book")
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert httpx.get(f"{url}/health").status_code == 200  # health stays open
        assert upstream.requests == [] and history(data_dir, "mallory") == []

    def test_refuses_to_bind_a_public_address_without_a_token(self, tmp_path, monkeypatch):
        monkeypatch.delenv("KIOKU_API_TOKEN", raising=False)
        path = tmp_path / "config.yaml"
        path.write_text("service:\n  host: 0.0.0.0\n", encoding="utf-8")
        with pytest.raises(ConfigError, match="refusing to listen on '0.0.0.0' without a token"):
            serve(path)
        with pytest.raises(ConfigError):
            serve(path, host="192.168.1.5")
        check_bind(load_config(path, env={"KIOKU_API_TOKEN": "t"}), "0.0.0.0")  # a token makes it fine
        check_bind(load_config(path, env={}), "127.0.0.1")
        check_bind(load_config(path, env={}), "::1")

    def test_cli_serve_refuses_too(self, tmp_path, monkeypatch, capsys):
        from engine.cli import main

        monkeypatch.delenv("KIOKU_API_TOKEN", raising=False)
        assert main(["serve", "--host", "0.0.0.0", "--data-dir", str(tmp_path)]) == 2
        assert "without a token" in capsys.readouterr().err


class TestLimits:
    def test_oversized_body_is_refused_with_413(self, svc):
        url, upstream, _, _ = svc
        big = "字" * 400_000  # 1.2 MB of UTF-8
        r = httpx.post(f"{url}/v1/chat/completions", headers={"Authorization": f"Bearer {TOKEN}"},
                       json={"model": "xiaoyue", "messages": [{"role": "user", "content": big}]})
        assert r.status_code == 413 and "max_body_bytes" in r.json()["error"]["message"]
        assert upstream.requests == []

    def test_chunked_oversized_body_is_refused_too(self, svc):
        url, _, _, _ = svc

        def body():
            for _ in range(30):
                yield b"x" * 50_000

        r = httpx.post(f"{url}/v1/chat/completions", headers={"Authorization": f"Bearer {TOKEN}"}, content=body())
        assert r.status_code == 413

    def test_cors_is_off_by_default_and_configurable(self, tmp_path, openai_server, embedder):
        from starlette.testclient import TestClient

        pre = {"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST"}
        data_dir = copy_demo(tmp_path)
        off = create_app(config=service_config(data_dir, openai_server.base_url), embedder=embedder)
        with TestClient(off) as tc:
            assert "access-control-allow-origin" not in tc.options("/v1/chat/completions", headers=pre).headers
        on = create_app(config=service_config(data_dir, openai_server.base_url,
                                              service={"cors_origins": ["http://localhost:3000"]}), embedder=embedder)
        with TestClient(on) as tc:
            r = tc.options("/v1/chat/completions", headers=pre)
            assert r.headers["access-control-allow-origin"] == "http://localhost:3000"


class SlowUpstream:
    """An SSE upstream that sends one chunk, waits, then either finishes or drops the connection."""

    def __init__(self, *, then: str) -> None:
        self.then = then
        self.done = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()

                def event(delta, finish=None):
                    data = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
                    raw = b"data: " + json.dumps(data).encode() + b"\n\n"
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(raw), raw))
                    self.wfile.flush()

                try:
                    event({"role": "assistant", "content": "第一块"})
                    time.sleep(1.0)
                    if outer.then == "drop":
                        self.wfile.write(b"5\r\nda")  # a torn chunk, then the connection goes away
                        self.wfile.flush()
                        self.connection.shutdown(2)
                    else:
                        event({"content": "第二块"})
                        event({}, "stop")
                        self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    pass
                finally:
                    outer.done.set()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class TestAbortedStreams:
    """A stream that does not complete records nothing half-done."""

    @pytest.fixture
    def slow(self, tmp_path, embedder, request):
        upstream = SlowUpstream(then=request.param)
        data_dir = copy_demo(tmp_path)
        app = create_app(config=service_config(data_dir, upstream.base_url), embedder=embedder)
        with ServiceThread(app) as server:
            yield server.url, upstream, data_dir, server
        upstream.stop()

    @pytest.mark.parametrize("slow", ["finish"], indirect=True)
    def test_client_going_away_mid_stream_records_nothing(self, slow):
        """Waits for the server to finish handling the request (not a fixed sleep): a server that keeps
        reading the upstream after the client left and records late is caught however late it is."""
        url, upstream, data_dir, server = slow
        finished = server.done.count
        with httpx.stream("POST", f"{url}/v1/chat/completions", headers={"Authorization": f"Bearer {TOKEN}"},
                          json={"model": "xiaoyue", "user": "frank", "stream": True,
                                "messages": [{"role": "user", "content": "讲个故事"}]}, timeout=30) as r:
            first = next(r.iter_lines())
            assert "第一块" in first
        assert server.done.wait_for(finished + 1), "the server never finished the abandoned request"
        assert upstream.done.wait(5)
        assert history(data_dir, "frank") == []

    @pytest.mark.parametrize("slow", ["drop"], indirect=True)
    def test_upstream_dropping_mid_stream_ends_with_an_error_event_and_records_nothing(self, slow):
        url, upstream, data_dir, _ = slow
        with httpx.stream("POST", f"{url}/v1/chat/completions", headers={"Authorization": f"Bearer {TOKEN}"},
                          json={"model": "xiaoyue", "user": "grace", "stream": True,
                                "messages": [{"role": "user", "content": "讲个故事"}]}, timeout=10) as r:
            lines = [line for line in r.iter_lines() if line]
        assert "第一块" in lines[0]
        assert "stream broke off" in lines[-1] and "[DONE]" not in "".join(lines)
        assert history(data_dir, "grace") == []

    @pytest.mark.parametrize("slow", ["finish"], indirect=True)
    def test_a_slow_stream_that_finishes_is_recorded(self, slow):
        url, _, data_dir, _ = slow
        stream = client(url).chat.completions.create(model="xiaoyue", user="heidi", stream=True,
                                                     messages=[{"role": "user", "content": "讲个故事"}])
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "第一块第二块"
        assert history(data_dir, "heidi") == ["讲个故事", "第一块第二块"]


class TestMemoryAPI:
    def headers(self):
        return {"Authorization": f"Bearer {TOKEN}"}

    def test_prompt_preview_shows_every_hit_and_why(self, svc):
        url, upstream, _, _ = svc
        r = httpx.post(f"{url}/v1/characters/xiaoyue/users/alice/prompt", headers=self.headers(), timeout=60,
                       json={"message": "缆车今天开吗？", "now": "2026-11-22T20:30:00"})
        assert r.status_code == 200, r.text
        body = r.json()
        wb = [h for h in body["hits"] if h["store"] == "world_book"]
        assert any("缆车" in h["reason"] for h in wb)
        assert body["messages"][-1] == {"role": "user", "content": "缆车今天开吗？"}
        assert body["now"].startswith("2026-11-22T20:30:00+08:00")
        assert upstream.requests == []  # a preview calls no LLM

    def test_changes_need_allow_edit(self, embedder, openai_server, tmp_path):
        """A read-only service (the default) refuses every change to memory with 403 and keeps nothing."""
        data_dir = copy_demo(tmp_path)
        app = create_app(config=service_config(data_dir, openai_server.base_url, service={"allow_edit": False}),
                         embedder=embedder)
        with ServiceThread(app) as server:
            base = f"{server.url}/v1/characters/xiaoyue/users/ivan/facts"
            refused = httpx.post(base, headers=self.headers(), timeout=60, json={"text": "讨厌吃香菜"})
            assert refused.status_code == 403 and refused.json()["error"]["code"] == "read_only"
            assert httpx.get(base, headers=self.headers(), timeout=60).json() == []

    def test_facts_crud(self, svc):
        url, _, data_dir, _ = svc
        base = f"{url}/v1/characters/xiaoyue/users/ivan/facts"
        added = httpx.post(base, headers=self.headers(), timeout=60, json={"text": "讨厌吃香菜"})
        assert added.status_code == 201, added.text
        fid = added.json()["id"]
        assert [f["text"] for f in httpx.get(base, headers=self.headers(), timeout=60).json()] == ["讨厌吃香菜"]
        updated = httpx.put(f"{base}/{fid}", headers=self.headers(), timeout=60, json={"text": "不吃香菜，也不吃葱"})
        assert updated.status_code == 200 and updated.json()["history"][0]["text"] == "讨厌吃香菜"
        assert "不吃香菜" in (data_dir / "agents/xiaoyue/users/ivan/core_mem.yml").read_text(encoding="utf-8")
        assert httpx.delete(f"{base}/{fid}", headers=self.headers(), timeout=60).status_code == 200
        assert httpx.get(base, headers=self.headers(), timeout=60).json() == []
        assert len(httpx.get(base, headers=self.headers(), timeout=60, params={"include_deleted": True}).json()) == 1
        missing = httpx.put(f"{base}/nope", headers=self.headers(), timeout=60, json={"text": "x"})
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "fact_not_found"
        blank = httpx.post(base, headers=self.headers(), timeout=60, json={"text": "   "})
        assert blank.status_code == 400

    def test_diary_by_date_range_after_chatting(self, svc):
        url, _, _, app = svc
        client(url).chat.completions.create(model="xiaoyue", user="judy", messages=[{"role": "user", "content": "我今天吃了火锅"}])
        app.state.registry.get("xiaoyue").flush(20)
        from datetime import datetime
        from zoneinfo import ZoneInfo

        today = datetime.now(ZoneInfo("Asia/Shanghai")).date()
        r = httpx.get(f"{url}/v1/characters/xiaoyue/users/judy/diary", headers=self.headers(), timeout=60,
                      params={"start": today.isoformat()})
        assert r.status_code == 200, r.text
        assert [e["user"] for e in r.json()["entries"]] == ["我今天吃了火锅"]
        bad = httpx.get(f"{url}/v1/characters/xiaoyue/users/judy/diary", headers=self.headers(), timeout=60,
                        params={"start": "2026-11-22", "end": "2026-11-01"})
        assert bad.status_code == 400 and "must be after" in bad.json()["error"]["message"]

    def test_short_term_state(self, svc):
        url, _, _, _ = svc
        client(url).chat.completions.create(model="xiaoyue", user="kim", messages=[{"role": "user", "content": "你好，今天雾好大"}])
        r = httpx.get(f"{url}/v1/characters/xiaoyue/users/kim/short-term", headers=self.headers(), timeout=60)
        assert [m["content"] for m in r.json()["messages"]] == ["你好，今天雾好大", "echo: 你好，今天雾好大"]
        client(url).chat.completions.create(model="xiaoyue", user="kim", messages=[{"role": "user", "content": "另一个聊天里的话"}],
                                            extra_body={"metadata": {"chat_id": "c2"}})
        other = httpx.get(f"{url}/v1/characters/xiaoyue/users/kim/short-term", headers=self.headers(), timeout=60,
                          params={"chat": "c2"})
        assert [m["content"] for m in other.json()["messages"]] == ["另一个聊天里的话", "echo: 另一个聊天里的话"]
        bad = httpx.get(f"{url}/v1/characters/xiaoyue/users/kim/short-term", headers=self.headers(), timeout=60,
                        params={"chat": "  "})
        assert bad.status_code == 400, bad.text

    def test_world_book_status_names_broken_files(self, own_svc):
        url, _, data_dir, _ = own_svc
        (data_dir / "agents/xiaoyue/data_base/坏.yaml").write_text("key: [unclosed\n", encoding="utf-8")
        r = httpx.get(f"{url}/v1/characters/xiaoyue/world-book", headers=self.headers(), timeout=60)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["entries"] > 0 and body["files"] == 3
        assert any(e["file"].endswith("坏.yaml") for e in body["errors"])

    def test_ids_are_validated_and_unknown_characters_404(self, svc):
        url, _, _, _ = svc
        r = httpx.get(f"{url}/v1/characters/xiaoyue/users/..%2F..%2Fetc/facts", headers=self.headers(), timeout=60)
        assert r.status_code in (400, 404)
        assert httpx.get(f"{url}/v1/characters/x..y/world-book", headers=self.headers(), timeout=60).status_code == 400
        r = httpx.get(f"{url}/v1/characters/nobody/world-book", headers=self.headers(), timeout=60)
        assert r.status_code == 404 and "available: xiaoyue" in r.json()["error"]["message"]

    def test_models_health_and_openapi(self, svc):
        url, _, _, _ = svc
        assert [m.id for m in client(url).models.list()] == ["xiaoyue"]
        assert httpx.get(f"{url}/health").json()["short_term_backend"] == "file"
        paths = httpx.get(f"{url}/openapi.json").json()["paths"]
        assert "/v1/chat/completions" in paths and "/v1/characters/{character}/users/{user}/facts" in paths
