"""Build `zh_eval.json` (the LoCoMo record format) from the hand-written sources in `conversations/`.

    .venv/bin/python bench/zh_eval/build.py            # writes bench/zh_eval/zh_eval.json
    .venv/bin/python bench/zh_eval/build.py --check    # only validates (exit 1 on a problem)

Source format, one file per conversation:

    id: zh-01
    speaker_a: 林舟            # the user (recorded as the user's message)
    speaker_b: 小月            # the character (recorded as the reply)
    timezone: Asia/Shanghai

    ## 2025-04-26 21:10        # a session: its local start
    A: 你好……                   # speaker_a's turn
    B@cat: 我养了一只橘猫……      # speaker_b's turn, labelled `cat` for the questions

    ? 4 | 小月的猫叫什么？ | 阿黄 | cat           # category | question | answer | labels
    ? 2 | 4月29号我为什么…？ | … | logo,stress

Categories as in LoCoMo's file: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop. Each label
names one turn; the JSON gets LoCoMo's `D<session>:<n>` ids. Checks: sessions of 15-40 turns that
start with speaker_a and alternate, 5-15 sessions in date order, every label defined once and
used, every question with evidence; and every time expression in a temporal question, read at
the protocol's `now` (the last session + 1 day), covers the days of its evidence.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

HERE = Path(__file__).resolve().parent
SESSION = re.compile(r"^## (\d{4}-\d{2}-\d{2} \d{2}:\d{2})$")
TURN = re.compile(r"^([AB])(?:@([\w-]+))?: (.+)$")
QUESTION = re.compile(r"^\? ([1-4]) \| (.+?) \| (.+?) \| ([\w,-]+)$")
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]


@dataclass
class Conversation:
    path: Path
    meta: dict[str, str] = field(default_factory=dict)
    sessions: list[tuple[datetime, list[dict[str, str]]]] = field(default_factory=list)
    labels: dict[str, tuple[str, datetime]] = field(default_factory=dict)
    qa: list[dict[str, object]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def problem(self, line: int, message: str) -> None:
        self.problems.append(f"{self.path.name}:{line}: {message}")


def locomo_time(at: datetime) -> str:
    """LoCoMo's `1:56 pm on 8 May, 2023`."""
    hour = at.hour % 12 or 12
    return f"{hour}:{at.minute:02d} {'am' if at.hour < 12 else 'pm'} on {at.day} {MONTHS[at.month - 1]}, {at.year}"


def parse(path: Path) -> Conversation:
    conv = Conversation(path)
    pending: list[tuple[int, str, str, str, str]] = []
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#") and not line.startswith("## "):
            continue
        if m := SESSION.match(line):
            tz = ZoneInfo(conv.meta.get("timezone", "Asia/Shanghai"))
            conv.sessions.append((datetime.strptime(m.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=tz), []))
        elif m := TURN.match(line):
            if not conv.sessions:
                conv.problem(n, "a turn before the first session")
                continue
            at, turns = conv.sessions[-1]
            speaker = conv.meta["speaker_a"] if m.group(1) == "A" else conv.meta["speaker_b"]
            if turns and turns[-1]["speaker"] == speaker or not turns and m.group(1) != "A":
                conv.problem(n, "speakers must alternate, starting with speaker_a")
            dia_id = f"D{len(conv.sessions)}:{len(turns) + 1}"
            turns.append({"speaker": speaker, "dia_id": dia_id, "text": m.group(3)})
            if m.group(2):
                if m.group(2) in conv.labels:
                    conv.problem(n, f"label {m.group(2)!r} defined twice")
                conv.labels[m.group(2)] = (dia_id, at)
        elif m := QUESTION.match(line):
            pending.append((n, m.group(1), m.group(2), m.group(3), m.group(4)))
        elif ":" in line and not conv.sessions:
            key, _, value = line.partition(":")
            conv.meta[key.strip()] = value.split("#")[0].strip()
        else:
            conv.problem(n, f"cannot read this line: {line[:40]!r}")
    for n, category, question, answer, labels in pending:
        evidence = []
        for label in labels.split(","):
            if label not in conv.labels:
                conv.problem(n, f"unknown label {label!r}")
            else:
                evidence.append(conv.labels[label][0])
        conv.qa.append({"question": question, "answer": answer, "evidence": evidence, "category": int(category),
                        "_line": n, "_labels": labels.split(",")})
    return conv


def check(conv: Conversation) -> None:
    if not 5 <= len(conv.sessions) <= 15:
        conv.problem(1, f"{len(conv.sessions)} sessions; want 5-15")
    for i, (at, turns) in enumerate(conv.sessions, 1):
        if not 15 <= len(turns) <= 40:
            conv.problem(1, f"session {i} has {len(turns)} turns; want 15-40")
        if turns and turns[-1]["speaker"] != conv.meta["speaker_b"]:
            conv.problem(1, f"session {i} should end with speaker_b (each user turn gets a reply)")
        if i > 1 and at <= conv.sessions[i - 2][0]:
            conv.problem(1, f"session {i} is not after session {i - 1}")
    used = {label for q in conv.qa for label in q["_labels"]}  # type: ignore[union-attr]
    for label in sorted(set(conv.labels) - used):
        conv.problem(1, f"label {label!r} is never used by a question")
    _check_times(conv)


def _check_times(conv: Conversation) -> None:
    """Every time expression of a temporal question must cover its evidence's days at `now`."""
    sys.path.insert(0, str(HERE.parent.parent))
    from engine.timeparse import parse_time_ranges  # noqa: PLC0415 - only for the check

    now = conv.sessions[-1][0] + timedelta(days=1)
    for q in conv.qa:
        if q["category"] != 2:
            continue
        ranges = parse_time_ranges(str(q["question"]), now=now)
        if not ranges:
            continue
        for label in q["_labels"]:  # type: ignore[union-attr]
            day = conv.labels[label][1] if label in conv.labels else None
            if day is not None and not any(r.start <= day < r.end for r in ranges):
                conv.problem(int(q["_line"]), f"{q['question']!r} at {now:%Y-%m-%d} does not cover {day:%Y-%m-%d}")  # type: ignore[call-overload]


def to_record(conv: Conversation) -> dict[str, object]:
    conversation: dict[str, object] = {"speaker_a": conv.meta["speaker_a"], "speaker_b": conv.meta["speaker_b"]}
    for i, (at, turns) in enumerate(conv.sessions, 1):
        conversation[f"session_{i}_date_time"] = locomo_time(at)
        conversation[f"session_{i}"] = turns
    qa = [{k: v for k, v in q.items() if not k.startswith("_")} for q in conv.qa]
    return {"sample_id": conv.meta["id"], "timezone": conv.meta.get("timezone", "Asia/Shanghai"),
            "conversation": conversation, "qa": qa}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="validate only")
    parser.add_argument("--out", type=Path, default=HERE / "zh_eval.json")
    args = parser.parse_args()
    convs = [parse(p) for p in sorted((HERE / "conversations").glob("*.txt"))]
    for conv in convs:
        check(conv)
    problems = [p for c in convs for p in c.problems]
    for p in problems:
        print(p, file=sys.stderr)
    turns = sum(len(t) for c in convs for _, t in c.sessions)
    by_cat: dict[int, int] = {}
    for c in convs:
        for q in c.qa:
            by_cat[int(q["category"])] = by_cat.get(int(q["category"]), 0) + 1  # type: ignore[call-overload]
    print(f"{len(convs)} conversations, {sum(len(c.sessions) for c in convs)} sessions, {turns} turns, "
          f"questions per category {dict(sorted(by_cat.items()))}")
    if problems:
        return 1
    if not args.check:
        args.out.write_text(json.dumps([to_record(c) for c in convs], ensure_ascii=False, indent=1) + "\n",
                            encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
