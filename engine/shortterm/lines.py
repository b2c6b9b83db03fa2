"""One JSON object per line, for files split on b"\\n" only (history.yaml, the journal) and Redis values.

`json.dumps(ensure_ascii=False)` leaves U+0085, U+2028 and U+2029 raw, which `str.splitlines` and
YAML treat as line breaks, and it leaves lone surrogates, which UTF-8 cannot encode. Both are
escaped here (`\\u2028`, `\\ud800`), which is valid JSON that `json.loads` turns back into the same
string, so any text a client sends round-trips; everything else stays readable UTF-8.
"""

from __future__ import annotations

import json
import re
from typing import Any

_UNSAFE = re.compile("[\u0085\u2028\u2029\ud800-\udfff]")


def dumps_line(obj: Any) -> str:
    """Compact JSON on one line, safe to encode as UTF-8 and to split on "\\n" (no newline added)."""
    text = json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))
    # These characters can only occur inside JSON strings, where a \\u escape is equivalent.
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)

