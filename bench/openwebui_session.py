"""A real Open WebUI session against a real `kioku serve`, driven in headless Chromium; then the
same checks as `bench/replay_frontend.py` on what kioku stored. Run by hand (Open WebUI is ~3 GB):

    python3.11 -m venv /work/owui && /work/owui/bin/pip install torch==2.13.0 && /work/owui/bin/pip install open-webui
    PYTHONPATH=$PWD .venv/bin/python bench/openwebui_session.py --open-webui /work/owui/bin/open-webui --keep /tmp/owui-session

What runs, all on 127.0.0.1 and offline: `engine.testing.fake_openai` as the upstream LLM; `kioku serve` with
`service.trusted_headers: [kioku, openwebui]` and a token; a small recording proxy in front of it
(every request Open WebUI sends is written as a recording line `{seq, t, path, headers, body,
status}` with the Authorization and e-mail headers redacted, the same format as
shared/frontends/, so `bench/replay_frontend.py` can replay it); Open WebUI (`OFFLINE_MODE`,
`ENABLE_FORWARD_USER_INFO_HEADERS=true`, auth on, a fresh `DATA_DIR`, no Ollama, the proxy as its
OpenAI connection); and Debian's chromium driven by Playwright (fresh profile).

The session, as a person would click it: sign up the admin; chat three turns in one chat;
regenerate the last reply; open a new chat and chat two turns; the admin adds a second account
(what Admin Panel -> Users -> Add User sends: sign-up closes once an admin exists); sign in as it
and chat two turns. Open WebUI sends its title, tag and follow-up requests to the same model meanwhile.

Then, with everything stopped, the stores are read through the library and checked: every
request answered 200; no housekeeping turn recorded; each Open WebUI account is one kioku user and
their memories are disjoint; the regenerated reply recorded once; the admin's two chats have
separate windows. Exits 1 when a check fails; screenshots of each step go to the kept folder.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


sys.path.insert(0, str(Path(__file__).resolve().parent))

from frontend_kit import CHROMIUM_ARGS, RecordingProxy, ServerProcess  # noqa: E402
from replay_frontend import (  # noqa: E402
    TOKEN, Exchange, Report, check_all, check_prompts, chats_by_user, read_stores, spoken, write_config,
)

from engine.testing.fake_openai import FakeOpenAIServer  # noqa: E402
from engine.testing.serve import KiokuServe, free_port  # noqa: E402

CHARACTER = "xiaoyue"
PASSWORD = "kioku-session-Pa55"


# -- the upstream and the recording proxy -------------------------------------------------------


def upstream_rule() -> Any:
    """Conversation requests (kioku's prompt starts with the persona) get a numbered reply that
    quotes the message; Open WebUI's own task prompts get the JSON it asks for."""
    counter = itertools.count(1)

    def rule(body: dict[str, Any]) -> str:
        messages = body.get("messages") or []
        last = next((str(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
        if not any(m.get("role") == "system" for m in messages) and "JSON" in last:
            if "follow" in last.lower():
                return json.dumps({"follow_ups": ["然后呢？", "再讲讲吧"]}, ensure_ascii=False)
            if "tags" in last.lower():
                return json.dumps({"tags": ["Chat"]})
            return json.dumps({"title": "雨夜闲聊"}, ensure_ascii=False)
        return f"小月的回答 #{next(counter)}：你刚才说「{last.strip()[:40]}」，我记住了。"

    return rule


# -- Open WebUI ---------------------------------------------------------------------------------


class OpenWebUI:
    def __init__(self, executable: str, folder: Path, openai_url: str) -> None:
        self.port = free_port()
        self.folder = folder
        self.env = {**os.environ,
                    "DATA_DIR": str(folder / "data"), "WEBUI_SECRET_KEY": "kioku-session-secret",
                    "WEBUI_AUTH": "true", "ENABLE_SIGNUP": "true", "DEFAULT_USER_ROLE": "user",
                    "OPENAI_API_BASE_URL": openai_url, "OPENAI_API_KEY": TOKEN, "ENABLE_OLLAMA_API": "false",
                    "DEFAULT_MODELS": CHARACTER, "ENABLE_FORWARD_USER_INFO_HEADERS": "true",
                    # A connection's models are the admin's alone until shared; let every account use them.
                    "BYPASS_MODEL_ACCESS_CONTROL": "true",
                    "OFFLINE_MODE": "true", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                    "RAG_EMBEDDING_ENGINE": "openai", "ENABLE_WEB_SEARCH": "false", "ENABLE_CODE_INTERPRETER": "false",
                    "ANONYMIZED_TELEMETRY": "false", "DO_NOT_TRACK": "true", "SCARF_NO_ANALYTICS": "true",
                    "ENABLE_VERSION_UPDATE_CHECK": "false"}
        self.server = ServerProcess("open-webui", [executable, "serve", "--host", "127.0.0.1", "--port", str(self.port)],
                                    cwd=folder, env=self.env, log=folder / "open-webui.log")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 600) -> "OpenWebUI":
        self.folder.mkdir(parents=True, exist_ok=True)
        self.server.start(f"{self.url}/health", timeout=timeout)
        return self

    def stop(self) -> None:
        self.server.stop()


# -- the browser session ------------------------------------------------------------------------


class Session:
    """One account in its own browser context."""

    def __init__(self, browser: Any, base: str, proxy: RecordingProxy, shots: Path, name: str) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
        self.page = self.context.new_page()
        self.page.set_default_timeout(120_000)
        self.base = base
        self.proxy = proxy
        self.shots = shots
        self.name = name
        self.step = 0

    def shot(self, what: str) -> None:
        self.step += 1
        self.page.screenshot(path=str(self.shots / f"{self.name}-{self.step:02d}-{what}.png"))

    def sign_up(self, email: str) -> None:
        page = self.page
        page.goto(f"{self.base}/auth")
        page.wait_for_load_state("networkidle")
        start = page.get_by_text("Get started")
        if start.count() and start.first.is_visible():
            start.first.click()
        page.wait_for_selector("#email")
        if not page.locator("#name").is_visible():  # the sign-in form: switch to signing up
            page.get_by_role("button", name="Sign up").first.click()
            page.wait_for_selector("#name")
        page.fill("#name", self.name)
        self._submit_credentials(email, shot="signed-up")

    def add_user(self, name: str, email: str) -> None:
        """As the admin: what Admin Panel -> Users -> Add User sends (sign-up is closed once an admin exists)."""
        status, text = self.page.evaluate(
            """async ([name, email, password]) => {
                const r = await fetch('/api/v1/auths/add', {method: 'POST', headers: {'Content-Type': 'application/json',
                    Authorization: 'Bearer ' + localStorage.token}, body: JSON.stringify({name, email, password, role: 'user'})});
                return [r.status, await r.text()];
            }""", [name, email, PASSWORD])
        if status != 200:
            raise RuntimeError(f"adding the user {name} failed: {status} {text[:200]}")

    def sign_in(self, email: str) -> None:
        self.page.goto(f"{self.base}/auth")
        self.page.wait_for_selector("#email")
        self._submit_credentials(email, shot="signed-in")

    def _submit_credentials(self, email: str, *, shot: str) -> None:
        """Fill the auth form's email and password, submit, wait for the chat and take a screenshot."""
        page = self.page
        page.fill("#email", email)
        page.fill("#password", PASSWORD)
        page.locator("button[type=submit]").first.click()
        page.wait_for_selector("#chat-input")
        self.dismiss()
        self.shot(shot)

    def dismiss(self) -> None:
        """Close the changelog and similar dialogs that greet a new account."""
        for _ in range(3):
            time.sleep(1)
            button = self.page.get_by_role("button", name="Okay, Let's Go!")
            if button.count() and button.first.is_visible():
                button.first.click()
            else:
                self.page.keyboard.press("Escape")

    def new_chat(self) -> None:
        self.page.goto(f"{self.base}/")
        self.page.wait_for_selector("#chat-input")
        self.dismiss()

    def say(self, text: str) -> str:
        """Type `text`, send it, and wait until kioku answered it and Open WebUI's follow-up requests are done."""
        before = len(self.proxy.exchanges)
        box = self.page.locator("#chat-input")
        box.click()
        self.page.keyboard.insert_text(text)
        self.page.keyboard.press("Enter")
        reply = self.wait_for_reply(before, lambda said: said and said[-1] == ("user", text))
        self.shot("said")
        return reply

    def regenerate(self) -> str:
        before = len(self.proxy.exchanges)
        page = self.page
        last = page.locator("button[aria-label='Regenerate']").last
        last.scroll_into_view_if_needed()
        last.hover()
        last.click()
        time.sleep(1)
        again = page.get_by_text("Try Again", exact=True)
        if again.count() and again.first.is_visible():
            again.first.click()
        reply = self.wait_for_reply(before, lambda said: bool(said))
        self.shot("regenerated")
        return reply

    def wait_for_reply(self, before: int, wanted: Any, timeout: float = 300) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            new = self.proxy.exchanges[before:]
            done = [ex for ex in new if ex.line.body.get("stream") and wanted(spoken(ex.line.body))]
            if done and self.proxy.idle_for(8):
                ex = done[-1]
                if ex.status != 200:
                    raise RuntimeError(f"kioku answered {ex.status}: {ex.reply or ex.error_code}")
                marker = ex.reply.split("：")[0]
                self.page.get_by_text(marker).first.wait_for()
                return ex.reply
            time.sleep(0.5)
        self.shot("timeout")
        raise RuntimeError(f"no answer seen for {self.name} within {timeout:g}s")

    def close(self) -> None:
        self.context.close()


def run_session(base: str, proxy: RecordingProxy, shots: Path, chromium: str, report: Report) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # A fresh profile (Playwright's own temporary one), and a fresh context per account.
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            admin = Session(browser, base, proxy, shots, "alice")
            current = admin
            admin.sign_up("alice@example.com")
            for text in ("晚上好～今天雾川镇下了一整天雨，我刚下班。", "我叫阿丽，我最喜欢吃抹茶蛋糕。", "你记得我喜欢吃什么吗？"):
                report.say(f"  alice, chat 1: {text} -> {admin.say(text)}")
            report.say(f"  alice, chat 1: regenerate -> {admin.regenerate()}")
            admin.new_chat()
            for text in ("给我讲讲缆车的故事吧。", "我今天去老码头看了日落。"):
                report.say(f"  alice, chat 2: {text} -> {admin.say(text)}")
            admin.add_user("bob", "bob@example.com")
            admin.close()
            bob = current = Session(browser, base, proxy, shots, "bob")
            bob.sign_in("bob@example.com")
            for text in ("你好，我是阿博，我最喜欢吃火锅。", "昨天我们聊了什么？你记得我叫什么吗？"):
                report.say(f"  bob, chat 1: {text} -> {bob.say(text)}")
            bob.close()
        except Exception:
            current.shot("error")
            raise
        finally:
            browser.close()


# -- checks beyond the replay's -----------------------------------------------------------------


def check_session(exchanges: Sequence[Exchange], stores: dict, report: Report) -> None:
    chat_posts = [ex for ex in exchanges if ex.line.path.rstrip("/").endswith("/chat/completions")]
    named = sum(1 for ex in chat_posts if ex.line.headers.get("x-openwebui-user-id"))
    report.check(named == len(chat_posts), f"Open WebUI named the user in {named} of {len(chat_posts)} chat requests")
    accounts = {ex.line.headers.get("x-openwebui-user-id") for ex in chat_posts} - {None}
    report.check(len(accounts) == 2 and set(stores) == accounts,
                 f"{len(accounts)} Open WebUI accounts, kioku users {sorted(stores)}")
    windows = max(stores.values(), key=lambda s: len(s.windows)).windows if stores else {}
    chats = [w for chat, w in windows.items() if chat != "default" and w]
    overlap = len(chats) >= 2 and bool({t[1] for t in chats[0]} & {t[1] for t in chats[1]})
    report.check(len(chats) >= 2 and not overlap,
                 f"the admin's chats have separate windows ({' and '.join(str(len(w)) for w in chats)} turns, "
                 "no message of one in the other)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--open-webui", default="/work/owui/bin/open-webui", help="the open-webui executable")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--keep", type=Path, help="keep the data folders, logs, screenshots and recording here")
    args = parser.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="kioku-owui-")) if args.keep is None else args.keep
    root.mkdir(parents=True, exist_ok=True)
    (root / "shots").mkdir(exist_ok=True)
    recording = root / "open-webui-session.jsonl"
    recording.unlink(missing_ok=True)
    report = Report()
    kioku_folder = root / "kioku"
    kioku_folder.mkdir(exist_ok=True)
    try:
        with FakeOpenAIServer(rule=upstream_rule()) as upstream:
            config = write_config(kioku_folder, upstream_url=upstream.base_url, character=CHARACTER,
                                  trusted=["kioku", "openwebui"])
            with KiokuServe(config, env={"KIOKU_API_TOKEN": TOKEN}, log_file=kioku_folder / "serve.log") as kioku:
                proxy = RecordingProxy(kioku.url, recording).start()
                webui = OpenWebUI(args.open_webui, root / "open-webui", f"{proxy.url}/v1")
                report.say(f"starting Open WebUI on {webui.url} (its OpenAI connection: {proxy.url}/v1 -> {kioku.url})")
                started = time.monotonic()
                webui.start()
                report.say(f"  up after {time.monotonic() - started:.0f}s")
                try:
                    run_session(webui.url, proxy, root / "shots", args.chromium, report)
                finally:
                    webui.stop()
                    proxy.stop()
            prompts = [body for body in upstream.requests if "messages" in body]
        exchanges = proxy.exchanges
        report.say(f"\n== what kioku stored ({len(exchanges)} requests recorded to {recording})")
        stores = read_stores(config, CHARACTER, chats_by_user(exchanges))
        check_all([ex for ex in exchanges if ex.line.path.rstrip("/").endswith("/chat/completions")], stores, report,
                  expect_refused=False)
        check_prompts(prompts, exchanges, report)
        check_session(exchanges, stores, report)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"kept in {root}")
    report.say(f"{'FAILED' if report.failures else 'PASSED'}: {len(report.failures)} failed checks")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
