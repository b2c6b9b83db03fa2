"""The base install (`bash scripts/setup.sh`: no postgres, service or test extras) runs the CLI and
the demo: nothing the CLI or the files backend imports may need an extra's driver. Checked in a
subprocess where importing psycopg, redis or fastapi fails, as it does without those extras."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BLOCK = textwrap.dedent("""
    import sys
    class NoExtras:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("psycopg", "psycopg_pool", "pgvector", "redis", "fastapi", "uvicorn"):
                raise ModuleNotFoundError(f"No module named {name!r} (not in the base install)")
            return None
    sys.meta_path.insert(0, NoExtras())
""")


def test_the_cli_builds_and_its_db_command_explains_itself_without_extras():
    code = BLOCK + textwrap.dedent("""
        from engine.cli import build_parser
        from engine.backends.db_health import database_health
        parser = build_parser()
        print("ok", "db" in parser._subparsers._group_actions[0].choices)
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["ok", "True"]
