"""The Redis short-term backend against a real redis-server on a free loopback port: keys, TTL,
the `cacheable` switch, folds, idempotence, and write serialisation across processes."""

from __future__ import annotations

import multiprocessing
import shutil
import threading
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from engine.adapters.llm import ScriptedLLM
from engine.config import ShortTermConfig, load_config
from engine.paths import character_paths
from engine.prompts import Prompts
from engine.shortterm import ShortTermMemory
from engine.stores.base import Turn
from redis_server import RedisServer, redis_server_binary

ROOT = Path(__file__).resolve().parent.parent
TZ = ZoneInfo("Asia/Shanghai")
T0 = datetime(2026, 11, 20, 20, 0, tzinfo=TZ)

pytestmark = pytest.mark.skipif(
    redis_server_binary() is None, reason="redis-server is not installed (scripts/setup.sh --dev installs it)"
)


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server.url


@pytest.fixture
def redis_client(redis_url):
    import redis

    client = redis.Redis.from_url(redis_url, decode_responses=True)
    client.flushdb()
    yield client
    client.close()


def make_backend(tmp_path, redis_url, character="c", **overrides):
    from engine.backends.redis import RedisBackend

    config = ShortTermConfig(**{"backend": "redis", "redis_url": redis_url, "max_messages": 6, "max_tokens": 400,
                                "summary_max_words": 80, **overrides})
    return RedisBackend(paths=character_paths(tmp_path, character), config=config), config


def make_memory(tmp_path, redis_url, llm=None, **overrides):
    backend, config = make_backend(tmp_path, redis_url, **overrides)
    return ShortTermMemory(backend, config=config, llm=llm, prompts=Prompts("zh"), user_name="旅人", char_name="小月")


def turn(i, user_id="u1"):
    return Turn(id=f"t{i:03d}", user_id=user_id, at=T0 + timedelta(minutes=i), user=f"第{i}句：我去了江边散步。", assistant=f"回答{i}：真好。")


class TestKeysAndValues:
    def test_window_is_a_list_of_json_messages_under_the_documented_key(self, tmp_path, redis_url, redis_client):
        mem = make_memory(tmp_path, redis_url, redis_prefix="kk", chat_id="main")
        mem.add_turn(turn(1))
        assert mem.backend.key("u1") == "kk:u1:c/main"
        raw = redis_client.lrange("kk:u1:c/main:window", 0, -1)
        assert [m["id"] for m in map(__import__("json").loads, raw)] == ["t001:u", "t001:a"]
        assert [m.content for m in mem.state("u1").messages] == ["第1句：我去了江边散步。", "回答1：真好。"]

    def test_two_characters_never_share_a_users_window(self, tmp_path, redis_url, redis_client):
        a = make_memory(tmp_path, redis_url)
        b_backend, config = make_backend(tmp_path, redis_url, character="other")
        a.add_turn(turn(1))
        assert b_backend.load("u1").messages == []

    def test_ttl_applies_to_window_and_brain(self, tmp_path, redis_url, redis_client):
        mem = make_memory(tmp_path, redis_url, redis_ttl_s=300)
        for i in range(6):
            mem.add_turn(turn(i))
        mem.fold("u1", now=T0)
        base = mem.backend.key("u1")
        assert 0 < redis_client.ttl(f"{base}:window") <= 300
        assert 0 < redis_client.ttl(f"{base}:brain") <= 300

    def test_no_ttl_by_default(self, tmp_path, redis_url, redis_client):
        mem = make_memory(tmp_path, redis_url)
        mem.add_turn(turn(1))
        assert redis_client.ttl(f"{mem.backend.key('u1')}:window") == -1


class TestSummary:
    def test_fold_stores_summary_and_a_new_process_reads_it(self, tmp_path, redis_url, redis_client):
        llm = ScriptedLLM(rule=lambda msgs: "旅人这几天常去江边散步。")
        mem = make_memory(tmp_path, redis_url, llm=llm)
        for i in range(10):
            mem.add_turn(turn(i))
            mem.fold("u1", now=T0)
        ids = [m.id for m in mem.window("u1")]
        assert ids[0] == "t007:u" and ids[-1] == "t009:a"
        other = make_memory(tmp_path, redis_url)  # a second worker: a fresh client, no shared memory
        assert other.summary("u1") == "旅人这几天常去江边散步。"
        assert [m.id for m in other.window("u1")] == ids
        assert len(redis_client.lrange(f"{mem.backend.key('u1')}:window", 0, -1)) == len(ids)

    def test_cacheable_false_keeps_the_summary_out_of_redis(self, tmp_path, redis_url, redis_client):
        llm = ScriptedLLM(rule=lambda msgs: "只在本进程里的摘要。")
        mem = make_memory(tmp_path, redis_url, llm=llm, cacheable=False)
        for i in range(10):
            mem.add_turn(turn(i))
            mem.fold("u1", now=T0)
        base = mem.backend.key("u1")
        assert redis_client.exists(f"{base}:brain") == 0
        assert mem.summary("u1") == "只在本进程里的摘要。"
        assert redis_client.llen(f"{base}:window") == len(mem.window("u1"))  # the window is stored
        assert make_memory(tmp_path, redis_url, cacheable=False).summary("u1") == ""


class TestIdempotenceAndLocking:
    def test_same_turn_twice_is_a_no_op_across_instances(self, tmp_path, redis_url, redis_client):
        first, second = make_memory(tmp_path, redis_url), make_memory(tmp_path, redis_url)
        assert first.add_turn(turn(1)) is True
        assert second.add_turn(turn(1)) is False
        assert [m.id for m in second.state("u1").messages] == ["t001:u", "t001:a"]

    def test_lock_is_reentrant_in_one_thread(self, tmp_path, redis_url, redis_client):
        backend, _ = make_backend(tmp_path, redis_url)
        with backend.lock("u1"):
            with backend.lock("u1"):
                pass
            assert redis_client.exists(f"{backend.key('u1')}:lock") == 1
        assert redis_client.exists(f"{backend.key('u1')}:lock") == 0

    def test_a_held_lock_makes_another_writer_wait_then_fail_with_a_clear_error(self, tmp_path, redis_url, redis_client):
        from engine.backends.redis import RedisBackendError

        holder, _ = make_backend(tmp_path, redis_url)
        waiter, _ = make_backend(tmp_path, redis_url, redis_lock_wait_s=0.3)
        with holder.lock("u1"):
            with pytest.raises(RedisBackendError, match="redis_lock_wait_s"):
                with waiter.lock("u1"):
                    pass

    def test_threads_appending_for_one_user_keep_every_turn_once(self, tmp_path, redis_url, redis_client):
        mem = make_memory(tmp_path, redis_url, max_messages=1000, max_tokens=100_000)
        sent: dict[int, list[str]] = {}

        def client(c):
            sent[c] = []
            for i in range(15):
                t = Turn(id=f"c{c}-{i:02d}", user_id="u1", at=T0, user=f"c{c} turn {i}", assistant="ok")
                mem.add_turn(t)
                sent[c].append(t.id)

        threads = [threading.Thread(target=client, args=(c,)) for c in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ids = [m.id for m in mem.state("u1").messages]
        assert len(ids) == len(set(ids)) == 6 * 15 * 2
        for c, turns in sent.items():
            assert [i[:-2] for i in ids if i.startswith(f"c{c}-") and i.endswith(":u")] == turns


def _append_in_process(redis_url, root, worker, n):
    mem = make_memory(Path(root), redis_url, max_messages=1000, max_tokens=100_000)
    for i in range(n):
        mem.add_turn(Turn(id=f"p{worker}-{i:02d}", user_id="u1", at=T0, user=f"p{worker} {i}", assistant="ok"))
        if i % 5 == 0:
            mem.fold("u1", now=T0)  # a fold takes the same lock; nothing to evict at this size


def test_processes_appending_for_one_user_are_serialised(tmp_path, redis_url, redis_client):
    """Four processes, 20 turns each, one user: all 80 turns, once each, each process's in order."""
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_in_process, args=(redis_url, str(tmp_path), w, 20)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    mem = make_memory(tmp_path, redis_url, max_messages=1000, max_tokens=100_000)
    ids = [m.id for m in mem.state("u1").messages]
    assert len(ids) == len(set(ids)) == 160
    for w in range(4):
        mine = [i for i in ids if i.startswith(f"p{w}-") and i.endswith(":u")]
        assert mine == [f"p{w}-{i:02d}:u" for i in range(20)]
    # user and assistant message of a turn are adjacent (one RPUSH)
    for a, b in zip(ids[::2], ids[1::2]):
        assert a[:-2] == b[:-2] and a.endswith(":u") and b.endswith(":a")


def test_orchestrator_on_the_redis_backend(tmp_path, redis_url, redis_client, embedder):
    """The whole library with `short_term.backend: redis`: the recorded turn is the next prompt's window."""
    from engine.orchestrator import MemoryOrchestrator

    shutil.copytree(ROOT / "data/agents/xiaoyue", tmp_path / "agents/xiaoyue", ignore=shutil.ignore_patterns("users", ".cache"))
    config = load_config(
        overrides={"data_dir": str(tmp_path), "short_term": {"backend": "redis", "redis_url": redis_url},
                   "diary": {"enabled": False}, "core": {"enabled": False}},
        env={},
    )
    with MemoryOrchestrator.from_config("xiaoyue", config=config, embedder=embedder) as orch:
        orch.record_turn("我今天坐了缆车。", "雾大的时候缆车会停运哦。", user_id="alice", at=T0)
        orch.flush(10)
        result = orch.build_prompt("还记得吗？", user_id="alice", now=T0 + timedelta(minutes=5))
    contents = [m["content"] for m in result.messages]
    assert "我今天坐了缆车。" in contents and "雾大的时候缆车会停运哦。" in contents
    assert redis_client.llen("kioku:alice:xiaoyue/default:window") == 2
    assert not (tmp_path / "agents/xiaoyue/users/alice/history.yaml").exists()


class TestCheckAndSet:
    def test_a_slow_fold_with_a_short_lock_loses_no_turn_appended_meanwhile(self, tmp_path, redis_url, redis_client):
        """The fold's LLM call outlives the lock timeout; other workers append 16 turns meanwhile.
        The fold is applied by check-and-set (LTRIM of what it folded), so all 16 stay."""
        started, release = threading.Event(), threading.Event()

        def slow(messages):
            started.set()
            assert release.wait(10)
            return "慢摘要。"

        folder = make_memory(tmp_path, redis_url, llm=ScriptedLLM(rule=slow), redis_lock_timeout_s=0.2)
        writer = make_memory(tmp_path, redis_url, redis_lock_timeout_s=0.2, redis_lock_wait_s=0.5)
        for i in range(5):
            folder.add_turn(turn(i))
        t = threading.Thread(target=folder.fold, args=("u1",), kwargs={"now": T0})
        t.start()
        assert started.wait(10)
        for i in range(100, 116):
            assert writer.add_turn(turn(i))  # no wait: nobody holds the lock during the LLM call
        release.set()
        t.join(10)
        ids = [m.id for m in writer.state("u1").messages]
        assert [i for i in ids if i.endswith(":u")][-16:] == [f"t{i:03d}:u" for i in range(100, 116)]
        assert writer.summary("u1") == "慢摘要。"

    def test_a_fold_whose_head_changed_is_refused(self, tmp_path, redis_url, redis_client):
        mem = make_memory(tmp_path, redis_url, llm=ScriptedLLM(rule=lambda m: "摘要。"))
        for i in range(5):
            mem.add_turn(turn(i))
        stale = mem.prepare_fold("u1", now=T0)
        mem.remove_turn("u1", "t000")
        assert mem.apply_fold("u1", stale) is False
        assert [m.id for m in mem.state("u1").messages][0] == "t001:u" and mem.summary("u1") == ""

    def test_remove_takes_only_that_turn(self, tmp_path, redis_url, redis_client):
        mem = make_memory(tmp_path, redis_url)
        for i in range(3):
            mem.add_turn(turn(i))
        assert mem.remove_turn("u1", "t001") == 2
        assert mem.remove_turn("u1", "t001") == 0
        assert [m.id for m in mem.state("u1").messages] == ["t000:u", "t000:a", "t002:u", "t002:a"]


class TestChatsAndText:
    def test_each_chat_has_its_own_key_and_the_default_chat_keeps_the_configured_one(self, tmp_path, redis_url, redis_client):
        mem = make_memory(tmp_path, redis_url, chat_id="main")
        mem.add_turn(turn(1))
        mem.add_turn(Turn(id="x1", user_id="u1", at=T0, user="另一个聊天", assistant="好", chat_id="小月的聊天"))
        assert redis_client.llen("kioku:u1:c/main:window") == 2
        (other,) = [k for k in redis_client.keys("kioku:u1:c/*:window") if k != "kioku:u1:c/main:window"]
        assert other.startswith("kioku:u1:c/~")
        assert [m.content for m in mem.state("u1", chat_id="小月的聊天").messages] == ["另一个聊天", "好"]

    def test_odd_text_round_trips(self, tmp_path, redis_url, redis_client):
        text = "一\u2028二\u2029三\u0085四\ud800五"
        mem = make_memory(tmp_path, redis_url, max_messages=2)
        mem.add_turn(Turn(id="t1", user_id="u1", at=T0, user=text, assistant=text))
        assert [m.content for m in make_memory(tmp_path, redis_url).state("u1").messages] == [text, text]
        mem.add_turn(turn(2))
        mem.fold("u1", now=T0)
        assert text in make_memory(tmp_path, redis_url).summary("u1")

    def test_an_unreadable_brain_is_reported_not_raised(self, tmp_path, redis_url, redis_client):
        mem = make_memory(tmp_path, redis_url)
        mem.add_turn(turn(1))
        redis_client.set(f"{mem.backend.key('u1')}:brain", '{"historical_summary": [1, 2]}')
        state = mem.state("u1")
        assert not state.brain_ok and len(state.messages) == 2
        assert any("historical_summary must be text" in p for p in state.problems)
