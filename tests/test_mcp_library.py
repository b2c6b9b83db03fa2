"""What the MCP tools stand on, in the library (issue 40): time arguments as clients give them
(`engine.timerange`, shared with the memory API and the inspector) and the admin API's `recall`
and `search_memory`, which join the stores so every surface answers alike."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from engine.config import load_config
from engine.orchestrator import MemoryOrchestrator
from engine.testing.serve import copy_demo
from engine.timerange import BadRangeError, BadTimeError, iso_range, named_range, search_range
from mcp_kit import CHARACTER, ME, NOW, TZ, config_overrides, write_memory


def d(day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=TZ)


@pytest.mark.parametrize(
    ("text", "start", "end", "understood"),
    [("昨天", d(21), d(22), "昨天"),
     ("what did we talk about last Tuesday?", d(17), d(18), "last Tuesday"),
     ("昨天和前天", d(20), d(22), "昨天 + 前天"),
     ("2026-11-20", d(20), d(21), "2026-11-20"),
     ("2026-11-20T08:00", d(20, 8), d(21, 8), "2026-11-20T08:00"),
     ("2026-11-18/2026-11-20", d(18), d(21), "2026-11-18/2026-11-20"),
     ("2026-11-18..2026-11-20T12:00", d(18), d(20, 12), "2026-11-18..2026-11-20T12:00"),
     ("2026-11-18 to 2026-11-19", d(18), d(20), "2026-11-18 to 2026-11-19")],
    ids=["zh-day", "en-in-a-question", "two-expressions-joined", "iso-date", "iso-time-a-day-from-it",
         "iso-interval-end-date-inclusive", "iso-interval-end-time-exclusive", "iso-interval-with-to"],
)
def test_named_ranges(text, start, end, understood):
    r = named_range(text, TZ, now=NOW)
    assert (r.start, r.end, r.text) == (start, end, understood)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [("Thanksgiving", datetime(2025, 11, 27, tzinfo=TZ), datetime(2025, 11, 28, tzinfo=TZ)),
     ("感恩节", datetime(2025, 11, 27, tzinfo=TZ), datetime(2025, 11, 28, tzinfo=TZ)),
     ("December 25", datetime(2025, 12, 25, tzinfo=TZ), datetime(2025, 12, 26, tzinfo=TZ)),
     ("周一", d(16), d(17)),
     ("昨天", d(21), d(22)),
     ("Christmas 2026", datetime(2026, 12, 25, tzinfo=TZ), datetime(2026, 12, 26, tzinfo=TZ)),
     ("下周一", d(23), d(24)),
     ("tomorrow", d(23), d(24))],
    ids=["festival-ahead-moves-back", "zh-festival-ahead-moves-back", "yearless-date-ahead-moves-back",
         "bare-weekday", "already-past", "year-fixes-it", "next-stays-ahead", "tomorrow-stays-ahead"],
)
def test_a_time_of_memory_is_the_last_one_unless_its_words_fix_it(text, start, end):
    """The MCP tools' times are of memory (`past=True`): a bare festival or date the parser placed
    ahead is the last one; words that fix a time keep it (a recall of tomorrow finds nothing)."""
    r = named_range(text, TZ, now=NOW, past=True)
    assert (r.start, r.end) == (start, end)


@pytest.mark.parametrize(
    ("text", "error", "words"),
    [("the blue cheese", BadTimeError, "names no time"),
     ("   ", BadTimeError, "is empty"),
     ("2026-13-45", BadTimeError, "must be an ISO date or time"),
     ("2026-11-20/2026-11-18", BadRangeError, "must be after start"),
     ("0001-01-01", BadRangeError, "outside the supported range")],
    ids=["no-time", "empty", "iso-shaped-nonsense", "backwards", "calendar-edge"],
)
def test_named_range_errors_name_the_argument(text, error, words):
    with pytest.raises(error, match=words) as caught:
        named_range(text, TZ, now=NOW, argument="time")
    assert caught.value.argument == "time" and str(caught.value).startswith("time")


def test_iso_bounds_as_the_memory_api_and_inspector_read_them():
    """The helpers moved out of the service keep its rules: the diary listing's end is exclusive and
    defaults to a day; the search's end date is inclusive and either end may be open."""
    assert iso_range("2026-11-20", None, TZ) == (d(20), d(21))
    with pytest.raises(BadRangeError, match="at most 366 days"):
        iso_range("2024-01-01", "2026-01-01", TZ)
    with pytest.raises(BadTimeError, match="^end must be an ISO date"):
        iso_range("2026-11-20", "soon", TZ)
    assert search_range(None, None, TZ, now=NOW) == (None, None)
    assert search_range("2026-11-01", "2026-11-20", TZ, now=NOW) == (d(1), d(21))
    assert search_range(None, "2026-11-20", TZ, now=NOW)[0] == datetime(1970, 1, 1, tzinfo=TZ)


@pytest.fixture(scope="module")
def orch(tmp_path_factory, embedder):
    data = copy_demo(tmp_path_factory.mktemp("mcp-library"))
    with MemoryOrchestrator.from_config(CHARACTER, config=load_config(overrides=config_overrides(data), env={}),
                                        embedder=embedder) as orch:
        write_memory(orch)
        yield orch


class TestRecall:
    """Two turns a day (19:05, 21:05) from 11-15 to 11-21; more than 3 turns over several days
    are digested (`diary.digest_over_turns: 3` in these tests)."""

    def test_a_day_gives_its_turns(self, orch):
        r = orch.admin.recall(ME, d(18), d(19))
        assert (r.total, r.days, len(r.turns), r.digests) == (2, 1, 2, ())
        assert "海报" in r.turns[0].user

    def test_a_day_cut_by_the_range_counts_only_what_lies_inside(self, orch):
        r = orch.admin.recall(ME, d(21, 20), d(22))
        assert (r.total, [e.at.hour for e in r.turns]) == (1, [21])

    def test_a_long_range_gives_one_digest_per_day_the_latest_kept_by_the_limit(self, orch):
        r = orch.admin.recall(ME, d(16), d(23), limit=3)
        assert (r.total, r.days, r.turns) == (12, 6, ())
        assert [(x.day.day, x.turns, x.source) for x in r.digests] == [(19, 2, "digest from tags"),
                                                                      (20, 2, "digest from tags"),
                                                                      (21, 2, "digest from tags")]

    def test_an_empty_range(self, orch):
        r = orch.admin.recall(ME, d(1), d(2))
        assert (r.total, r.days, r.turns, r.digests) == (0, 0, (), ())


def test_search_memory_joins_the_stores_with_their_reasons(orch):
    found = orch.admin.search_memory(ME, "阿黄和缆车", k=5, now=NOW)
    assert "缆车" in found.diary[0].turn.user and found.diary[0].why == "words"
    assert {h.store for h in found.world_book} == {"world_book"} and len(found.world_book) == 2
    assert all(h.reason for h in found.world_book)
    within = orch.admin.search_memory(ME, "缆车", start=d(16), end=d(17), k=5, now=NOW)
    assert all(d(16) <= m.turn.at < d(17) for m in within.diary)
    facts = orch.admin.search_memory(ME, "我喜欢喝什么茶", k=5, now=NOW).facts
    assert [h.store for h in facts] == ["core"] and "桂花乌龙" in facts[0].text


def test_search_memory_reaches_one_user_only(orch):
    found = orch.admin.search_memory(ME, "吉他比赛", k=10, now=NOW + timedelta(days=1))
    assert all("吉他" not in m.turn.user for m in found.diary) and not any("吉他" in h.text for h in found.facts)
