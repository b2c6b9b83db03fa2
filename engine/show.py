"""Human-readable rendering of a PromptResult: every hit, its store, score and why it fired."""

from __future__ import annotations

import json
from dataclasses import asdict

from engine.orchestrator import PromptResult


def format_result(result: PromptResult, *, show_messages: bool = True, width: int = 110) -> str:
    out: list[str] = []
    out.append(f"now: {result.now.isoformat()}")
    out.append(f"hits ({len(result.hits)} injected, {len(result.dropped)} trimmed by budget):")
    if not result.hits:
        out.append("  (none)")
    for h in result.hits:
        out.append(f"  [{h.store:<10}] score {h.score:6.3f}  {_one_line(h.text, 60)}")
        out.append(f"  {'':<12} why: {h.reason}")
    for h in result.dropped:
        out.append(f"  [{h.store:<10}] TRIMMED score {h.score:6.3f}  {_one_line(h.text, 50)}")
    if result.diagnostics:
        out.append("diagnostics:")
        out.extend(f"  ! {d}" for d in result.diagnostics)
    tokens = ", ".join(f"{k} {v}" for k, v in result.tokens.items())
    timings = ", ".join(f"{k} {v:.1f}" for k, v in result.timings_ms.items())
    out.append(f"tokens: {tokens}")
    out.append(f"timings (ms): {timings}")
    if show_messages:
        out.append("messages:")
        for i, m in enumerate(result.messages):
            body = m["content"].replace("\n", "\n" + " " * 14)
            out.append(f"  {i:>2} {m['role']:<9} {body}")
    return "\n".join(out)


def result_json(result: PromptResult) -> str:
    return json.dumps(
        {
            "now": result.now.isoformat(),
            "messages": result.messages,
            "hits": [_hit(h) for h in result.hits],
            "dropped": [_hit(h) for h in result.dropped],
            "tokens": dict(result.tokens),
            "timings_ms": dict(result.timings_ms),
            "diagnostics": list(result.diagnostics),
        },
        ensure_ascii=False,
        indent=2,
    )


def _hit(h) -> dict:
    d = asdict(h)
    d["meta"] = {k: v if isinstance(v, (str, int, float, bool, type(None))) else str(v) for k, v in h.meta.items()}
    return d


def _one_line(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"
