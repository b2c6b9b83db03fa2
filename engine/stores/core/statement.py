"""What one clause of the user's says about them: a fact in its canonical form and the slot it fills."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Statement:
    text: str
    """The fact in canonical form."""
    slot: str
    """Where it is kept: a later statement in the same slot updates it ("live", "pref:香菜")."""
