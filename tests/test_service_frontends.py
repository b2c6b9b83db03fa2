"""Replays of what real chat frontends send (issue 13), through a real `kioku serve` process on
127.0.0.1 with `engine.testing.fake_openai` as the upstream LLM.

The fixtures in `tests/fixtures/frontends/` are modelled on the shared Open WebUI 0.12.4 recording
and on the default prompts of LibreChat, LobeChat and NextChat (SillyTavern's are real sessions now,
replayed by test_replay_recordings.py): one request a line,
with `{{reply:N}}` where the frontend would hold the reply it got to request N, and `{{token}}` for
the account's key. After every conversation turn the replay waits until the turn is in the user's
diary (the memory API says so), so a later request of another account would see it if it leaked.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import unquote
from zoneinfo import ZoneInfo

import httpx
import pytest
import yaml

from engine.testing.fake_openai import FakeOpenAIServer
from engine.orchestrator import MemoryOrchestrator
from engine.testing.serve import KiokuServe, copy_demo

FIXTURES = Path(__file__).parent / "fixtures" / "frontends"
TZ = ZoneInfo("Asia/Shanghai")
TASK_MARKERS = ("### Task:", "<chat_history>", "follow_ups", "Summarize the most important facts", "5-word-or-less",
                "四到五个字", "professional conversation summarizer", "Write your next reply from the point of view")


def load(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines() if line]


class Replay:
    """Sends fixture lines as the frontend would, filling in the replies it got and the account's token."""

    def __init__(self, url: str, tokens: dict[str, str]) -> None:
        self.url = url
        self.tokens = tokens
        self.replies: dict[int, str] = {}
        self.results: list[tuple[dict, httpx.Response, str]] = []
        self.http = httpx.Client(timeout=60)

    def fill(self, value, token: str):
        if isinstance(value, str):
            value = value.replace("{{token}}", token)
            return re.sub(r"\{\{reply:(\d+)\}\}", lambda m: self.replies[int(m.group(1))], value)
        if isinstance(value, list):
            return [self.fill(v, token) for v in value]
        if isinstance(value, dict):
            return {k: self.fill(v, token) for k, v in value.items()}
        return value

    def send(self, line: dict) -> tuple[httpx.Response, str]:
        token = self.tokens[line.get("account", "shared")]
        headers, body = self.fill(line["headers"], token), self.fill(line["body"], token)
        if body.get("stream"):
            with self.http.stream("POST", f"{self.url}/v1/chat/completions", headers=headers, json=body) as r:
                events = [json.loads(x[6:]) for x in r.iter_lines() if x.startswith("data: {")]
                text = "".join(c["delta"].get("content") or "" for e in events for c in e.get("choices", ()))
        else:
            r = self.http.post(f"{self.url}/v1/chat/completions", headers=headers, json=body)
            text = r.json()["choices"][0]["message"]["content"] if r.status_code == 200 else ""
        assert r.status_code == 200, f"line {line['seq']} ({line['note']}): {r.status_code} {r.text}"
        self.replies[line["seq"]] = text
        self.results.append((line, r, text))
        if r.headers["x-kioku-request"] == "conversation":
            self.wait_for_diary(r, headers, text)
        return r, text

    def wait_for_diary(self, r: httpx.Response, headers: dict, reply: str, timeout: float = 30.0) -> None:
        """Poll the memory API until this turn's reply is in the user's diary (the journal wrote it)."""
        user = unquote(r.headers["x-kioku-user"])
        today = datetime.now(TZ).date()
        params = {"start": (today - timedelta(days=1)).isoformat(), "end": (today + timedelta(days=1)).isoformat()}
        auth = {"Authorization": headers["authorization"]}
        deadline = datetime.now().timestamp() + timeout
        while datetime.now().timestamp() < deadline:
            diary = self.http.get(f"{self.url}/v1/characters/xiaoyue/users/{user}/diary", params=params, headers=auth)
            assert diary.status_code == 200, diary.text
            if any(reply.strip() and reply.strip() in e["assistant"] for e in diary.json()["entries"]):
                return
        raise AssertionError(f"the turn of {user} never reached the diary: {reply[:80]!r}")

    def close(self) -> None:
        self.http.close()


def user_files(data_dir: Path, user: str) -> dict[str, str]:
    root = data_dir / "agents/xiaoyue/users" / user
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in root.rglob("*") if p.is_file()}


def all_user_text(data_dir: Path) -> str:
    root = data_dir / "agents/xiaoyue/users"
    return "\n".join(p.read_text(encoding="utf-8") for p in root.rglob("*") if p.is_file())


def diary_turns(data_dir: Path, user: str) -> list[str]:
    """The user message of every diary entry of `user` (day files are YAML lists of entries)."""
    out = []
    for path in sorted((data_dir / "agents/xiaoyue/users" / user / "memorys").glob("*.yaml")):
        out += [str(item["user"]) for item in yaml.safe_load(path.read_text(encoding="utf-8")) or []]
    return out


@pytest.fixture
def upstream():
    with FakeOpenAIServer() as server:
        yield server


def serve(tmp_path: Path, upstream: FakeOpenAIServer, service: dict, env: dict) -> KiokuServe:
    data_dir = copy_demo(tmp_path / "data")
    config = {"data_dir": str(data_dir), "llm": {"backend": "openai", "base_url": upstream.base_url, "model": "fake-model",
                                                 "max_retries": 0, "timeout_s": 10},
              "memory_llm": {"backend": "none"}, "service": service}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return KiokuServe(path, env={"KIOKU_API_TOKEN": None, **env}, log_file=tmp_path / "serve.log")


def check_decisions(replay: Replay) -> None:
    for line, r, _ in replay.results:
        expect = line["expect"]
        assert r.headers["x-kioku-request"] == expect["request"], f"line {line['seq']} ({line['note']})"
        turn = expect.get("turn")
        if turn:
            assert r.headers["x-kioku-turn"] == turn, f"line {line['seq']} ({line['note']})"




@pytest.mark.timeout(300)
class TestOpenWebUI:
    def test_default_settings_with_two_tokens_keep_two_accounts_apart(self, tmp_path, upstream):
        """Open WebUI's default settings send no identity: with a per-user token for each account,
        each account has its own memory, and no task prompt is recorded anywhere."""
        (tmp_path / "tokens.yaml").write_text("ali: token-of-ali-0123456789\nbo: token-of-bo-0123456789\n", encoding="utf-8")
        (tmp_path / "tokens.yaml").chmod(0o600)
        server = serve(tmp_path, upstream, {"user_tokens_file": str(tmp_path / "tokens.yaml")}, {})
        lines = [line for line in load("open-webui") if line.get("account") in ("A", "B")]
        with server:
            replay = Replay(server.url, {"A": "token-of-ali-0123456789", "B": "token-of-bo-0123456789"})
            for line in lines:
                replay.send(line)
            replay.close()
        data_dir = tmp_path / "data"
        assert sorted(p.name for p in (data_dir / "agents/xiaoyue/users").iterdir()) == ["ali", "bo"]
        stored = all_user_text(data_dir)
        assert not [m for m in TASK_MARKERS if m in stored], "a housekeeping prompt reached a store"
        ali, bo = "\n".join(user_files(data_dir, "ali").values()), "\n".join(user_files(data_dir, "bo").values())
        assert "抹茶" in ali and "抹茶" not in bo and "阿丽" not in bo
        assert "缆车的故事" in bo and "缆车的故事" not in ali
        # What the upstream saw for bo's question about his name and food: nothing of ali's.
        question = next(b for b in upstream.requests if b.get("stream") and "你记得我叫什么" in json.dumps(b, ensure_ascii=False))
        assert "抹茶" not in json.dumps(question, ensure_ascii=False)
        check_decisions(replay)

    def test_forwarded_headers_keep_bob_and_alice_apart(self, tmp_path, upstream):
        """ENABLE_FORWARD_USER_INFO_HEADERS=True and kioku trusting them: each person and chat is named."""
        server = serve(tmp_path, upstream, {"trusted_headers": ["kioku", "openwebui"]}, {"KIOKU_API_TOKEN": "shared-token"})
        lines = [line for line in load("open-webui") if line.get("account") == "shared"]
        with server:
            replay = Replay(server.url, {"shared": "shared-token"})
            for line in lines:
                replay.send(line)
            replay.close()
        log_text = (tmp_path / "serve.log").read_text(encoding="utf-8")
        data_dir = tmp_path / "data"
        bob, alice = "81f91474-b5cc-41a4-bf1d-a6155d262183", "eccc559b-c3a7-4974-aa15-0f3be5f0a922"
        assert sorted(p.name for p in (data_dir / "agents/xiaoyue/users").iterdir()) == sorted([bob, alice])
        assert not [m for m in TASK_MARKERS if m in all_user_text(data_dir)]
        bob_text, alice_text = "\n".join(user_files(data_dir, bob).values()), "\n".join(user_files(data_dir, alice).values())
        assert "火锅" in bob_text and "火锅" not in alice_text
        assert "抹茶" in alice_text and "老码头" in alice_text and "抹茶" not in bob_text and "老码头" not in bob_text
        assert "housekeeping (open-webui task prompt)" in log_text and "conversation (new)" in log_text
        chats = {unquote(r.headers["x-kioku-chat"]) for line, r, _ in replay.results}
        assert "22b914b1-e5a1-4f87-a1c6-8d6194142815" in chats and "default" not in chats
        check_decisions(replay)
        assert diary_turns(data_dir, bob).count("昨天我们聊了什么？") == 1, "the regenerated message is recorded twice"

    def test_trusting_frontend_headers_refuses_requests_that_name_nobody(self, tmp_path, upstream):
        server = serve(tmp_path, upstream, {"trusted_headers": ["kioku", "openwebui"]}, {"KIOKU_API_TOKEN": "shared-token"})
        line = next(line for line in load("open-webui") if line.get("account") == "A" and line["body"].get("stream"))
        with server:
            r = httpx.post(f"{server.url}/v1/chat/completions", headers={"Authorization": "Bearer shared-token"},
                           json=line["body"], timeout=60)
        assert r.status_code == 400 and r.json()["error"]["code"] == "user_required"
        assert "X-OpenWebUI-User-Id" in r.json()["error"]["message"]
        assert upstream.requests == []

    def test_models_show_the_display_name_and_take_it_as_model(self, tmp_path, upstream):
        server = serve(tmp_path, upstream, {}, {"KIOKU_API_TOKEN": "shared-token"})
        auth = {"Authorization": "Bearer shared-token"}
        with server:
            models = httpx.get(f"{server.url}/v1/models", headers=auth, timeout=30).json()["data"]
            r = httpx.post(f"{server.url}/v1/chat/completions", headers=auth, timeout=60,
                           json={"model": "小月", "messages": [{"role": "user", "content": "你好"}]})
        assert [(m["id"], m["name"]) for m in models] == [("xiaoyue", "小月")]
        assert r.status_code == 200 and unquote(r.headers["x-kioku-character"]) == "xiaoyue"


@pytest.mark.timeout(300)
class TestOtherFrontends:
    @pytest.mark.parametrize("fixture", ["title-requests"])  # SillyTavern: its real sessions, test_replay_recordings.py
    def test_replay(self, tmp_path, upstream, fixture):
        server = serve(tmp_path, upstream, {}, {"KIOKU_API_TOKEN": "shared-token"})
        lines = load(fixture)
        with server:
            replay = Replay(server.url, {"shared": "shared-token"})
            for line in lines:
                replay.send(line)
            replay.close()
        check_decisions(replay)
        assert not [m for m in TASK_MARKERS if m in all_user_text(tmp_path / "data")]
        for (line, r, _), sent in zip(replay.results, upstream.requests, strict=True):
            if line["expect"]["request"] == "housekeeping":
                # Passed upstream as the frontend sent it: no persona, no memory.
                assert [m["content"] for m in sent["messages"]] == [m["content"] for m in replay.fill(line["body"], "")["messages"]]
            else:
                assert "月光书茶馆" in json.dumps(sent, ensure_ascii=False)  # the persona: memory was injected
