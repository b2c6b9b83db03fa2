"""Replay what a chat frontend sent against a real `kioku serve`, then check what kioku stored.

    PYTHONPATH=$PWD .venv/bin/python bench/replay_frontend.py ../shared/frontends/open-webui-0.12.4.jsonl

The recording is JSON lines `{seq, t, path, headers, body, status}`: every POST the frontend sent,
in order (see shared/frontends/README.md). Its Authorization values are redacted; the replay sends
its own token instead. Nothing in here knows a particular frontend or file.

Pass 1 (several accounts): a fresh data folder, `engine.testing.fake_openai` as the upstream, and a real
`kioku serve` on 127.0.0.1 that trusts kioku's and Open WebUI's identity headers
(`service.trusted_headers: [kioku, openwebui]`). Every request is sent with its headers and body,
in order; the upstream answers each conversation request with the reply the frontend showed for it
(read from the recording's later histories) and fails where the recording shows a 5xx. A request
that names no user is refused there (400 `user_required`, kioku's rule for a multi-user deployment).

Pass 2 (single user), when pass 1 refused requests for naming nobody: those requests against a
fresh kioku in single-user mode (its setting for a frontend that sends no identity).

After each pass, with the service stopped, the stores are read through the library
(`MemoryOrchestrator.admin`, `recent_turns`) and from the files, and the script prints: requests
replayed and their status codes, turns recorded per user and chat, and the checks

- housekeeping: no recorded turn (diary, window) or fact is a frontend's housekeeping prompt
  (a `### Task:` prompt, a known housekeeping phrase, or a text that quotes the chat);
- identity: each identity the frontend sent is one kioku user, no text that only one user sent
  (or was answered) is in another user's files (diary, facts, windows, summary, journal), and no
  prompt kioku sent upstream holds texts of two users;
- regenerate: a conversation the frontend sent again unchanged left one turn;
- deletions: a stored turn was replaced (regenerate, edit, continue) only when the request resent
  the very conversation that turn was said in, with one exchange of it at least (or, with nothing
  before it, sent no history and named its chat): two chats that begin alike are no evidence;
- fed back: no prompt kioku sent upstream carries, in what kioku added, a reply the request is
  replacing: an earlier reply to the same message after the same history (a swipe), or the
  partial reply it continues;
- twice: no prompt carries, in what kioku added, a reply that is already in the conversation it sends;
- windows: each chat window kioku keeps holds one conversation: the turns before a turn in its
  window are the exchanges its request showed (a request that sent no history says nothing);
  two chats sent under one chat id in one window fail;
- status: every answer is 200, or the refusal or upstream failure the pass expects.

It exits 1 when a check fails. `--keep DIR` keeps the data folders and kioku's logs.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import httpx
import yaml

from engine.testing.fake_openai import FakeOpenAIServer, Status
from engine.testing.serve import KiokuServe, copy_demo

TOKEN = "replay-token-0123456789"
CHAT_PATH = "/v1/chat/completions"
# Phrases of frontends' housekeeping prompts that a person chatting would not type (independent of
# kioku's own rules, so a rule kioku lacks still shows up here).
HOUSEKEEPING_MARKERS = ("### Task:", "<chat_history>", "### Chat History:", "follow_ups", "5-word-or-less",
                        "Summarize the most important facts", "[Pause your roleplay", "四到五个字",
                        "Write your next reply from the point of view", "professional conversation summarizer",
                        "Classify the emotion of the last message")
_SKIP_HEADERS = {"host", "content-length", "connection", "transfer-encoding", "accept-encoding", "authorization"}


# -- the recording ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    seq: int
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    status: int | None
    """What the frontend got in the recorded session (None when not recorded)."""


def load_recording(path: Path) -> list[Line]:
    lines = []
    for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not text.strip():
            continue
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SystemExit(f"{path}:{n}: not JSON: {exc}") from None
        lines.append(Line(int(raw.get("seq", n - 1)), raw.get("path", CHAT_PATH),
                          {str(k).lower(): str(v) for k, v in (raw.get("headers") or {}).items()},
                          raw.get("body") or {}, raw.get("status")))
    return lines


def text_of(content: Any) -> str:
    """The text of an OpenAI message content (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def spoken(body: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The user and assistant messages with text, oldest first."""
    out = []
    for m in body.get("messages") or ():
        if isinstance(m, dict) and m.get("role") in ("user", "assistant"):
            text = text_of(m.get("content")).strip()
            if text:
                out.append((m["role"], text))
    return tuple(out)


def sent_identity(line: Line) -> tuple[str | None, str | None]:
    """(user, chat) as the frontend sent them: the `user` field or a user header; `metadata.chat_id`
    or a chat header. None where it sent none."""
    h = line.headers
    user = line.body.get("user")
    user = user.get("id") if isinstance(user, dict) else user
    if not user:
        user = h.get("x-kioku-user") or next((v for k, v in h.items() if k.endswith("-user-id")), None)
    meta = line.body.get("metadata")
    chat = meta.get("chat_id") if isinstance(meta, dict) else None
    if not chat:
        chat = h.get("x-kioku-chat") or next((v for k, v in h.items() if k.endswith("-chat-id")), None)
    return (unquote(str(user)) if user else None), (unquote(str(chat)) if chat else None)


def shown_replies(lines: Sequence[Line]) -> dict[tuple[tuple[str, str], ...], str]:
    """For each conversation state (the spoken messages up to a user message), the assistant reply a
    later request shows after it: what the frontend got and kept (the last one after a regenerate)."""
    replies: dict[tuple[tuple[str, str], ...], str] = {}
    for line in lines:
        said = spoken(line.body)
        for i in range(1, len(said)):
            if said[i][0] == "assistant" and said[i - 1][0] == "user":
                replies[said[:i]] = said[i][1]
    return replies


def reply_for(said: tuple[tuple[str, str], ...], replies: dict[tuple[tuple[str, str], ...], str]) -> str | None:
    """What the frontend showed after `said`; for a continue (`said` ends with a partial reply),
    the rest of the reply it showed that starts with the partial one (the frontend joins the two
    itself, SillyTavern with a space)."""
    if said and said[-1][0] == "user":
        return replies.get(said)
    if len(said) >= 2 and said[-1][0] == "assistant" and said[-2][0] == "user":
        shown = replies.get(said[:-1])
        partial = said[-1][1]
        if shown is not None and shown != partial and shown.startswith(partial):
            return shown[len(partial):].lstrip()
    return None


# -- one pass -----------------------------------------------------------------------------------


@dataclass
class Exchange:
    """One request as sent and what kioku answered."""

    line: Line
    status: int
    headers: dict[str, str]
    reply: str
    error_code: str | None = None
    prompt: dict[str, Any] | None = None
    """The chat request kioku sent upstream for this one (None when it sent none)."""

    def kioku(self, name: str) -> str | None:
        value = self.headers.get(f"x-kioku-{name}")
        return unquote(value) if value is not None else None


@dataclass
class Pass:
    name: str
    trusted: list[str]
    lines: list[Line]
    folder: Path
    character: str
    exchanges: list[Exchange] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)
    """The chat requests kioku sent upstream."""

    @property
    def data_dir(self) -> Path:
        return self.folder / "data"

    @property
    def config_path(self) -> Path:
        return self.folder / "config.yaml"

    @property
    def log_path(self) -> Path:
        return self.folder / "serve.log"


def write_config(folder: Path, *, upstream_url: str, character: str, trusted: Sequence[str],
                 extra_service: dict[str, Any] | None = None) -> Path:
    """A config for `kioku serve` in `folder` (data folder `folder/data` with the demo character as
    `character`), talking to `upstream_url`; returns its path."""
    data_dir = copy_demo(folder / "data", as_id=character)
    config = {"data_dir": str(data_dir),
              "llm": {"backend": "openai", "base_url": upstream_url, "model": "fake-model", "max_retries": 0,
                      "timeout_s": 30},
              "memory_llm": {"backend": "none"},
              "service": {"trusted_headers": list(trusted), "default_character": character, **(extra_service or {})}}
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


def run_pass(p: Pass, replies: dict[tuple[tuple[str, str], ...], str], *, reproduce_failures: bool) -> None:
    with FakeOpenAIServer() as upstream:
        write_config(p.folder, upstream_url=upstream.base_url, character=p.character, trusted=p.trusted)
        with KiokuServe(p.config_path, env={"KIOKU_API_TOKEN": TOKEN}, log_file=p.log_path) as server, \
                httpx.Client(timeout=120) as http:
            for line in p.lines:
                answer = reply_for(spoken(line.body), replies) or f"(reply to request {line.seq})"
                upstream.rule = lambda body, answer=answer: answer
                failing = reproduce_failures and line.status is not None and line.status >= 500
                if failing:
                    upstream.push(Status(500, "replayed failure of the recorded session"))
                before = len(upstream.requests)
                ex = send(http, server.url, line)
                if failing and len(upstream.requests) == before:
                    upstream.clear()  # kioku did not call the upstream: drop the unused failure
                sent_up = [b for b in upstream.requests[before:] if "messages" in b]
                ex.prompt = sent_up[-1] if sent_up else None
                p.exchanges.append(ex)
                if ex.status == 200 and ex.kioku("request") == "conversation":
                    wait_for_diary(http, server.url, ex)
        p.prompts = [body for body in upstream.requests if "messages" in body]


def send(http: httpx.Client, url: str, line: Line) -> Exchange:
    headers = {k: v for k, v in line.headers.items() if k not in _SKIP_HEADERS}
    headers["authorization"] = f"Bearer {TOKEN}"
    target = url + (line.path if line.path.startswith("/") else "/" + line.path)
    if line.body.get("stream"):
        with http.stream("POST", target, headers=headers, json=line.body) as r:
            raw = [x for x in r.iter_lines()]
            text = "".join(c.get("delta", {}).get("content") or "" for x in raw if x.startswith("data: {")
                           for c in json.loads(x[6:]).get("choices", ()))
            body = "\n".join(raw)
    else:
        r = http.post(target, headers=headers, json=line.body)
        body = r.text
        try:
            text = r.json()["choices"][0]["message"]["content"] if r.status_code == 200 else ""
        except (ValueError, KeyError, IndexError, TypeError):
            text = ""
    code = None
    if r.status_code != 200:
        try:
            code = json.loads(body)["error"]["code"]
        except (ValueError, KeyError, TypeError):
            code = None
    return Exchange(line, r.status_code, {k.lower(): v for k, v in r.headers.items()}, text, code)


def wait_for_diary(http: httpx.Client, url: str, ex: Exchange, timeout: float = 60.0) -> None:
    """Until this turn is in its user's diary (the journal wrote it), so a later request of another
    user would see it if it leaked."""
    user, turn, character = ex.kioku("user"), ex.kioku("turn-id"), ex.kioku("character")
    if not (user and turn and character):
        return
    route = f"{url}/v1/characters/{quote(character, safe='')}/users/{quote(user, safe='')}/diary"
    today = datetime.now(timezone.utc).date()
    days = {"start": (today - timedelta(days=2)).isoformat(), "end": (today + timedelta(days=3)).isoformat()}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = http.get(route, params=days,
                     headers={"Authorization": f"Bearer {TOKEN}"})
        if r.status_code == 200 and any(e["id"] == turn for e in r.json()["entries"]):
            return
        if r.status_code != 200:
            print(f"  warning: {route}: {r.status_code} {r.text[:200]}")
            return
        time.sleep(0.05)
    print(f"  warning: turn {turn} of {user} not in the diary after {timeout:g}s")


# -- what was stored ----------------------------------------------------------------------------


@dataclass
class UserStore:
    diary: list[tuple[str, str, str]]
    """(turn id, user text, assistant text), oldest first."""
    facts: list[str]
    windows: dict[str, list[tuple[str, str, str]]]
    """chat -> the turns still in its window (turn id, user, assistant)."""
    summaries: dict[str, str]
    files: str
    """Every file of the user's folder, concatenated (diary, facts, windows, summary, journal)."""


def read_stores(config_path: Path, character: str, chats: dict[str, set[str]]) -> dict[str, UserStore]:
    """What kioku stored for each user, through the library (the service must be stopped).
    `chats`: the chats the service named per user (its X-Kioku-Chat answers)."""
    from engine.config import load_config
    from engine.orchestrator import MemoryOrchestrator

    config = load_config(config_path, env={})
    out: dict[str, UserStore] = {}
    with MemoryOrchestrator.from_config(character, config=config) as orch:
        orch.flush(60)
        admin = orch.admin
        for user in admin.user_ids():
            days = [d.day for d in admin.diary_days(user)]
            diary = []
            if days:
                start = datetime.combine(min(days), datetime.min.time(), tzinfo=orch.tz)
                end = datetime.combine(max(days), datetime.max.time(), tzinfo=orch.tz)
                diary = [(e.id, e.user, e.assistant) for e in admin.diary(user, start, end)]
            facts = [f.text for f in admin.facts.list(user)]
            windows, summaries = {}, {}
            for chat in sorted(chats.get(user, set()) | {"default"}):
                turns = orch.recent_turns(user, chat_id=chat, n=100_000)
                if turns or chat != "default":
                    windows[chat] = [(t.id, t.user, t.assistant) for t in turns]
                    summaries[chat] = orch.short_term.summary(user, chat_id=chat)
            root = orch.paths.user(user).root
            files = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in sorted(root.rglob("*"))
                              if p.is_file())
            out[user] = UserStore(diary, facts, windows, summaries, files)
    return out


# -- checks -------------------------------------------------------------------------------------


@dataclass
class Report:
    lines: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def say(self, text: str) -> None:
        self.lines.append(text)
        print(text, flush=True)

    def check(self, ok: bool, text: str) -> None:
        self.say(f"  [{'ok' if ok else 'FAIL'}] {text}")
        if not ok:
            self.failures.append(text)


def housekeeping_reason(text: str, session: Iterable[str]) -> str | None:
    """Why `text` (a recorded user message or fact) looks like a frontend's housekeeping prompt."""
    stripped = text.strip()
    for marker in HOUSEKEEPING_MARKERS:
        if marker in stripped:
            return f"contains {marker!r}"
    quoted = {s for s in session if len(s) >= 8 and s != stripped and s in stripped}
    if len(quoted) >= 2:
        return f"quotes {len(quoted)} messages of the chat"
    return None


def check_all(exchanges: Sequence[Exchange], stores: dict[str, UserStore], report: Report, *,
              expect_refused: bool) -> None:
    session = {text for ex in exchanges for _, text in spoken(ex.line.body)}
    session |= {ex.reply.strip() for ex in exchanges if ex.reply.strip()}
    _check_statuses(exchanges, report, expect_refused=expect_refused)
    _report_turns(stores, report)
    _check_housekeeping(stores, session, report, _probes(exchanges))
    _check_identity(exchanges, stores, report)
    _check_regenerate(exchanges, stores, report)
    _check_deletions(exchanges, report)
    _check_fed_back(exchanges, report)
    _check_windows(exchanges, stores, report)


def _check_statuses(exchanges: Sequence[Exchange], report: Report, *, expect_refused: bool) -> None:
    """Status codes: 200, a refusal of a request that names nobody, or the recorded upstream failure."""
    statuses = Counter((ex.status, ex.error_code) for ex in exchanges)
    report.say("  status codes: " + ", ".join(f"{s}{f' {c}' if c else ''}: {n}" for (s, c), n in sorted(
        statuses.items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))))
    unexpected = []
    for ex in exchanges:
        recorded_failure = ex.line.status is not None and ex.line.status >= 500 and ex.status in (502, 504)
        refused = expect_refused and ex.status == 400 and ex.error_code == "user_required" \
            and sent_identity(ex.line)[0] is None
        if ex.status != 200 and not (recorded_failure or refused):
            unexpected.append(f"seq {ex.line.seq}: {ex.status} {ex.error_code or ''}")
    report.check(not unexpected, "every answer is 200, a refusal of a request that names nobody, or the "
                 "recorded upstream failure" + (f": unexpected {unexpected}" if unexpected else ""))
    decided = Counter(ex.kioku("request") for ex in exchanges if ex.status == 200)
    turns = Counter(ex.kioku("turn") for ex in exchanges if ex.status == 200 and ex.kioku("turn"))
    report.say(f"  kioku decided: {dict(decided)}; turns: {dict(turns)}")


def _report_turns(stores: dict[str, UserStore], report: Report) -> None:
    """Turns per user and chat."""
    for user, store in sorted(stores.items()):
        report.say(f"  user {user}: {len(store.diary)} diary turns, {len(store.facts)} facts")
        for chat, window in store.windows.items():
            report.say(f"    chat {chat}: {len(window)} turns in the window"
                       + (", a summary" if store.summaries.get(chat) else ""))


def _probes(exchanges: Sequence[Exchange]) -> set[str]:
    """User texts of connection checks: a lone message not streamed, from a frontend that streams
    its chat turns (SillyTavern's "Test Message")."""
    streams = any(ex.line.body.get("stream") for ex in exchanges)
    return {spoken(ex.line.body)[0][1] for ex in exchanges
            if streams and not ex.line.body.get("stream") and len(ex.line.body.get("messages") or ()) == 1
            and len(spoken(ex.line.body)) == 1}


def _check_housekeeping(stores: dict[str, UserStore], session: set[str], report: Report,
                        probes: set[str] = frozenset()) -> None:
    """No housekeeping request was recorded as a turn, fact or summary."""
    bad = []
    for user, store in stores.items():
        recorded = [("diary", t[1]) for t in store.diary]
        recorded += [(f"window {chat}", t[1]) for chat, w in store.windows.items() for t in w]
        recorded += [("fact", f) for f in store.facts] + [(f"summary {c}", s) for c, s in store.summaries.items() if s]
        for where, text in recorded:
            why = housekeeping_reason(text, session) or ("a connection check's message" if text in probes else None)
            if why:
                bad.append(f"{user} {where}: {text[:60]!r} ({why})")
    task_turns = sum(1 for s in stores.values() for t in s.diary if t[1].lstrip().startswith("### Task:"))
    report.check(not bad, f"housekeeping turns recorded: {len(bad)} ({task_turns} starting '### Task:')"
                 + "".join(f"\n      {b}" for b in bad[:10]))


def _check_identity(exchanges: Sequence[Exchange], stores: dict[str, UserStore], report: Report) -> None:
    """One sent identity <-> one kioku user; nothing of one user in another's files."""
    mapping: dict[str | None, set[str]] = defaultdict(set)
    back: dict[str, set[str | None]] = defaultdict(set)
    for ex in exchanges:
        if ex.status == 200 and ex.kioku("user"):
            sent = sent_identity(ex.line)[0]
            mapping[sent].add(ex.kioku("user") or "")
            back[ex.kioku("user") or ""].add(sent)
    split = {k: v for k, v in mapping.items() if len(v) > 1}
    merged = {k: v for k, v in back.items() if len(v) > 1}
    report.say(f"  users: {len(stores)} in the stores; sent identities -> kioku users: "
               + ", ".join(f"{k or '(none)'} -> {', '.join(sorted(v))}" for k, v in mapping.items()))
    report.check(not split and not merged, "each identity the frontend sent is exactly one kioku user"
                 + (f": split {split}" if split else "") + (f": merged {merged}" if merged else ""))
    said = own_texts(exchanges)
    leaks = []
    for user, mine in said.items():
        for other, store in stores.items():
            if other != user:
                leaks += [f"{user}'s {t[:40]!r} in {other}'s files" for t in mine if t in store.files]
    checked = sum(len(v) for v in said.values())
    report.check(not leaks, f"users disjoint: {len(leaks)} texts of one user in another's diary/facts/window/summary "
                 f"({checked} texts of {len(said)} users checked)" + "".join(f"\n      {x}" for x in leaks[:10]))


def _check_regenerate(exchanges: Sequence[Exchange], stores: dict[str, UserStore], report: Report) -> None:
    """Regenerate: the same conversation sent again by the same identity and chat, with an exchange
    before its message, is recorded once (a later continue of it replaces it again and counts as
    it). A chat's first message sent again is no regenerate for sure: two chats may begin alike, and
    each keeps its turn (see the deletions check)."""
    groups: dict[tuple, list[Exchange]] = defaultdict(list)
    for ex in exchanges:
        said_now = spoken(ex.line.body)
        user, chat = sent_identity(ex.line)
        if ex.status == 200 and ex.kioku("request") == "conversation" and said_now and (len(said_now) > 1 or chat):
            groups[(user, chat, said_now)].append(ex)
    resent = [g for g in groups.values() if len(g) > 1]
    if not resent:
        report.say("  regenerate: the accepted requests re-send no conversation (nothing to check)")
    for group in resent:
        user = group[0].kioku("user") or ""
        ids = {ex.kioku("turn-id") for ex in group}
        later = [ex for ex in exchanges if ex not in group and ex.kioku("replaces") in ids]
        ids |= {ex.kioku("turn-id") for ex in later}
        store = stores.get(user)
        in_diary = [t for t in store.diary if t[0] in ids] if store else []
        in_window = [t for w in (store.windows.values() if store else ()) for t in w if t[0] in ids]
        kinds = [ex.kioku("turn") for ex in group + later]
        before = _split(group[0])[0]
        message = _split(group[0])[1]
        seqs = ", ".join(str(ex.line.seq) for ex in group + later)
        if not _pairs(before):
            report.say(f"  a chat's first message sent again: {message[:30]!r} (seq {seqs}, kioku: "
                       f"{', '.join(k or '?' for k in kinds)}): {len(in_diary)} turns kept (two chats may begin alike)")
            continue
        report.check(len(in_diary) == 1 and len(in_window) <= 1,
                     f"regenerated {message[:30]!r} (seq {seqs}, kioku: {', '.join(k or '?' for k in kinds)}): "
                     f"recorded {len(in_diary)}x in the diary, {len(in_window)}x in a window")


def _key(text: str) -> str:
    """A text as compared across frontends' re-spacing: no white space."""
    return "".join(text.split())


def _probe(text: str) -> str:
    """What finds a reply inside a prompt: its first 24 characters without white space (the diary
    shortens long lines)."""
    return _key(text)[:24]


def _split(ex: Exchange) -> tuple[tuple[tuple[str, str], ...], str, str]:
    """(the spoken messages before the last user message, that message, the partial reply after it)."""
    said = spoken(ex.line.body)
    last = max((i for i, (role, _) in enumerate(said) if role == "user"), default=None)
    if last is None:
        return said, "", ""
    return said[:last], said[last][1], "".join(t for role, t in said[last + 1:] if role == "assistant")


def _pairs(said: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """(user message, reply) for each assistant message right after a user message."""
    return [(said[i - 1][1], text) for i, (role, text) in enumerate(said)
            if i and role == "assistant" and said[i - 1][0] == "user"]


def _conversations(exchanges: Sequence[Exchange]) -> list[Exchange]:
    return [ex for ex in exchanges if ex.status == 200 and ex.kioku("request") == "conversation"]


def _check_deletions(exchanges: Sequence[Exchange], report: Report) -> None:
    """A replaced turn: the request resent the conversation it was said in (see the docstring)."""
    by_turn = {ex.kioku("turn-id"): ex for ex in _conversations(exchanges)}
    bad, done = [], 0
    for ex in _conversations(exchanges):
        gone = ex.kioku("replaces")
        if not gone:
            continue
        done += 1
        old = by_turn.get(gone)
        if old is None:
            bad.append(f"seq {ex.line.seq} replaced {gone}, a turn not recorded in this replay")
            continue
        before = _split(ex)[0]
        same_chat = [_key(t) for _, t in before] == [_key(t) for _, t in _split(old)[0]]
        named = sent_identity(ex.line)[1] is not None
        if not same_chat or not (_pairs(before) or (not before and named)):
            why = "another conversation" if not same_chat else "a conversation with no exchange before it"
            bad.append(f"seq {ex.line.seq} ({ex.kioku('turn')}) deleted the turn of seq {old.line.seq} "
                       f"({_split(old)[1][:20]!r}) on the evidence of {why}")
    report.check(not bad, f"deletions: {done} stored turns replaced, {len(bad)} on ambiguous evidence"
                 + "".join(f"\n      {b}" for b in bad[:10]))


def _check_windows(exchanges: Sequence[Exchange], stores: dict[str, UserStore], report: Report) -> None:
    """A request that sent history says which conversation it belongs to: the turns before its own
    in kioku's window must be the exchanges it showed (as far as both reach; a history with no
    exchange, such as a greeting alone, says the conversation starts there). A request with no
    history says nothing (a client that relies on kioku's window)."""
    by_turn = {ex.kioku("turn-id"): ex for ex in _conversations(exchanges)}
    bad, seen = [], 0
    for user, store in stores.items():
        for chat, window in store.windows.items():
            seen += bool(window)
            for j, (turn_id, _, _) in enumerate(window):
                ex = by_turn.get(turn_id)
                before = _split(ex)[0] if ex is not None else ()
                if not before:
                    continue
                shown = [(_key(u), _key(a)) for u, a in _pairs(before)]
                kept = [(_key(u), _key(a)) for _, u, a in window[:j]]
                n = min(len(shown), len(kept))
                same = all(k[0] == s_[0] and (k[1].startswith(s_[1]) or s_[1].startswith(k[1]))
                           for s_, k in zip(shown[len(shown) - n:], kept[len(kept) - n:]))
                if not same or (not shown and kept):
                    bad.append(f"{user} chat {chat}: the turn of seq {ex.line.seq} ({_split(ex)[1][:16]!r}) "
                               f"follows {len(kept)} turns its conversation does not show")
    report.check(not bad, f"windows: {seen} kept, {len(bad)} turns in a window of another conversation"
                 + "".join(f"\n      {b}" for b in bad[:10]))


def _injected(ex: Exchange) -> str:
    """What kioku added to the client's messages in the prompt it sent upstream: its system
    messages that the client did not send."""
    if ex.prompt is None:
        return ""
    client = {_key(text_of(m.get("content"))) for m in ex.line.body.get("messages") or () if isinstance(m, dict)}
    added = [_key(text_of(m.get("content"))) for m in ex.prompt.get("messages") or ()
             if isinstance(m, dict) and m.get("role") == "system"]
    return "\n".join(t for t in added if t not in client)


def _check_fed_back(exchanges: Sequence[Exchange], report: Report) -> None:
    """No replaced reply, and no reply already in the conversation, in what kioku injected."""
    convs = _conversations(exchanges)
    replaced, twice = [], []
    for n, ex in enumerate(convs):
        added = _injected(ex)
        before, message, partial = _split(ex)
        state = [_key(t) for _, t in before]
        gone = [old.reply for old in convs[:n] if old.reply.strip() and _key(_split(old)[1]) == _key(message)
                and [_key(t) for _, t in _split(old)[0]] == state]
        gone = list(dict.fromkeys(gone + ([partial] if partial else [])))
        replaced += [f"seq {ex.line.seq}: {g[:30]!r}" for g in gone if len(_probe(g)) >= 8 and _probe(g) in added]
        twice += [f"seq {ex.line.seq}: {t[:30]!r}" for role, t in before
                  if role == "assistant" and len(_probe(t)) >= 8 and _probe(t) in added]
    report.check(not replaced, f"fed back: {len(replaced)} prompts carry a reply the request replaces"
                 + "".join(f"\n      {b}" for b in replaced[:10]))
    report.check(not twice, f"twice: {len(twice)} replies injected again beside the conversation that holds them"
                 + "".join(f"\n      {b}" for b in twice[:10]))


def own_texts(exchanges: Iterable[Exchange]) -> dict[str, set[str]]:
    """Per kioku user, the texts (messages sent in conversation requests, replies got) no other user has."""
    said: dict[str, set[str]] = defaultdict(set)
    for ex in exchanges:
        if ex.status == 200 and ex.kioku("request") == "conversation" and ex.kioku("user"):
            user = ex.kioku("user") or ""
            said[user] |= {t for _, t in spoken(ex.line.body) if len(t) >= 4}
            if len(ex.reply.strip()) >= 4:
                said[user].add(ex.reply.strip())
    return {user: texts - set().union(*(v for u, v in said.items() if u != user)) for user, texts in said.items()}


def check_prompts(prompts: Sequence[dict[str, Any]], exchanges: Sequence[Exchange], report: Report) -> None:
    """No prompt kioku sent upstream holds texts of two users (one user never sees another's memory)."""
    said = own_texts(exchanges)
    mixed = []
    for n, body in enumerate(prompts):
        blob = "\n".join(text_of(m.get("content")) for m in body.get("messages") or () if isinstance(m, dict))
        owners = sorted(u for u, texts in said.items() if any(t in blob for t in texts))
        if len(owners) > 1:
            mixed.append(f"upstream request {n}: texts of {', '.join(owners)}")
    report.check(not mixed, f"prompts sent upstream: {len(prompts)}, {len(mixed)} hold texts of two users"
                 + "".join(f"\n      {x}" for x in mixed[:10]))


def chats_by_user(exchanges: Iterable[Exchange]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for ex in exchanges:
        if ex.status == 200 and ex.kioku("user") and ex.kioku("chat"):
            out[ex.kioku("user") or ""].add(ex.kioku("chat") or "")
    return out


def default_character(lines: Sequence[Line]) -> str:
    """The model most requests name, when it is a plain id (else the demo's `xiaoyue`)."""
    from engine.paths import validate_id

    models = Counter(str(line.body.get("model", "")).partition("/")[0] for line in lines)
    for model, _ in models.most_common(1):
        try:
            return validate_id(model, kind="character id")
        except ValueError:
            pass
    return "xiaoyue"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recording", type=Path, help="JSON lines {seq, t, path, headers, body, status}")
    parser.add_argument("--keep", type=Path, help="keep the data folders and kioku's logs here")
    parser.add_argument("--character", help="the id the demo character is served as (default: the recording's model)")
    parser.add_argument("--answer-all", action="store_true",
                        help="answer every request (default: the upstream fails where the recording shows a 5xx)")
    args = parser.parse_args(argv)

    lines = [line for line in load_recording(args.recording) if line.path.rstrip("/").endswith("/chat/completions")]
    character = args.character or default_character(lines)
    replies = shown_replies(lines)
    root = Path(tempfile.mkdtemp(prefix="kioku-replay-")) if args.keep is None else args.keep
    root.mkdir(parents=True, exist_ok=True)
    report = Report()
    report.say(f"{args.recording}: {len(lines)} chat requests; character {character!r}; "
               f"{sum(1 for line in lines if line.body.get('stream'))} streamed")
    try:
        multi = Pass("several accounts: trusted_headers [kioku, openwebui]", ["kioku", "openwebui"], lines,
                     root / "multi-user", character)
        passes = [multi]
        run_and_check(multi, replies, report, args.answer_all, expect_refused=True)
        anonymous = [ex.line for ex in multi.exchanges if ex.error_code == "user_required"]
        if anonymous:
            single = Pass(f"single user: the {len(anonymous)} requests that named nobody, trusted_headers [kioku]",
                          ["kioku"], anonymous, root / "single-user", character)
            passes.append(single)
            run_and_check(single, replies, report, args.answer_all, expect_refused=False)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
        else:
            report.say(f"data folders and kioku's logs kept in {root}")
    report.say(f"{'FAILED' if report.failures else 'PASSED'}: {len(report.failures)} failed checks")
    return 1 if report.failures else 0


def run_and_check(p: Pass, replies: dict, report: Report, answer_all: bool, *, expect_refused: bool) -> None:
    report.say(f"\n== {p.name}")
    p.folder.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    run_pass(p, replies, reproduce_failures=not answer_all)
    report.say(f"  requests replayed: {len(p.exchanges)} in {time.monotonic() - started:.1f}s")
    stores = read_stores(p.config_path, p.character, chats_by_user(p.exchanges))
    check_all(p.exchanges, stores, report, expect_refused=expect_refused)
    check_prompts(p.prompts, p.exchanges, report)
    log_text = p.log_path.read_text(encoding="utf-8", errors="replace") if p.log_path.exists() else ""
    counts = {kind: len(re.findall(kind + r" \(", log_text)) for kind in ("housekeeping", "conversation")}
    report.say(f"  kioku serve's request log: {counts['housekeeping']} housekeeping, "
               f"{counts['conversation']} conversation lines")


if __name__ == "__main__":
    sys.exit(main())
