"""Real frontend traffic replayed through a real `kioku serve` (bench/replay_frontend.py): every
recording in tests/fixtures/recordings/ must pass every check of the replay. They are a real Open
WebUI 0.12.4 browser session (two accounts, two chats, a regenerate, title/tag/follow-up requests)
and a real SillyTavern 1.12.6 session (swipe, continue, impersonate, summarize, the "Test Message"
button, two new chats that begin alike): 0 housekeeping turns, disjoint users, a regenerated
reply recorded once, no turn deleted on ambiguous evidence, no replaced reply fed back."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RECORDINGS = sorted((ROOT / "tests" / "fixtures" / "recordings").glob("*.jsonl"))


@pytest.mark.parametrize("recording", RECORDINGS, ids=[p.stem for p in RECORDINGS])
def test_replayed_recording_passes_every_check(recording, capsys):
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import replay_frontend
    finally:
        sys.path.remove(str(ROOT / "bench"))
    code = replay_frontend.main([str(recording)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "housekeeping turns recorded: 0" in out
