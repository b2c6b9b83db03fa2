"""Real frontend traffic replayed through a real `kioku serve` (bench/replay_frontend.py): every
recording in tests/fixtures/recordings/ (a real Open WebUI 0.12.4 browser session: two accounts,
two chats, a regenerate, title/tag/follow-up requests) must leave 0 housekeeping turns, disjoint
users, and a regenerated reply recorded once."""

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
