"""jionlp logs each expression it cannot parse as an ERROR traceback on the root logger; kioku's
logs must not fill with those expected misses, and other code's root-logger records still pass."""

from __future__ import annotations

import logging
from datetime import datetime
from zoneinfo import ZoneInfo

from engine.timeparse import parse_time_ranges


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_jionlp_misses_stay_out_of_the_log_and_other_records_pass():
    handler = Collect()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        now = datetime(2026, 11, 20, tzinfo=ZoneInfo("Asia/Shanghai"))
        # jionlp raises inside and logs "## exception string `近`" for this sentence.
        found = parse_time_ranges("她最近每天打游戏打到凌晨两点，还开着外放。", now=now)
        logging.error("a host application's own error")
    finally:
        root.removeHandler(handler)
    assert [e.text for e in found][:1] == ["最近"]
    assert [r.getMessage() for r in handler.records] == ["a host application's own error"]
