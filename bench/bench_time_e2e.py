"""Time questions end to end: does a question naming a past day bring that day's turns?

    .venv/bin/python bench/bench_time_e2e.py [--data DIR] [--convs conv-26,...] [--no-zh] [--seed 7]
        [--templates bench/time_probe/setN.json] [--phrases wide] [--script traditional]

Each conversation of the dev split (and of bench/zh_eval/*.json) is recorded as bench_recall.py
records it (`record_turn(at=…)`; `--data DIR` keeps the users between runs, shared with that
bench). Then, for every day the conversation has turns on, questions name that day in several
phrasing families, each asked with `build_prompt` at a `now` that makes the time words mean that
day ("yesterday" the next day, "on Tuesday" later that week, "June 3" weeks later):

- range families ask for the day as a whole ("What did we talk about yesterday?"),
- content families ask for something within it ("On June 3 I told you about the pottery class,
  what did I say?"), a topic taken from one of that day's user lines,
- statements only mention the day ("I was exhausted yesterday.") and must not pull it in.

Per question: fired = some diary hit comes from the asked range; turn recall = the share of the
day's turns in the built prompt (a turn counts by its id among the diary's hits, or by its text
anywhere in the messages, e.g. the window). "fits" = the day's turns, as the diary renders them,
fit the diary's budget: the must-show is on those. Statements report how often a range fired.
The templates here are the bench's own, written apart from the decision's training set
(tests/data/time_questions/). `--script traditional` turns the Chinese conversations, time phrases
and templates into Traditional characters (OpenCC), as a user in Taiwan writes: record it into its
own `--data` folder. Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_recall import EVAL, finish_index, language_of, open_orch, record_once, turns_of  # noqa: E402

WEEKDAYS_EN = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS_EN = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
             "November", "December"]
WEEKDAYS_ZH = "一二三四五六日"


@dataclass(frozen=True)
class Phrase:
    """A way to name day D and the `now` (days after D) at which it means D."""

    text: str
    lead: str  # the same words opening a sentence
    days_after: int


def phrases(day: date, lang: str, rng: random.Random, *, wide: bool = False) -> list[Phrase]:
    """Names of `day`, each with a `now` at which it means that day."""
    out: list[Phrase] = []
    if lang == "en":
        out += [Phrase("yesterday", "Yesterday", 1), Phrase("the day before yesterday", "The day before yesterday", 2),
                Phrase("two days ago", "Two days ago", 2), Phrase("three days ago", "Three days ago", 3)]
        ahead = 6 - day.weekday()  # the rest of that week (Sunday ends it)
        if ahead >= 2:
            k = rng.randint(2, ahead)
            out.append(Phrase(f"on {WEEKDAYS_EN[day.weekday()]}", f"On {WEEKDAYS_EN[day.weekday()]}", k))
        k = rng.randint(10, 40)
        d = f"{MONTHS_EN[day.month - 1]} {day.day}"
        out.append(Phrase(f"on {d}", f"On {d}", k))
    else:
        out += [Phrase("昨天", "昨天", 1), Phrase("前天", "前天", 2), Phrase("大前天", "大前天", 3), Phrase("三天前", "三天前", 3)]
        ahead = 6 - day.weekday()
        if ahead >= 2:
            k = rng.randint(2, ahead)
            w = rng.choice(["周", "星期"]) + WEEKDAYS_ZH[day.weekday()]
            out.append(Phrase(w, w, k))
        k = 7 - day.weekday() + rng.randint(0, 6)  # some day of the next week
        out.append(Phrase(f"上周{WEEKDAYS_ZH[day.weekday()]}", f"上周{WEEKDAYS_ZH[day.weekday()]}", k))
        k = rng.randint(10, 40)
        d = f"{day.month}月{day.day}{rng.choice(['号', '日'])}"
        out.append(Phrase(d, d, k))
    return out + (_wide(day, lang, rng) if wide else [])


_NUM_EN = ["zero", "one", "two", "three", "four", "five", "six", "seven"]
_NUM_ZH = "零一两三四五六七"


def _wide(day: date, lang: str, rng: random.Random) -> list[Phrase]:
    """More ways to name a day (`--phrases wide`), each only where it is unambiguous: "last
    Tuesday" asked in the next week before that weekday (the latest Tuesday and last week's
    Tuesday are then the same day), "the 3rd" later in the same month. Not "a week ago" / 一周前: by
    the manual's convention (docs/time-expressions.md) they name last week, not one day."""
    wd, out = day.weekday(), []
    n = rng.randint(4, 6)
    later_in_month = [k for k in range(2, 25) if (day + timedelta(days=k)).month == day.month]
    if lang == "en":
        out.append(Phrase(f"{_NUM_EN[n]} days ago", f"{_NUM_EN[n].capitalize()} days ago", n))
        if wd >= 1:
            w = WEEKDAYS_EN[wd]
            out += [Phrase(f"last {w}", f"Last {w}", 7 - wd + rng.randint(0, wd - 1)),
                    Phrase(f"this past {w}", f"This past {w}", 7 - wd + rng.randint(0, wd - 1))]
        th = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}.get(day.day, "th")
        if later_in_month:
            out.append(Phrase(f"on the {day.day}{th}", f"On the {day.day}{th}", rng.choice(later_in_month)))
        d = f"the {day.day}{th} of {MONTHS_EN[day.month - 1]}"
        out.append(Phrase(f"on {d}", f"On {d}", rng.randint(10, 40)))
    else:
        out.append(Phrase(f"{_NUM_ZH[n]}天前", f"{_NUM_ZH[n]}天前", n))
        if wd >= 1:
            w = rng.choice(["上星期", "上礼拜"]) + WEEKDAYS_ZH[wd]
            out.append(Phrase(w, w, 7 - wd + rng.randint(0, wd - 1)))
        if later_in_month:
            d = f"{day.day}号"
            out.append(Phrase(d, d, rng.choice(later_in_month)))
        d = f"{day.month}月{day.day}日那天"
        out.append(Phrase(d, d, rng.randint(10, 40)))
    return out


# {t}: the time words mid-sentence; {T}: opening it; {topic}: a word from one of the day's user lines.
FAMILIES = {
    "en": {
        "range": {
            "talk-about": ["What did we talk about {t}?", "{T}, what did we chat about?"],
            "conversation-about": ["What was our conversation {t} about?", "What was our chat {t} about?"],
            "remember-told": ["Do you remember what I told you {t}?", "Do you recall what I said to you {t}?"],
            "remind-me": ["Remind me what we discussed {t}.", "Can you remind me what we went over {t}?"],
            "summarize": ["Summarize our conversation from {t}.", "Give me a quick recap of what we said {t}."],
        },
        "content": {
            "topic-what-said": ["What did I tell you about {topic} {t}?", "{T} I mentioned {topic}, what did I say about it?"],
            "date-first": ["{T}, I brought up {topic} with you. What was that about?"],
            "thing": ["{T} I told you about something related to {topic}, what was it again?"],
        },
        "statement": {
            "statement": ["I was so tired {t}.", "{T} I went for a long walk after work.", "It rained all day {t}."],
        },
    },
    "zh": {
        "range": {
            "talk-about": ["{t}我们聊了什么？", "{T}咱俩都聊了些啥"],
            "conversation-about": ["{t}的聊天是关于什么的？", "{T}我们那次对话主要说了什么？"],
            "remember-told": ["你还记得{t}我跟你说了什么吗？", "{T}我跟你讲过什么，你还记得吗"],
            "remind-me": ["提醒我一下{t}我们说了啥", "帮我回忆一下{t}我们聊的内容"],
            "summarize": ["把{t}的聊天总结一下", "给我讲讲{t}我们都说了什么"],
        },
        "content": {
            "topic-what-said": ["{t}我跟你说的{topic}是怎么回事来着？", "{T}我提到{topic}，我当时是怎么说的？"],
            "date-first": ["在{t}，我跟你说过{topic}的事，具体是什么？"],
            "thing": ["{T}那天我跟你聊到{topic}，后来怎么样了来着？"],
        },
        "statement": {
            "statement": ["{t}累死我了。", "{T}下班后去散了很久的步", "{t}下了一整天的雨"],
        },
    },
}

_EN_STOP = set("""a an the and or but so to of in on at for with from by about as is are was were be been i you we he she
it they me my your our his her their them this that these those what which who when where why how do did does have has
had not no yes just really very too also then than there here get got go went going like know think said say tell told
would could should will can im i'm it's that's dont don't didnt didn't yeah oh well okay ok lol haha hey thanks thank""".split())


def topic_of(lines: list[str], lang: str, rng: random.Random) -> str:
    """A word or two a user would remember of that day: from one of its user lines."""
    rng.shuffle(lines)
    for line in lines:
        if lang == "en":
            words = [w for w in re.findall(r"[A-Za-z][A-Za-z'-]{3,}", line) if w.lower() not in _EN_STOP]
            if words:
                w = max(words, key=len)
                return ("my " if rng.random() < 0.3 else "the ") + w.lower()
        else:
            import rjieba

            words = [w for w in rjieba.cut(line) if len(w) >= 2 and re.fullmatch(r"[\u4e00-\u9fff]+", w)]
            if words:
                return max(words, key=len)
    return "that" if lang == "en" else "那件事"


def fill(template: str, phrase: Phrase, topic: str) -> str:
    return template.replace("{t}", phrase.text).replace("{T}", phrase.lead).replace("{topic}", topic)


def day_fits(orch, day_entries, budget: int) -> bool:
    from engine.stores.diary.render import turn_text
    from engine.tokens import count_tokens

    config = orch.config.diary
    return sum(count_tokens(turn_text(e, orch.tz, max_tokens=config.max_turn_tokens)) for e in day_entries) <= budget


def present(entry, ids: set[str], built: str) -> bool:
    if entry.id in ids:
        return True
    probe = " ".join((entry.user or entry.assistant).split())[:40]
    return bool(probe) and probe in built


def asked_of(templates: dict | None, language: str, rng: random.Random) -> list[tuple[str, str, list[str]]]:
    """(kind, family, templates to choose one from) of the questions asked about one day: every
    family of the bench's own, or with `--templates` a few drawn from each kind of that file."""
    if templates is None:
        return [(kind, family, texts) for kind, families in FAMILIES[language].items()
                for family, texts in families.items()]
    per_kind = {"range": 3, "content": 3, "statement": 2}
    return [(kind, t["family"], [t["text"]]) for kind, items in templates[language].items()
            for t in rng.sample(items, min(per_kind.get(kind, 2), len(items)))]


@functools.cache
def _s2tw():
    import opencc

    return opencc.OpenCC("s2tw")


def traditional(value):
    """`value` (a str, or JSON of them) in Traditional characters as written in Taiwan (OpenCC's
    s2tw: characters and their phrases, no change of vocabulary)."""
    if isinstance(value, str):
        return _s2tw().convert(value)
    if isinstance(value, list):
        return [traditional(v) for v in value]
    if isinstance(value, dict):
        return {k: traditional(v) for k, v in value.items()}
    return value


def run_sample(sample: dict, data: Path, rng: random.Random, rows: list[dict], *, templates: dict | None = None,
               wide: bool = False, script: str = "simplified") -> None:
    language, zone = language_of(sample)
    tz = ZoneInfo(sample.get("timezone", zone))
    user = sample["sample_id"]
    turns = turns_of(sample["conversation"], tz)
    orch = open_orch(data, sample)
    record_once(orch, data, user, turns)
    finish_index(orch, user)
    budget = orch.config.retrieval.caps.diary
    days = sorted({at.astimezone(tz).date() for at, _, _ in turns})
    for day in days:
        lo = datetime(day.year, day.month, day.day, tzinfo=tz)
        entries = orch.admin.diary(user, lo, lo + timedelta(days=1))
        if not entries:
            continue
        fits = day_fits(orch, entries, budget)
        user_lines = [e.user for e in entries if e.user.strip()]
        for kind, family, choices in asked_of(templates, language, rng):
            phrase = rng.choice(phrases(day, language, rng, wide=wide))
            template = rng.choice(choices)
            if language == "zh" and script == "traditional":
                phrase = Phrase(traditional(phrase.text), traditional(phrase.lead), phrase.days_after)
                template = traditional(template)
            topic = topic_of(list(user_lines), language, rng) if "{topic}" in template else ""
            question = fill(template, phrase, topic)
            now = lo + timedelta(days=phrase.days_after, hours=rng.choice([9, 13, 20]), minutes=rng.randint(0, 59))
            t = time.perf_counter()
            result = orch.build_prompt(question, user_id=user, now=now)
            ms = (time.perf_counter() - t) * 1000
            built = "\n".join(" ".join(m["content"].split()) for m in result.messages)
            ids: set[str] = set()
            fired = False
            for h in result.hits:
                if h.store != "diary":
                    continue
                ids |= {str(i) for i in (h.meta.get("ids") or [h.meta.get("id")]) if i}
                fired |= str(h.reason).startswith("expression") and h.meta.get("kind") in ("turn", "digest", "omitted")
            found = sum(present(e, ids, built) for e in entries)
            rows.append({"lang": language, "conv": user, "kind": kind, "family": family, "question": question,
                         "phrase": phrase.text, "fits": fits, "fired": fired, "found": found,
                         "total": len(entries), "ms": ms, "now": now.isoformat(),
                         "reasons": sorted({str(h.reason)[:90] for h in result.hits if h.store == "diary"})})
    orch.close()


def summarize(rows: list[dict], *, show_misses: int) -> None:
    def line(label: str, sel: list[dict]) -> str:
        if not sel:
            return f"{label}: n/a"
        fired = sum(r["fired"] for r in sel) / len(sel)
        rec = sum(r["found"] for r in sel) / sum(r["total"] for r in sel)
        fit = [r for r in sel if r["fits"]]
        fit_rec = sum(r["found"] for r in fit) / sum(r["total"] for r in fit) if fit else float("nan")
        return f"{label}: n {len(sel)}  fired {fired:.3f}  turn recall {rec:.3f}  (days that fit: n {len(fit)} recall {fit_rec:.3f})"

    asked = [r for r in rows if r["kind"] != "statement"]
    stated = [r for r in rows if r["kind"] == "statement"]
    for lang in ("en", "zh"):
        sel = [r for r in asked if r["lang"] == lang]
        if not sel:
            continue
        print(line(f"{lang} all questions", sel))
        fams = sorted({(r["kind"], r["family"]) for r in sel})
        for kind, fam in fams:
            print("  " + line(f"{kind}/{fam}", [r for r in sel if r["family"] == fam and r["kind"] == kind]))
        st = [r for r in stated if r["lang"] == lang]
        if st:
            print(f"  statements: n {len(st)}  range fired {sum(r['fired'] for r in st) / len(st):.3f}")
    misses = sorted((r for r in asked if r["fits"] and r["found"] < r["total"]), key=lambda r: r["found"] / r["total"])
    for r in misses[:show_misses]:
        print(f"    miss {r['lang']} {r['family']:<20} {r['found']}/{r['total']} fired={r['fired']}  {r['question']}")
    for r in [r for r in stated if r["fired"]][:show_misses]:
        print(f"    false trigger {r['lang']} {r['family']:<20} {r['question']}")
    fit = [r for r in asked if r["fits"]]
    st_rate = sum(r["fired"] for r in stated) / len(stated) if stated else float("nan")
    print(
        f"SUMMARY time e2e: questions {len(asked)}  fired {sum(r['fired'] for r in asked) / len(asked):.3f}  "
        f"turn recall {sum(r['found'] for r in asked) / sum(r['total'] for r in asked):.3f}  "
        f"days that fit: {sum(r['found'] for r in fit) / max(1, sum(r['total'] for r in fit)):.3f} (n {len(fit)})  "
        f"statements fired {st_rate:.3f} (n {len(stated)})  "
        f"build_prompt p50 {statistics.median(r['ms'] for r in rows):.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="keep recorded users here (shared with bench_recall --data)")
    parser.add_argument("--eval", type=Path, default=EVAL)
    parser.add_argument("--convs", help="comma-separated sample ids (default: all)")
    parser.add_argument("--no-zh", action="store_true", help="skip bench/zh_eval/*.json")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--misses", type=int, default=15, help="print this many of the worst questions")
    parser.add_argument("--json", type=Path, help="write every question's row here")
    parser.add_argument("--templates", type=Path, help="questions of another author instead of FAMILIES: JSON "
                        '{lang: {range|content|statement: [{"family", "text"}]}}, {t}/{T}/{topic} as in FAMILIES; '
                        "3 range, 3 content and 2 statements drawn per day")
    parser.add_argument("--phrases", choices=("bench", "wide"), default="bench",
                        help="wide: also 'four days ago', 'last Tuesday', 'the 3rd', 上星期二, 3号 …")
    parser.add_argument("--script", choices=("simplified", "traditional"), default="simplified",
                        help="traditional: the Chinese conversations, phrases and templates in Traditional characters")
    args = parser.parse_args()
    from engine.runtime import configure_threads

    configure_threads()
    data = args.data or Path(tempfile.mkdtemp(prefix="kioku-time-e2e-"))
    rng = random.Random(args.seed)
    rows: list[dict] = []
    templates = json.loads(args.templates.read_text(encoding="utf-8")) if args.templates else None
    try:
        samples = json.loads(args.eval.read_text(encoding="utf-8"))
        sets = [(data / "locomo", samples)]
        if not args.no_zh:
            for path in sorted((ROOT / "bench" / "zh_eval").glob("*.json")):
                group = json.loads(path.read_text(encoding="utf-8"))
                sets.append((data / f"zh-{path.stem}", traditional(group) if args.script == "traditional" else group))
        wanted = set(args.convs.split(",")) if args.convs else None
        for folder, group in sets:
            for sample in group:
                if wanted is None or sample["sample_id"] in wanted:
                    run_sample(sample, folder, rng, rows, templates=templates, wide=args.phrases == "wide",
                               script=args.script)
        summarize(rows, show_misses=args.misses)
        if args.json:
            args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    finally:
        if args.data is None:
            shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
