#!/usr/bin/env bash
# Set up everything kioku needs in ./.venv, from nothing. Safe to run again (it skips what is done).
#   bash scripts/setup.sh         the library, CLI and default embedder (enough for `kioku demo`)
#   bash scripts/setup.sh --dev   plus tests, sentence-transformers (CPU torch), the HTTP service
#                                 and a redis-server for the Redis backend tests
set -euo pipefail
cd "$(dirname "$0")/.."

mode=base
[ "${1:-}" = "--dev" ] && mode=dev

py=""
for candidate in python3.11 python3 python; do
  if command -v "$candidate" >/dev/null 2>&1; then py=$candidate; break; fi
done
[ -n "$py" ] || { echo "setup: no python3 found (need Python 3.11+)" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($py --version)"
  "$py" -m venv .venv
fi

stamp=".venv/.kioku-$mode-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  if [ "$mode" = dev ]; then
    # The CPU build of torch must be in place before sentence-transformers asks for torch,
    # or pip resolves the newest CUDA build (several GB).
    echo "setup: installing torch==2.13.0 (CPU)"
    .venv/bin/pip install --quiet --disable-pip-version-check torch==2.13.0
    echo "setup: installing kioku with test and service extras"
    .venv/bin/pip install --quiet --disable-pip-version-check -e '.[dev]'
  else
    echo "setup: installing kioku"
    .venv/bin/pip install --quiet --disable-pip-version-check -e .
  fi
  touch "$stamp"
fi

if [ "$mode" = dev ] && ! command -v redis-server >/dev/null 2>&1; then
  echo "setup: installing redis-server (Debian package) for the Redis backend tests"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  fi
fi
if [ "$mode" = dev ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  echo "setup: installing PostgreSQL (Debian package) for the Postgres tests without pgvector"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
fi
if [ "$mode" = dev ] && [ "$(id -u)" = 0 ] && ! id kioku-pg >/dev/null 2>&1; then
  # initdb refuses to run as root: the test servers run as this system user.
  useradd --system --no-create-home --shell /usr/sbin/nologin kioku-pg
fi
if [ "$mode" = dev ] && ! command -v chromium >/dev/null 2>&1; then
  # The inspector's browser tests drive Debian's chromium with Playwright (its own browser
  # download cannot work offline); a CJK font makes the Chinese pages readable in screenshots.
  echo "setup: installing chromium and a CJK font (Debian packages) for the inspector's browser tests"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-microhei >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-wqy-microhei >/dev/null
  fi
fi
echo "setup: ready ($mode)"
