"""What an import did: counts per store, what was skipped and why, notes, and timings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

STORES = ("persona", "world_book", "core", "diary", "window")


@dataclass(frozen=True)
class Skipped:
    """One item (or file) that was not imported."""

    store: str
    """persona | world_book | core | diary | window."""
    where: str
    """`file:line` in the source folder (the file alone when the whole file is concerned)."""
    reason: str

    def __str__(self) -> str:
        return f"[{self.store}] {self.where}: {self.reason}"


@dataclass(frozen=True)
class StoreCount:
    """Counts for one store."""

    imported: int = 0
    """Newly written by this import."""
    present: int = 0
    """Already there (an earlier import, or the same item twice in the source): not written again."""
    skipped: int = 0
    """Not imported; each one is listed in `ImportReport.skipped` with its reason."""

    def __add__(self, other: "StoreCount") -> "StoreCount":
        """Two sources' counts for one store (a folder's YAML files and its SQLite memory)."""
        return StoreCount(self.imported + other.imported, self.present + other.present, self.skipped + other.skipped)


@dataclass(frozen=True)
class ImportReport:
    """The outcome of one import; `format_report` renders it as the CLI's summary table."""

    source: str
    """The source folder."""
    character_id: str
    user_id: str
    character_file: str
    """The kioku character.yaml that was created or updated."""
    counts: Mapping[str, StoreCount]
    """Per store (see `STORES`)."""
    skipped: tuple[Skipped, ...] = ()
    notes: tuple[str, ...] = ()
    """What was mapped differently or not at all (e.g. model-specific thresholds), and warnings."""
    seconds: Mapping[str, float] = field(default_factory=dict)
    """Wall time per step, plus 'total'."""

    @property
    def imported(self) -> int:
        return sum(c.imported for c in self.counts.values())


def format_report(report: ImportReport, *, max_skipped: int = 50) -> str:
    lines = [
        f"imported {report.source}",
        f"  into character {report.character_id!r}, user {report.user_id!r} ({report.character_file})",
        "",
        f"  {'store':<12}{'imported':>10}{'present':>10}{'skipped':>10}{'seconds':>10}",
    ]
    for name in STORES:
        c = report.counts.get(name, StoreCount())
        secs = report.seconds.get(name)
        lines.append(
            f"  {name:<12}{c.imported:>10}{c.present:>10}{c.skipped:>10}{'' if secs is None else f'{secs:.1f}':>10}"
        )
    if "total" in report.seconds:
        lines.append(f"  {'total':<12}{'':>30}{report.seconds['total']:>10.1f}")
    if report.skipped:
        lines += ["", f"skipped ({len(report.skipped)}):"]
        lines += [f"  {s}" for s in report.skipped[:max_skipped]]
        if len(report.skipped) > max_skipped:
            lines.append(f"  ... and {len(report.skipped) - max_skipped} more")
    if report.notes:
        lines += ["", "notes:"]
        lines += [f"  - {n}" for n in report.notes]
    return "\n".join(lines)
