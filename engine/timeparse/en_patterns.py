"""The English grammar's regex table: one pattern per expression family, for ``en_rules.py``.

Kept apart from the handlers because it is data: what text each family matches, not what it means.
"""

from __future__ import annotations

import re

from .en_words import FEST_RX as _FEST_RX
from .en_words import MONTH, NUMW, ORD, ORDW, WD_ANY

_I = re.IGNORECASE
RX = {
    "rolling": re.compile(
        r"\b(?:(?:in|over|during|for|within)\s+)?(?P<the>the\s+)?(?P<pre>past|last|previous|recent)\s+"
        r"(?:(?P<n>" + NUMW + r")\s+)?(?P<u>days?|hours?|weeks?|fortnights?|months?|years?)\b", _I),
    "recent": re.compile(r"\b(?:recently|lately|as of late|of late)\b", _I),
    "ago": re.compile(r"\b(?P<n>" + NUMW + r")\s+(?P<u>days?|nights?|weeks?|fortnights?|months?|years?|hours?|minutes?|mins?)\s+(?:ago|back|before now)\b", _I),
    "later": re.compile(r"\b(?:in\s+(?P<n1>" + NUMW + r")\s+(?P<u1>days?|weeks?)|(?P<n2>" + NUMW
                        + r")\s+(?P<u2>days?|weeks?)\s+from\s+(?:now|today))\b", _I),
    "few_days": re.compile(r"\b(?:the other (?:day|night|nite|evening|morning|afternoon)|a few days ago|several days ago)\b", _I),
    "dayword": re.compile(
        r"\b(?:(?P<dby>(?:the\s+)?day\s+before\s+yesterday)|(?P<dat>(?:the\s+)?day\s+after\s+tomorrow)"
        r"|(?P<yd>yesterday|y['’]?day|yest)|(?P<td>today|earlier today)|(?P<tm>tomorrow)|(?P<tn>tonight|tonite)"
        r"|(?<!the )(?:(?P<ln>last\s+(?:night|nite))|(?P<le>last\s+evening))|(?:this|earlier\s+this)\s+(?P<tp>morning|afternoon|evening))\b", _I),
    "day_before": re.compile(r"\bthe\s+day\s+before\b(?!\s+yesterday)", _I),
    "week": re.compile(
        r"\b(?:(?P<two_back>the\s+week\s+before\s+last)|(?P<two_fwd>the\s+week\s+after\s+next)"
        r"|(?:earlier\s+|later\s+)?(?P<p>last|this|next|the\s+previous|previous|the\s+coming|the\s+current|current)\s+week)\b(?!end)", _I),
    "weekend": re.compile(
        r"\b(?:(?P<wb>(?:over\s+)?the\s+weekend\s+before\s+last)|(?P<p>last|this|next|this\s+past|this\s+coming|the\s+previous|the|over\s+the|your|my|our)\s+weekend)\b", _I),
    "weekday": re.compile(
        r"\b(?:(?P<p>last|this|next|on|this\s+past|this\s+coming|the\s+previous)\s+)?(?P<wd>" + WD_ANY + r")(?!s\b)"
        r"(?:\s+(?:of\s+)?(?P<wk>last|this|next)\s+week)?\b", _I),
    "month_rel": re.compile(
        r"\b(?:(?P<two_back>the\s+month\s+before\s+last)|(?P<p>last|this|next|the\s+previous|previous|the\s+current)\s+month)\b", _I),
    "year_rel": re.compile(
        r"\b(?:(?P<two_back>the\s+year\s+before\s+last)|(?P<p>last|this|next|the\s+previous|previous)\s+year)\b", _I),
    "year": re.compile(r"\b(?P<pre>in|during|since|throughout|back\s+in|of)\s+(?P<y>(?:19|20|21)\d{2})\b(?![-/.]\d)", _I),
    "md": re.compile(
        r"\b(?P<m>" + MONTH + r")\.?\s+(?P<d>\d{1,2})" + ORD + r"?(?!\d|:|\s*(?:am|pm|a\.m|p\.m)\b)(?:,?\s+(?P<y>(?:19|20|21)\d{2}))?\b", _I),
    "dm": re.compile(
        r"\b(?:the\s+)?(?P<d>\d{1,2})" + ORD + r"?\s+(?:of\s+)?(?P<m>" + MONTH + r")\b\.?(?:,?\s+(?P<y>(?:19|20|21)\d{2}))?", _I),
    "md_range": re.compile(
        r"\b(?:(?P<pre>from|between)\s+)?(?P<m>" + MONTH + r")\.?\s+(?P<d1>\d{1,2})" + ORD + r"?\s*(?P<c>-|–|—|to|through|thru|until|till|and)\s*(?P<d2>\d{1,2})"
        + ORD + r"?\b(?!\s*(?:" + MONTH + r")\b|:)(?:,?\s+(?P<y>(?:19|20|21)\d{2}))?", _I),
    "month_year": re.compile(r"\b(?P<m>" + MONTH + r")\.?,?\s+(?:of\s+)?(?P<y>(?:19|20|21)\d{2})\b", _I),
    "month": re.compile(
        r"\b(?:(?P<pre>in|during|since|of|last|this|next|early|late|mid|until|till|back\s+in|through|throughout|from|by|before|after|to)\s+(?:early\s+|late\s+|mid-?)?)?(?P<m>" + MONTH + r")\b(?!-)", _I),
    "iso": re.compile(r"(?<![\d/.-])(?P<y>(?:19|20|21)\d{2})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?![\d/.-]|:\d)"),
    "mdy": re.compile(r"(?<![\d/.-])(?P<m>\d{1,2})/(?P<d>\d{1,2})(?:/(?P<y>(?:19|20|21)?\d{2}))?(?![\d/])"),
    "ordinal": re.compile(r"\b(?P<on>on\s+)?(?:the\s+)?(?P<d>\d{1,2})" + ORD + r"\b(?!\s+(?:of\s+)?" + MONTH + r"\b)"
        r"(?!\s+(?:floor|time|times|place|row|grade|century|anniversary|attempt|try|round|person|one|street|avenue|birthday)\b)", _I),
    # "the first of May", "the twenty-first of last month": a written-out day only before "of" and a
    # month ("the first of all", "the second time" are no dates).
    "ordword": re.compile(
        r"\b(?P<on>on\s+)?the\s+(?P<d>" + ORDW + r")(?=\s+of\s+(?:" + MONTH
        + r"\b|(?:last|this|next|the\s+previous|previous)\s+month\b))", _I),
    # Only beside a month, week or year after it ("the last day of last month"); it wins over
    # "last day" (the past day) by being longer.
    "edge": re.compile(r"\b(?:on\s+)?the\s+(?P<w>first|last|final)\s+day\s+of\b", _I),
    "festival": re.compile(
        r"\b(?:(?P<p>last|this|next|on)\s+)?(?P<f>" + _FEST_RX + r")(?:,?\s+(?:of\s+)?(?P<y>(?:19|20|21)\d{2}))?(?![\w'])", _I),
    "approx": re.compile(r"\b(?:sometime\s+|some\s*time\s+)?(?:around|approximately|roughly|circa)\b", _I),
    "part": re.compile(r"\b(?:in\s+the\s+|at\s+|during\s+the\s+)?(?P<p>morning|afternoon|evening|night|nite|noon|midday)\b", _I),
    "clock": re.compile(
        r"\b(?:(?:at\s+)?(?P<pre1>at|around|about|approximately|roughly)\s+)?(?P<h>\d{1,2})(?::(?P<mi>\d{2}))?\s*(?P<ap>a\.?m\.?|p\.?m\.?)(?!\w)"
        r"|\b(?:at\s+)?(?P<at>at|around|about|approximately|roughly)\s+(?P<h2>\d{1,2})(?::(?P<mi2>\d{2}))?(?:\s*o['’]?clock)?\b(?!\s*(?:%|percent|days?|weeks?|hours?|minutes?|people|of\b))"
        r"|\b(?P<h3>\d{1,2}):(?P<mi3>\d{2})\b", _I),
}
