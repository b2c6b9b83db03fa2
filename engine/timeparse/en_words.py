"""English vocabulary shared by the grammar (``en.py``, ``en_patterns.py``, ``en_rules.py``, ``en_periods.py``)."""

from __future__ import annotations

import re

NUMS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
    "thirty": 30, "couple": 2, "couple of": 2, "a couple": 2, "a couple of": 2, "few": 3, "a few": 3,
    "several": 3,
}
COUPLE = {"couple", "couple of", "a couple", "a couple of"}
"""Vague two: "a couple of days ago" is one to three days back, not exactly two."""
FEW = {"few", "a few", "several"}
"""Vague three: "a few days ago" is the week before today, not exactly three days."""
NUMW = r"(?:\d{1,3}|a couple of|a couple|couple of|couple|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty)"


def num(s: str | None, default: int = 1) -> int | None:
    """A count in digits or words ("3", "a couple of"); `default` when none is written, None when unknown."""
    if s is None:
        return default
    s = re.sub(r"\s+", " ", s.lower())
    return int(s) if s.isdigit() else NUMS.get(s)


WEEKDAYS = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6}
WD_ABBR = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "weds": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4, "sat": 5, "sun": 6}
WD_ALONE = frozenset({"tue", "tues", "weds", "thu", "thur", "thurs", "fri"})
"""Abbreviations that are no English word, so they name a day without a "last" / "on" before them
("Thurs night", "what happened Fri"); "mon", "wed", "sat", "sun" alone stay words."""
WD_ANY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tues|thurs|thur|weds|mon|tue|wed|thu|fri|sat|sun)"

MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
    "oct": 10, "nov": 11, "dec": 12,
}
MONTH = r"(?:january|february|march|april|may|june|july|august|september|october|november|december|sept|jan|feb|mar|apr|jun|jul|aug|sep|oct|nov|dec)"
# Full names that are unambiguous on their own.
SAFE_MONTHS = {"january", "february", "april", "june", "july", "august", "september", "october", "november", "december"}
ORD = r"(?:st|nd|rd|th)"
_ORD_UNITS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
              "ninth": 9}
ORD_WORDS = {
    **_ORD_UNITS, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13, "fourteenth": 14, "fifteenth": 15,
    "sixteenth": 16, "seventeenth": 17, "eighteenth": 18, "nineteenth": 19, "twentieth": 20, "thirtieth": 30,
    **{f"twenty {w}": 20 + n for w, n in _ORD_UNITS.items()}, "thirty first": 31,
}
"""Days of the month written out ("the first of May", "the twenty-first of April"); keys with a
space, which also stands for the hyphen."""
ORDW = "|".join(re.escape(k).replace(r"\ ", r"[\s-]") for k in sorted(ORD_WORDS, key=len, reverse=True))

FESTIVALS = {
    "christmas eve": "christmas_eve", "christmas day": "christmas", "christmas": "christmas",
    "xmas": "christmas", "xmas eve": "christmas_eve", "new year's eve": "new_years_eve", "new years eve": "new_years_eve",
    "nye": "new_years_eve",
    "new year's day": "new_year", "new years day": "new_year", "new year's": "new_year",
    "new years": "new_year", "new year": "new_year",
    "valentine's day": "valentine", "valentines day": "valentine", "valentine's": "valentine", "valentines": "valentine",
    "black friday": "black_friday", "cyber monday": "cyber_monday",
    "halloween": "halloween", "thanksgiving": "thanksgiving", "easter": "easter",
    "mother's day": "mothers_day", "mothers day": "mothers_day", "father's day": "fathers_day",
    "fathers day": "fathers_day", "independence day": "independence_day",
    "fourth of july": "independence_day", "chinese new year": "spring_festival",
    "lunar new year": "spring_festival", "spring festival": "spring_festival",
    "mid-autumn festival": "mid_autumn", "mid autumn festival": "mid_autumn",
    "dragon boat festival": "dragon_boat", "lantern festival": "lantern",
    "april fools' day": "april_fools", "april fools day": "april_fools", "april fool's day": "april_fools",
    # "Labor Day" as the US writes it is September's; "Labour Day" as most of the world (and
    # Chinese users writing English for 劳动节) writes it is May 1st.
    "may day": "labour_day", "labour day": "labour_day", "labor day": "labor_day_us",
    "memorial day": "memorial_day",
}
FEST_RX = "|".join(re.escape(k) for k in sorted(FESTIVALS, key=len, reverse=True)).replace("'", "['’]")


def festival_word(word: str) -> str:
    """A festival as written, in the form `FESTIVALS` lists it (lower case, one space, straight quote)."""
    return re.sub(r"\s+", " ", word.lower().replace("’", "'"))


def festival_key(word: str) -> str:
    return FESTIVALS[festival_word(word)]


PARTS = {"morning": "morning", "afternoon": "afternoon", "evening": "evening", "night": "night", "nite": "night",
          "noon": "noon", "midday": "noon"}
