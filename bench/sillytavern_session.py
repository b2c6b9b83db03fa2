"""A real SillyTavern session against a real `kioku serve`, driven in headless Chromium; then the
same checks as `bench/replay_frontend.py` on what kioku stored, and this session's own. Run by hand
(SillyTavern is a Node app, installed apart):

    mkdir -p /work/st && git --git-dir=SillyTavern.git archive 1.12.6 | tar -x -C /work/st && (cd /work/st && npm ci)
    # (a mirror that lacks the blobs of src/tokenizers/gemma.model, src/tokenizers/llama3.json and
    # public/lib/pdf.worker.mjs.map: add `-- . ':(exclude)<path>'` for each; this session uses none)
    PYTHONPATH=$PWD .venv/bin/python bench/sillytavern_session.py --sillytavern /work/st --keep /tmp/st-session

(1.11.x, whose one user's data lives in its `public/` folder, runs the same way: its settings are
put back to its defaults and its chats cleared first. 1.10 and older have no Custom
(OpenAI-compatible) source to connect with.)

What runs, all on 127.0.0.1 and offline: `engine.testing.fake_openai` as the upstream LLM; `kioku serve`
with `service.trusted_headers: [kioku, openwebui]`, `service.create_characters: on` and a token; a
small recording proxy in front of it (every request SillyTavern sends is written as a recording line
`{seq, t, path, headers, body, status}`, Authorization redacted, `GET /v1/models` with `body: null`:
the format of shared/frontends/, so `bench/replay_frontend.py` can replay it); SillyTavern's own
Node server (`node server.js`, its config.yaml written for the run: 127.0.0.1, a free port, the
whitelist 127.0.0.1, no basic auth, no browser launch, no auto-updates, a fresh data folder holding
two character cards, 小雪 and Ann); and Debian's chromium driven by Playwright (fresh profile).

The session, as a person would click it: API Connections -> Chat Completion -> Custom
(OpenAI-compatible): the proxy's URL, kioku's token, Model ID `xiaoyue`, Additional Parameters ->
Include Request Headers `X-Kioku-User: linzhou` (nothing else: one setting for the whole connection),
Connect, Test Message; Persona Management -> Name 林舟; with 小雪: six turns (one asks about
yesterday), Swipe the fourth reply, Continue it, Impersonate, Summarize (the Summarize extension,
"Summarize with: Main API", "Summarize now"); Start new chat twice, both beginning `你好呀`; with
Ann: three turns.

Then, with everything stopped, the stores are read through the library and checked, per kioku
character, with `replay_frontend`'s checks, and besides: every request answered 200; the test
message, the impersonation and the summary are housekeeping and recorded nowhere; every exchange
SillyTavern still shows (its chat files) is a stored turn; no reply that a swipe replaced is in
any later prompt kioku sent upstream; each SillyTavern chat its own kioku window, holding that
chat's turns and no other; each SillyTavern character its own kioku character (created by kioku,
named as in SillyTavern, holding its card's description and personality); the persona's name as the
user's in every conversation prompt kioku sent upstream.
Exits 1 when a check fails. Kept with `--keep DIR`: screenshots of each step (`DIR/shots/`), the
recording (`DIR/sillytavern-session.jsonl`, copied to `--save-recording PATH` when the session ran
through), what kioku answered each request and the prompt it sent upstream (`DIR/kioku-answers.jsonl`),
SillyTavern's data folder and log, kioku's data folder and log.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from frontend_kit import CHROMIUM_ARGS, RecordingProxy, ServerProcess  # noqa: E402
from replay_frontend import (  # noqa: E402
    TOKEN, Exchange, Report, _key, check_all, check_prompts, chats_by_user, read_stores,
    spoken, text_of, write_config,
)

from engine.formats.sillytavern.cards import card_png  # noqa: E402
from engine.testing.fake_openai import FakeOpenAIServer  # noqa: E402
from engine.testing.serve import KiokuServe, free_port  # noqa: E402

DEFAULT_CHARACTER = "xiaoyue"
"""kioku's demo character, what the connection's Model ID names (SillyTavern's prompt names the real one)."""
USER_ID = "linzhou"
PERSONA = "林舟"
CHAT_PATH = "/chat/completions"

CARDS = {
    "xiaoxue": {"name": "小雪",
                "description": "小雪是山城雾川镇老码头旁“雪见花店”的店主，二十岁出头。说话轻快，爱笑，"
                               "记性很好，客人说过的小事都会记在花店的小本子上。",
                "personality": "活泼、细心、有点爱操心",
                "first_mes": "欢迎光临雪见花店～外面雨大，快进来躲躲雨吧。"},
    "ann": {"name": "Ann",
            "description": "Ann is a cheerful barista at the Riverside Café in the foggy mountain town of Wuchuan. "
                           "She loves old jazz records and remembers every regular's order.",
            "personality": "warm, chatty, curious",
            "first_mes": "Hey there! Welcome to the Riverside Café. What can I get you today?"},
}
CHAT_1 = ["晚上好～今天雾川镇又下雨了，我刚下班，路过你的花店。",
          "我最喜欢桂花，不喜欢香菜。你记一下哦。",
          "昨天晚上我们聊了什么？",
          "By the way, do you remember what I left at your shop, and when does the cable car run?"]
CHAT_1_AFTER = ["我明天一早要去山顶拍日出，到时候记得提醒我带围巾。",
                "好的，那我先回家啦，晚安！"]
NEW_CHAT_FIRST = "你好呀"
NEW_CHATS = [["今天工作室加班到很晚，好累。"], ["我想去老码头看看陈伯摆渡。"]]
ANN_CHAT = ["Hi Ann! I just moved to Wuchuan last month, I work at a design studio.",
            "What would you recommend on a rainy evening like this?",
            "Do you remember where I said I work?"]

IMPERSONATE_MARKER = "Write your next reply from the point of view of"
SUMMARIZE_MARKER = "Summarize the most important facts"


# -- the upstream and the recording proxy -------------------------------------------------------


def upstream_rule() -> Callable[[dict[str, Any]], str]:
    """Conversation prompts (kioku's persona names the character: "你是小雪，…" / "You are Ann, …")
    get a numbered reply that quotes the message, or a numbered continuation when the prompt ends
    with the reply to continue; SillyTavern's own prompts (test message, impersonate, summary)
    reach the upstream as it sent them and get a numbered answer of their kind."""
    counter = itertools.count(1)

    def rule(body: dict[str, Any]) -> str:
        messages = [m for m in body.get("messages") or () if isinstance(m, dict)]
        n = next(counter)
        system = "\n".join(text_of(m.get("content")) for m in messages if m.get("role") == "system")
        last = next((text_of(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
        if IMPERSONATE_MARKER in system:
            return f"（{PERSONA}#{n}）我还想再坐一会儿，等雨停了再走。"
        if SUMMARIZE_MARKER in system:
            return f"摘要#{n}：{PERSONA}下班后来店里躲雨，说最喜欢桂花、不喜欢香菜，明早要去山顶拍日出。"
        named = re.search(r"你是(.{1,40}?)，正在和|You are (.{1,40}?), chatting with", system)
        if named is None:
            return f"OK#{n}"
        name = named.group(1) or named.group(2)
        if messages and messages[-1].get("role") == "assistant":
            return f"（续写#{n}）然后{name}把花束轻轻放在柜台上。"
        return f"{name}#{n}：你说「{last.strip()[:30]}」，我记下了。"

    return rule


class SessionProxy(RecordingProxy):
    """`RecordingProxy` that also records GETs (`body: null`, like shared/frontends/) and keeps, for
    each chat request, the prompt kioku sent upstream for it (`Exchange.prompt`)."""

    record_gets = True

    def __init__(self, target: str, record_to: Path, upstream: FakeOpenAIServer) -> None:
        super().__init__(target, record_to)
        self.upstream = upstream

    def _opened(self) -> int:
        return len(self.upstream.requests)

    def _annotate(self, exchange: Exchange, opened: int) -> None:
        sent_up = [b for b in self.upstream.requests[opened:] if "messages" in b]
        exchange.prompt = _prompt_for(exchange.line.body, sent_up)

    def chats(self) -> list[Exchange]:
        return [ex for ex in self.exchanges if ex.line.path.rstrip("/").endswith(CHAT_PATH)]


def _prompt_for(body: dict[str, Any], sent_up: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Of the upstream requests made while this request was open, the one for it: the last that
    ends with the same user message (SillyTavern sends one request at a time; this makes sure)."""
    said = spoken(body)
    last_user = next((t for role, t in reversed(said) if role == "user"), None)
    for prompt in reversed(sent_up):
        theirs = next((t for role, t in reversed(spoken(prompt)) if role == "user"), None)
        if last_user is None or (theirs is not None and _key(theirs) == _key(last_user)):
            return prompt
    return sent_up[-1] if sent_up else None


# -- SillyTavern --------------------------------------------------------------------------------


def card_doc(card: dict[str, Any]) -> dict[str, Any]:
    """A character card as SillyTavern 1.12 keeps one in its PNG: the V1 fields at the top, the V2
    card under `data` (written into the PNG by kioku's own `cards.card_png`)."""
    name = card["name"]
    data = {"name": name, "description": card["description"], "personality": card["personality"], "scenario": "",
            "first_mes": card["first_mes"], "mes_example": "", "creator_notes": "", "system_prompt": "",
            "post_history_instructions": "", "alternate_greetings": [], "tags": [], "creator": "kioku bench",
            "character_version": "1", "extensions": {"talkativeness": "0.5", "fav": False, "world": "",
                                                     "depth_prompt": {"prompt": "", "depth": 4, "role": "system"}}}
    v1 = {k: data[k] for k in ("name", "description", "personality", "scenario", "first_mes", "mes_example")}
    return {**v1, "creatorcomment": "", "avatar": "none", "chat": f"{name} - 2025-01-01@00h00m00s",
            "talkativeness": "0.5", "fav": False, "tags": [], "spec": "chara_card_v2", "spec_version": "2.0",
            "data": data, "create_date": "2025-01-01@00h00m00s"}


class SillyTavern:
    """SillyTavern's Node server (`node server.js` in its folder) on a free 127.0.0.1 port with a
    fresh data folder. Its config.yaml sits in its own folder (server.js reads no other): written
    for the run, the previous one put back on stop."""

    def __init__(self, home: Path, folder: Path, node: str = "node") -> None:
        self.home = home
        self.folder = folder
        self.port = free_port()
        self.node = node
        self.server: ServerProcess | None = None
        self.saved_config: bytes | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def legacy(self) -> bool:
        """Before 1.12 there is no `dataRoot`: the one user's data lives in the app's `public/`."""
        return "dataRoot" not in (self.home / "default" / "config.yaml").read_text(encoding="utf-8")

    @property
    def user_dir(self) -> Path:
        return self.home / "public" if self.legacy else self.folder / "data" / "default-user"

    def prepare(self, cards: dict[str, dict[str, Any]]) -> None:
        """A fresh data folder holding the character cards (a legacy `public/` gets the default
        settings back and loses its chats, as after its install)."""
        if self.legacy:
            shutil.copyfile(self.home / "default" / "settings.json", self.user_dir / "settings.json")
            shutil.rmtree(self.user_dir / "chats", ignore_errors=True)
        characters = self.user_dir / "characters"
        characters.mkdir(parents=True, exist_ok=True)
        for stem, card in cards.items():
            (characters / f"{stem}.png").write_bytes(card_png(card_doc(card), None))

    def start(self, timeout: float = 180) -> "SillyTavern":
        config_path = self.home / "config.yaml"
        self.saved_config = config_path.read_bytes() if config_path.exists() else None
        config = yaml.safe_load((self.home / "default" / "config.yaml").read_text(encoding="utf-8"))
        config.update({"dataRoot": str(self.folder / "data"), "listen": False, "port": self.port,
                       "protocol": {"ipv4": True, "ipv6": False}, "whitelistMode": True,
                       "whitelist": ["127.0.0.1", "::1"], "basicAuthMode": False, "enableUserAccounts": False,
                       "autorun": False, "enableExtensionsAutoUpdate": False, "enableDownloadableTokenizers": False,
                       "enableServerPlugins": False})
        config_path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
        self.folder.mkdir(parents=True, exist_ok=True)
        self.server = ServerProcess("SillyTavern", [self.node, "server.js"], cwd=self.home,
                                    env={**os.environ, "NODE_ENV": "production"}, log=self.folder / "sillytavern.log")
        self.server.start(self.url, timeout=timeout, poll=0.5)
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        config_path = self.home / "config.yaml"
        if self.saved_config is not None:
            config_path.write_bytes(self.saved_config)

    def chats(self) -> dict[str, list[tuple[str, str]]]:
        """What SillyTavern shows: per chat file ("<character folder>/<chat>"), its exchanges (user
        message, the reply shown after it), oldest first (greetings and system messages are no exchange)."""
        out = {}
        for path in sorted((self.user_dir / "chats").glob("*/*.jsonl")):
            messages = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()[1:] if x.strip()]
            messages = [m for m in messages if not m.get("is_system")]
            pairs = [(messages[i - 1]["mes"], m["mes"]) for i, m in enumerate(messages)
                     if i and not m.get("is_user") and messages[i - 1].get("is_user")]
            out[f"{path.parent.name}/{path.stem}"] = pairs
        return out


# -- the browser session ------------------------------------------------------------------------


class Session:
    """One person clicking through SillyTavern; a screenshot after each step."""

    def __init__(self, context: Any, base: str, proxy: SessionProxy, shots: Path, report: Report) -> None:
        self.context = context
        self.page = context.pages[0] if context.pages else context.new_page()
        self.page.set_default_timeout(60_000)
        self.base = base
        self.proxy = proxy
        self.shots = shots
        self.report = report
        self.step = 0

    def shot(self, what: str) -> None:
        self.step += 1
        self.page.screenshot(path=str(self.shots / f"{self.step:02d}-{what}.png"))

    # -- waiting

    def wait_idle(self, seconds: float = 1.5, timeout: float = 120) -> None:
        """Until no request is open at the proxy and SillyTavern is not generating."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            generating = self.page.evaluate("() => { const s = document.querySelector('#mes_stop');"
                                            " return !!s && getComputedStyle(s).display !== 'none'; }")
            if not generating and self.proxy.idle_for(seconds):
                return
            time.sleep(0.3)
        raise RuntimeError("SillyTavern still busy")

    def wait_request(self, before: int, wanted: Callable[[Exchange], bool], what: str, timeout: float = 120) -> Exchange:
        """The first chat request after `before` that `wanted` picks, once it is answered and all is quiet."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [ex for ex in self.proxy.chats()[before:] if wanted(ex)]
            if found:
                self.wait_idle()
                ex = found[0]
                if ex.status != 200:
                    raise RuntimeError(f"{what}: kioku answered {ex.status}: {ex.error_code}")
                return ex
            time.sleep(0.3)
        self.shot("timeout")
        raise RuntimeError(f"{what}: no request seen within {timeout:g}s")

    def wait_text(self, selector: str, text: str, timeout: float = 30) -> None:
        """Until the last element `selector` matches shows (or holds, for a text field) `text`."""
        self.page.wait_for_function(
            """([selector, text]) => { const all = document.querySelectorAll(selector); const el = all[all.length - 1];
                   return !!el && ((el.value ?? '') + el.innerText).includes(text); }""",
            arg=[selector, text], timeout=timeout * 1000)

    def last_reply(self) -> str:
        return self.page.evaluate("() => { const all = document.querySelectorAll('#chat .mes[is_user=\"false\"] .mes_text');"
                                  " return all.length ? all[all.length - 1].innerText : ''; }")

    # -- the top bar's drawers

    def open_drawer(self, button: str) -> None:
        """Open a top-bar drawer (`#<button> .drawer-toggle`) unless it is open."""
        content = self.page.locator(f"#{button} .drawer-content").first
        if not content.is_visible():
            self.page.locator(f"#{button} .drawer-toggle").first.click()
            content.wait_for(state="visible")
            time.sleep(0.5)

    def close_drawer(self, button: str) -> None:
        content = self.page.locator(f"#{button} .drawer-content").first
        if content.is_visible():
            self.page.locator(f"#{button} .drawer-toggle").first.click()
            time.sleep(0.7)

    # -- steps

    def load(self) -> None:
        page = self.page
        page.goto(self.base)
        page.wait_for_selector("#send_textarea", state="attached")
        # A fresh data folder: the welcome popup asks for a name (the persona is set in its own panel).
        # (1.12 opens it as a <dialog>, 1.11 and older in the legacy #shadow_popup)
        ok = page.locator("dialog.popup .popup-button-ok:visible, #shadow_popup #dialogue_popup_ok:visible")
        try:
            ok.first.wait_for(state="visible", timeout=20_000)
            self.shot("welcome")
            ok.first.click()
        except Exception:  # noqa: BLE001 - no welcome popup: a data folder that has seen a session
            pass
        page.wait_for_selector("#preloader", state="detached", timeout=60_000)
        time.sleep(1)
        self.shot("loaded")

    def connect(self, api_url: str, key: str, model: str, headers: str) -> None:
        """API Connections -> Chat Completion -> Custom (OpenAI-compatible), Additional Parameters, Connect."""
        page = self.page
        self.open_drawer("sys-settings-button")
        page.select_option("#main_api", "openai")
        page.locator("#chat_completion_source").wait_for(state="visible")
        page.select_option("#chat_completion_source", "custom")
        page.locator("#custom_api_url_text").wait_for(state="visible")
        page.fill("#custom_api_url_text", api_url)
        page.fill("#api_key_custom", key)
        page.fill("#custom_model_id", model)
        self.shot("connection-custom")
        page.click("#customize_additional_parameters")
        page.locator("#custom_include_headers").wait_for(state="visible")
        page.fill("#custom_include_headers", headers)
        self.shot("additional-parameters")
        page.locator("#dialogue_popup_ok").click()
        page.locator("#custom_include_headers").wait_for(state="hidden")
        before = len(self.proxy.exchanges)
        page.click("#api_button_openai")
        deadline = time.monotonic() + 60
        while not any(ex.line.path.rstrip("/").endswith("/models") for ex in self.proxy.exchanges[before:]):
            if time.monotonic() > deadline:
                raise RuntimeError("Connect sent no request to kioku")
            time.sleep(0.3)
        page.locator("#openai_api .online_status_indicator.success").wait_for(state="attached", timeout=60_000)
        self.wait_idle()
        if page.locator("#custom_model_id").input_value() != model:  # the model list may have picked one
            page.fill("#custom_model_id", model)
        self.shot("connected")

    def test_message(self) -> Exchange:
        before = len(self.proxy.chats())
        self.page.click("#test_api_button")
        ex = self.wait_request(before, lambda ex: True, "Test Message")
        self.page.locator(".toast").first.wait_for(state="visible", timeout=30_000)
        self.shot("test-message")
        return ex

    def set_persona(self, name: str) -> None:
        self.close_drawer("sys-settings-button")
        self.open_drawer("persona-management-button")
        self.page.fill("#your_name", name)
        self.page.click("#your_name_button")
        self.wait_text("#your_name", name)
        time.sleep(1.5)  # the settings are saved debounced
        self.shot("persona")
        self.close_drawer("persona-management-button")

    def pick_character(self, name: str) -> None:
        page = self.page
        self.open_drawer("rightNavHolder")
        back = page.locator("#rm_button_characters")
        if back.is_visible():
            back.click()
        page.locator("#rm_print_characters_block .character_select").filter(
            has=page.locator(".ch_name", has_text=name)).first.click()
        page.wait_for_function("(name) => document.querySelectorAll('#chat .mes').length > 0"
                               " && [...document.querySelectorAll('#chat .mes .name_text')].some(e => e.innerText.trim() == name)",
                               arg=name)
        time.sleep(1)
        self.shot(f"character-{name}")
        self.close_drawer("rightNavHolder")

    def say(self, text: str) -> str:
        before = len(self.proxy.chats())
        box = self.page.locator("#send_textarea")
        box.click()
        box.fill(text)
        self.page.keyboard.press("Enter")
        ex = self.wait_request(before, lambda ex: bool(spoken(ex.line.body)) and spoken(ex.line.body)[-1] == ("user", text),
                               f"the reply to {text!r}")
        self.wait_text("#chat .mes .mes_text", ex.reply.split("：")[0] + "：")
        self.shot("said")
        return ex.reply

    def swipe(self) -> str:
        """Swipe right on the last reply: SillyTavern generates another one for the same message."""
        before = len(self.proxy.chats())
        last = self.page.locator("#chat .last_mes")
        last.hover()
        last.locator(".swipe_right").click()
        ex = self.wait_request(before, lambda ex: bool(ex.line.body.get("stream")), "the swipe")
        self.wait_text("#chat .last_mes .mes_text", ex.reply.split("：")[0] + "：")
        self.shot("swiped")
        return ex.reply

    def option(self, option_id: str) -> None:
        self.page.click("#options_button")
        self.page.locator(f"#{option_id}").wait_for(state="visible")
        self.page.click(f"#{option_id}")

    def continue_reply(self) -> str:
        before = len(self.proxy.chats())
        self.option("option_continue")
        ex = self.wait_request(before, lambda ex: True, "the continue")
        self.wait_text("#chat .last_mes .mes_text", ex.reply[:8])
        self.shot("continued")
        return self.last_reply()

    def impersonate(self) -> str:
        before = len(self.proxy.chats())
        self.option("option_impersonate")
        ex = self.wait_request(before, lambda ex: True, "the impersonation")
        self.wait_text("#send_textarea", ex.reply[:8])
        self.shot("impersonated")
        self.page.fill("#send_textarea", "")  # not sent: the person writes their own message
        return ex.reply

    def summarize(self) -> str:
        """Extensions -> Summarize: "Summarize with: Main API", "Summarize now"."""
        page = self.page
        self.open_drawer("extensions-settings-button")
        drawer = page.locator("#memory_settings .inline-drawer-toggle").first
        drawer.scroll_into_view_if_needed()
        if not page.locator("#summary_source").is_visible():
            drawer.click()
        page.locator("#summary_source").wait_for(state="visible")
        page.select_option("#summary_source", "main")
        time.sleep(0.5)
        self.shot("summarize-settings")
        before = len(self.proxy.chats())
        page.click("#memory_force_summarize")
        ex = self.wait_request(before, lambda ex: SUMMARIZE_MARKER in json.dumps(ex.line.body, ensure_ascii=False),
                               "the summary")
        self.wait_text("#memory_contents", ex.reply[:6])
        self.shot("summarized")
        self.close_drawer("extensions-settings-button")
        return ex.reply

    def new_chat(self) -> None:
        """Options -> Start new chat -> Yes (the current chat is kept)."""
        page = self.page
        self.option("option_start_new_chat")
        # (1.12 opens it as a <dialog>, 1.11 and older in the legacy #shadow_popup)
        ok = page.locator("dialog.popup .popup-button-ok:visible, #shadow_popup #dialogue_popup_ok:visible").first
        ok.wait_for(state="visible")
        self.shot("new-chat-confirm")
        ok.click()
        page.wait_for_function("() => document.querySelectorAll('#chat .mes').length == 1")
        time.sleep(1)
        self.shot("new-chat")

    def close(self) -> None:
        self.context.close()


def run_session(base: str, proxy: SessionProxy, shots: Path, chromium: str, report: Report) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        profile = Path(tempfile.mkdtemp(prefix="kioku-st-chromium-"))  # a fresh user-data-dir
        context = p.chromium.launch_persistent_context(str(profile), executable_path=chromium, headless=True,
                                                       args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 950},
                                                       locale="en-US")
        s = Session(context, base, proxy, shots, report)
        try:
            s.load()
            s.connect(f"{proxy.url}/v1", TOKEN, DEFAULT_CHARACTER, f"X-Kioku-User: {USER_ID}")
            report.say(f"  connected; Test Message -> {s.test_message().reply}")
            s.set_persona(PERSONA)
            s.pick_character("小雪")
            for text in CHAT_1:
                report.say(f"  小雪, chat 1: {text} -> {s.say(text)}")
            report.say(f"  小雪, chat 1: swipe -> {s.swipe()}")
            report.say(f"  小雪, chat 1: continue -> {s.continue_reply()}")
            report.say(f"  小雪, chat 1: {CHAT_1_AFTER[0]} -> {s.say(CHAT_1_AFTER[0])}")
            report.say(f"  小雪, chat 1: impersonate -> {s.impersonate()}")
            report.say(f"  小雪, chat 1: summarize -> {s.summarize()}")
            report.say(f"  小雪, chat 1: {CHAT_1_AFTER[1]} -> {s.say(CHAT_1_AFTER[1])}")
            for n, more in enumerate(NEW_CHATS, 2):
                s.new_chat()
                for text in [NEW_CHAT_FIRST, *more]:
                    report.say(f"  小雪, chat {n}: {text} -> {s.say(text)}")
            s.pick_character("Ann")
            for text in ANN_CHAT:
                report.say(f"  Ann: {text} -> {s.say(text)}")
        except Exception:
            s.shot("error")
            raise
        finally:
            s.close()
            shutil.rmtree(profile, ignore_errors=True)


# -- checks beyond the replay's -----------------------------------------------------------------


def st_character(ex: Exchange) -> str | None:
    """The character SillyTavern's main prompt names ("Write 小雪's next reply in a fictional chat …")."""
    for m in ex.line.body.get("messages") or ():
        found = re.match(r"Write (.+?)'s next reply in a fictional chat between", text_of(m.get("content")))
        if isinstance(m, dict) and m.get("role") == "system" and found:
            return found.group(1)
    return None


def housekeeping_kind(ex: Exchange) -> str | None:
    body = json.dumps(ex.line.body, ensure_ascii=False)
    if IMPERSONATE_MARKER in body:
        return "impersonate"
    if SUMMARIZE_MARKER in body:
        return "summarize"
    said = spoken(ex.line.body)
    if not ex.line.body.get("stream") and len(ex.line.body.get("messages") or ()) == 1 and len(said) == 1:
        return "test message"
    return None


def _same_reply(shown: str, stored: str) -> bool:
    a, b = _key(shown), _key(stored)
    return a == b or (len(a) >= 8 and len(b) >= 8 and (a.startswith(b) or b.startswith(a)))


def check_session(exchanges: Sequence[Exchange], stores: dict[str, dict], files: dict[str, dict[str, Any]],
                  st_chats: dict[str, list[tuple[str, str]]], report: Report) -> None:
    """`files`: kioku's characters after the session, id -> character.yaml."""
    names = {cid: str(f.get("name", "")) for cid, f in files.items()}
    chats = [ex for ex in exchanges if ex.line.path.rstrip("/").endswith(CHAT_PATH)]
    bad = [f"seq {ex.line.seq} {ex.line.path}: {ex.status}" for ex in exchanges if ex.status != 200]
    report.check(not bad, f"every request answered 200 ({len(exchanges)} requests, {len(chats)} chat completions)"
                 + "".join(f"\n      {b}" for b in bad))

    # Housekeeping: the test message, the impersonation, the summary.
    kept = [(kind, ex) for ex in chats if (kind := housekeeping_kind(ex))]
    kinds = sorted({kind for kind, _ in kept})
    wrong = [f"seq {ex.line.seq} ({kind}): kioku said {ex.kioku('request')}, turn {ex.kioku('turn-id')}"
             for kind, ex in kept if ex.kioku("request") != "housekeeping" or ex.kioku("turn-id")]
    diary = {(_key(u), _key(a)) for per in stores.values() for s in per.values() for _, u, a in s.diary}
    stored = [f"seq {ex.line.seq} ({kind}): {ex.reply[:30]!r}" for kind, ex in kept
              if any(_key(ex.reply)[:16] in a for _, a in diary if ex.reply)]
    report.check(set(kinds) == {"test message", "impersonate", "summarize"} and not wrong and not stored,
                 f"housekeeping: {len(kept)} requests ({', '.join(kinds)}), {len(wrong) + len(stored)} recorded "
                 "or not told housekeeping" + "".join(f"\n      {b}" for b in wrong + stored))

    # Each SillyTavern character its own kioku character, which kioku created and named alike.
    conversations = [ex for ex in chats if ex.status == 200 and ex.kioku("request") == "conversation"]
    mapping: dict[str | None, set[str]] = defaultdict(set)
    for ex in conversations:
        mapping[st_character(ex)].add(ex.kioku("character") or "?")
    one_each = all(len(v) == 1 for v in mapping.values()) and len({next(iter(v)) for v in mapping.values()}) == len(mapping)
    named = all(names.get(next(iter(v))) == k for k, v in mapping.items())
    created = DEFAULT_CHARACTER not in {c for v in mapping.values() for c in v}
    report.check(set(mapping) == {c["name"] for c in CARDS.values()} and one_each and named and created,
                 "each SillyTavern character its own kioku character: "
                 + ", ".join(f"{k} -> {', '.join(f'{c} ({names.get(c)})' for c in sorted(v))}" for k, v in mapping.items()))

    # A character kioku created holds the card SillyTavern sent: each field of the card (SillyTavern
    # sends the description as it is, the personality as "[小雪's personality: …]").
    absent = []
    for card in CARDS.values():
        cid = next((c for c, shown in names.items() if shown == card["name"]), None)
        kept = _key(" ".join(str(v) for v in files.get(cid or "", {}).values() if isinstance(v, str)))
        absent += [f"{card['name']} ({cid}): its {field} {card[field][:24]!r}" for field in ("description", "personality")
                   if _key(card[field]) not in kept]
    report.check(not absent, f"the characters kioku created hold their cards' text: {len(absent)} card fields missing"
                 + "".join(f"\n      {b}" for b in absent))

    # What SillyTavern still shows is stored, and each of its chats is one kioku window.
    by_name = {v["name"]: k for k, v in CARDS.items()}
    lost, windows_bad, seen = [], [], []
    for chat, pairs in st_chats.items():
        if not pairs:
            continue
        folder = chat.split("/", 1)[0]
        character = next((c for c, shown in names.items() if by_name.get(shown) == folder), None)
        store = stores.get(character or "", {}).get(USER_ID)
        if store is None:
            lost.append(f"{chat}: no kioku store for its character")
            continue
        for user, reply in pairs:
            if not any(_key(u) == _key(user) and _same_reply(reply, a) for _, u, a in store.diary):
                lost.append(f"{chat}: {user[:24]!r} -> {reply[:30]!r} not in {character}'s diary")
        holding = [w for w, turns in store.windows.items()
                   if any(_key(u) == _key(pairs[0][0]) and _same_reply(pairs[0][1], a) for _, u, a in turns)]
        same = [w for w in holding if len(store.windows[w]) == len(pairs) and all(
            _key(u) == _key(pu) and _same_reply(pa, a) for (_, u, a), (pu, pa) in zip(store.windows[w], pairs))]
        if len(same) != 1:
            windows_bad.append(f"{chat} ({len(pairs)} exchanges): windows holding its first turn: "
                               + (", ".join(f"{w} ({len(store.windows[w])} turns)" for w in holding) or "none"))
        else:
            seen.append((character, same[0]))
    report.check(not lost, f"no turn deleted that SillyTavern shows: {sum(len(p) for p in st_chats.values())} "
                 f"exchanges in {len(st_chats)} chat files, {len(lost)} not stored" + "".join(f"\n      {b}" for b in lost))
    report.check(not windows_bad and len(set(seen)) == len(seen) == sum(1 for p in st_chats.values() if p),
                 f"each SillyTavern chat its own kioku window: {', '.join(f'{c}/{w}' for c, w in seen)}"
                 + "".join(f"\n      {b}" for b in windows_bad))

    # No reply a swipe replaced comes back in any later prompt kioku sent upstream.
    by_turn = {ex.kioku("turn-id"): ex for ex in conversations}
    swiped = [(ex, by_turn[ex.kioku("replaces")]) for ex in conversations
              if ex.kioku("replaces") in by_turn and ex.kioku("turn") in ("regenerate", "edit")]
    fed = []
    for new, old in swiped:
        probe = _key(old.reply)[:24]
        for later in conversations[conversations.index(new):]:
            blob = "".join(_key(text_of(m.get("content"))) for m in (later.prompt or {}).get("messages") or ())
            if probe and probe in blob:
                fed.append(f"seq {later.line.seq}: the reply {old.reply[:30]!r} (seq {old.line.seq}) that seq "
                           f"{new.line.seq} replaced")
    report.check(bool(swiped) and not fed, f"replaced replies: {len(swiped)} swiped away, {len(fed)} prompts carry one"
                 + "".join(f"\n      {b}" for b in fed))

    # The persona's name: what the character calls the user in kioku's prompt (kioku's persona
    # template: "你是小雪，正在和林舟聊天。" / "You are Ann, chatting with 林舟."). SillyTavern names the
    # persona only in its main prompt, which kioku does not pass on: the cards do not mention it
    # (the Summarize extension's "[Summary: …]", which 1.11 sends as a system message, may).
    said = (f"正在和{PERSONA}聊天", f"chatting with {PERSONA}")
    missing = [ex.line.seq for ex in conversations if ex.prompt is None or not any(
        s_ in text_of(m.get("content")) for m in ex.prompt.get("messages") or () if m.get("role") == "system"
        for s_ in said)]
    in_cards = sorted({ex.line.seq for ex in conversations for m in ex.line.body.get("messages") or ()
                       if m.get("role") == "system" and PERSONA in text_of(m.get("content"))
                       and not re.match(r"Write .+?'s next reply in a fictional chat between|\[Summary:",
                                        text_of(m.get("content")))})
    report.check(not missing and not in_cards,
                 f"persona {PERSONA} as the user's name in kioku's prompt ({' / '.join(said)}): "
                 f"{len(conversations) - len(missing)} of {len(conversations)} conversation prompts"
                 + (f"; missing in seq {missing}" if missing else "")
                 + (f"; but SillyTavern sent the name outside its main prompt in seq {in_cards}" if in_cards else ""))


def dump_exchanges(exchanges: Sequence[Exchange], path: Path) -> None:
    """Per request: what kioku answered (its X-Kioku-* headers, the reply) and the prompt it sent upstream."""
    with path.open("w", encoding="utf-8") as out:
        for ex in exchanges:
            out.write(json.dumps({"seq": ex.line.seq, "path": ex.line.path, "status": ex.status,
                                  "kioku": {k: ex.kioku(k[8:]) for k in ex.headers if k.startswith("x-kioku-")},
                                  "reply": ex.reply, "upstream_prompt": ex.prompt}, ensure_ascii=False) + "\n")


def character_files(data_dir: Path) -> dict[str, dict[str, Any]]:
    """kioku's characters: id -> its character.yaml."""
    return {path.parent.name: yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            for path in sorted((data_dir / "agents").glob("*/character.yaml"))}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sillytavern", type=Path, default=Path("/work/st"),
                        help="SillyTavern's folder (server.js; `npm ci` done)")
    parser.add_argument("--node", default="node")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--keep", type=Path, help="keep the data folders, logs, screenshots and recording here")
    parser.add_argument("--save-recording", type=Path,
                        help="copy the session's recording here when the session ran through "
                             "(e.g. tests/fixtures/recordings/sillytavern-1.12.6-live.jsonl)")
    args = parser.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="kioku-st-")) if args.keep is None else args.keep
    root.mkdir(parents=True, exist_ok=True)
    recording = root / "sillytavern-session.jsonl"
    for old in ("shots", "kioku", "sillytavern"):  # a kept folder of an earlier run: every run starts fresh
        shutil.rmtree(root / old, ignore_errors=True)
    for old in (recording, root / "kioku-answers.jsonl"):
        old.unlink(missing_ok=True)
    (root / "shots").mkdir()
    report = Report()
    kioku_folder = root / "kioku"
    kioku_folder.mkdir()
    tavern = SillyTavern(args.sillytavern.resolve(), root / "sillytavern", args.node)
    tavern.prepare(CARDS)
    ran = False
    try:
        with FakeOpenAIServer(rule=upstream_rule()) as upstream:
            config = write_config(kioku_folder, upstream_url=upstream.base_url, character=DEFAULT_CHARACTER,
                                  trusted=["kioku", "openwebui"], extra_service={"create_characters": "on"})
            with KiokuServe(config, env={"KIOKU_API_TOKEN": TOKEN}, log_file=kioku_folder / "serve.log") as kioku:
                proxy = SessionProxy(kioku.url, recording, upstream).start()
                report.say(f"starting SillyTavern on {tavern.url} (its connection: {proxy.url}/v1 -> {kioku.url})")
                started = time.monotonic()
                tavern.start()
                report.say(f"  up after {time.monotonic() - started:.0f}s")
                try:
                    run_session(tavern.url, proxy, root / "shots", args.chromium, report)
                    ran = True
                finally:
                    tavern.stop()
                    proxy.stop()
        exchanges = proxy.exchanges
        chats = proxy.chats()
        dump_exchanges(exchanges, root / "kioku-answers.jsonl")
        report.say(f"\n== what kioku stored ({len(exchanges)} requests, {len(chats)} chat completions, "
                   f"recorded to {recording})")
        data_dir = kioku_folder / "data"
        files = character_files(data_dir)
        names = {cid: f.get("name") for cid, f in files.items()}
        stores: dict[str, dict] = {}
        for character in sorted({ex.kioku("character") for ex in chats if ex.kioku("character")}):
            mine = [ex for ex in chats if ex.kioku("character") == character]
            report.say(f"\n-- character {character} ({names.get(character)}): {len(mine)} requests")
            stores[character] = read_stores(config, character, chats_by_user(mine))
            check_all(mine, stores[character], report, expect_refused=False)
            check_prompts([ex.prompt for ex in mine if ex.prompt], mine, report)
        report.say("\n-- the session")
        check_session(exchanges, stores, files, tavern.chats(), report)
        if ran and args.save_recording is not None:
            args.save_recording.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(recording, args.save_recording)
            report.say(f"recording saved to {args.save_recording}")
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"kept in {root}")
    report.say(f"{'FAILED' if report.failures else 'PASSED'}: {len(report.failures)} failed checks"
               f" ({len(report.lines)} lines of report)")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
