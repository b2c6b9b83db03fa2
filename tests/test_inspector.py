"""The memory inspector in a real browser: Debian's chromium (headless, driven by Playwright) against
a real `kioku serve` on 127.0.0.1, with memory recorded through the library beforehand."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest

from engine.testing.serve import free_port

playwright_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"), reason="Debian's chromium is not installed (scripts/setup.sh --dev)"
)
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
ROOT = Path(__file__).resolve().parent.parent
TOKEN = "inspector-test-token"
TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime.now(TZ)
YESTERDAY = NOW - timedelta(days=1)
SHOTS = os.environ.get("KIOKU_INSPECTOR_SHOTS")
"""A folder to save a screenshot of every view into (zh and en), for looking at by hand."""


@pytest.fixture(scope="module")
def served(tmp_path_factory, embedder):
    """A data folder with the demo character and one user's memory, served by `kioku serve`."""
    from engine.orchestrator import MemoryOrchestrator

    data = tmp_path_factory.mktemp("inspector-data")
    shutil.copytree(ROOT / "data" / "agents" / "xiaoyue", data / "agents" / "xiaoyue")
    config = data / "config.yaml"
    config.write_text(f"data_dir: {data}\nservice:\n  allow_edit: true\n", encoding="utf-8")
    with MemoryOrchestrator.from_config("xiaoyue", config_path=config, embedder=embedder) as orch:
        orch.record_turn("我今天去雾川镇的老茶馆喝了桂花茶", "桂花茶配上雨天，真惬意。", user_id="linzhou",
                         at=YESTERDAY.replace(hour=10, minute=0, second=0, microsecond=0))
        orch.record_turn("晚上养的猫阿黄打翻了鱼缸", "阿黄真调皮！小鱼还好吗？", user_id="linzhou",
                         at=YESTERDAY.replace(hour=21, minute=0, second=0, microsecond=0))
        orch.record_turn("最近在学吉他", "加油，先从简单的和弦开始吧。", user_id="linzhou",
                         at=(NOW - timedelta(days=5)).replace(hour=20, minute=0, second=0, microsecond=0))
        orch.flush()
        orch.admin.facts.add("linzhou", "喜欢喝乌龙茶")
    port = free_port()
    env = {**os.environ, "KIOKU_API_TOKEN": TOKEN, "HF_HUB_OFFLINE": "1"}
    log = open(data / "serve.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "serve", "--config", str(config), "--port", str(port)],
        cwd=data, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert proc.poll() is None, (data / "serve.log").read_text(errors="replace")
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, served):
    context = browser.new_context(locale="en-US", viewport={"width": 1280, "height": 900})
    # English first (the page would follow the character's Chinese); test_chinese_interface switches.
    context.add_init_script("localStorage.setItem('kioku-lang', 'en')")
    pg = context.new_page()
    pg.goto(f"{served}/inspector/?character=xiaoyue&user=linzhou")
    pg.fill("#token", TOKEN)
    pg.click("#login button[type=submit]")
    pg.wait_for_selector("#users-table tbody tr[data-user='linzhou']")
    yield pg
    context.close()


def shot(page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def test_the_page_needs_the_token(browser, served):
    """Without the token the API answers 401 and the page asks for it; a wrong token is refused."""
    context = browser.new_context()
    pg = context.new_page()
    pg.goto(f"{served}/inspector/")
    pg.wait_for_selector("#login:not([hidden])")
    pg.fill("#token", "wrong")
    pg.click("#login button[type=submit]")
    pg.wait_for_selector("#login:not([hidden])")
    assert "token" in pg.inner_text("#login-error").lower()
    assert httpx.get(f"{served}/v1/characters").status_code == 401
    context.close()


def test_users_list_shows_counts(page):
    row = page.locator("#users-table tbody tr[data-user='linzhou'] td")
    assert row.nth(1).inner_text() == "3"  # turns
    assert row.nth(2).inner_text() == "1"  # facts
    shot(page, "users-en")


def test_calendar_finds_yesterdays_turns(page):
    page.click("#tabs button[data-view=diary]")
    day = YESTERDAY.strftime("%Y-%m-%d")
    if YESTERDAY.month != NOW.month:
        page.wait_for_selector("#calendar .day")
    cell = page.locator(f"#calendar .day[data-day='{day}']")
    cell.wait_for()
    assert cell.get_attribute("data-level") is not None  # the heat map marks days with turns
    cell.click()
    page.wait_for_selector("#turns .turn")
    text = page.inner_text("#turns")
    assert "桂花茶" in text and "阿黄" in text and "吉他" not in text
    shot(page, "diary-en")


def test_search_finds_a_turn_by_word(page):
    page.click("#tabs button[data-view=diary]")
    page.fill("#search-q", "guitar 吉他")
    page.click("#search-form button[type=submit]")
    page.wait_for_selector("#turns .turn")
    assert "吉他" in page.locator("#turns .turn").first.inner_text()


def test_editing_a_fact_changes_the_prompt_preview(page):
    page.click("#tabs button[data-view=facts]")
    page.wait_for_selector("#facts .fact")
    page.locator("#facts .fact [data-action=edit]").first.click()
    page.fill("#facts .fact input[name=fact]", "喜欢喝普洱茶，不喜欢乌龙茶")
    page.locator("#facts .fact [data-action=save]").first.click()
    page.wait_for_function("document.querySelector('#facts').innerText.includes('普洱茶')")
    shot(page, "facts-en")
    page.click("#tabs button[data-view=prompt]")
    page.fill("#prompt-message", "你还记得我喜欢喝什么茶吗？")
    page.click("#prompt-form button[type=submit]")
    page.wait_for_selector("#prompt-result .messages")
    result = page.inner_text("#prompt-result")
    assert "普洱茶" in result
    assert "core" in page.inner_text("#prompt-result .hit[data-store=core]")
    shot(page, "prompt-en")


def test_try_a_message_against_the_world_book(page, served):
    page.click("#tabs button[data-view=worldbook]")
    page.wait_for_selector("#wb-table tbody tr")
    page.fill("#try-message", "雾川镇今天下雨了吗")
    page.click("#try-form button[type=submit]")
    page.wait_for_selector("#try-result .hit")
    hit = page.inner_text("#try-result .hit")
    assert "雾川镇" in hit and "key \"雾川镇\"" in hit  # why it fired: the key, found in the message
    shot(page, "worldbook-en")
    # Trying a message records nothing.
    turns = httpx.get(f"{served}/v1/characters/xiaoyue/users", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    assert [u["turns"] for u in turns if u["id"] == "linzhou"] == [3]


def test_chinese_interface(page):
    page.select_option("#language", "zh")
    assert page.inner_text("#tabs button[data-view=diary]") == "日记"
    shot(page, "users-zh")
    for view in ("diary", "facts", "worldbook", "prompt"):
        page.click(f"#tabs button[data-view={view}]")
        page.wait_for_timeout(300)
        shot(page, f"{view}-zh")
    page.select_option("#language", "en")
