"""Start a real, throwaway PostgreSQL for tests and benches; never a mock.

Two installs are used, so both storage paths of the Postgres backend are tested:

- `pgserver` (PyPI): PostgreSQL 16 with the pgvector extension in the wheel; starts offline.
- `debian`: the Debian `postgresql-15` binaries (`/usr/lib/postgresql/15/bin`), no pgvector.

    server = PgServer(find_install("pgserver")).start()
    conninfo = server.conninfo          # host=<socket dir> port=<n> user=postgres dbname=postgres
    ...
    server.stop()

The server runs from a fresh `initdb` in a temp folder under /tmp, listens on a unix socket in that
folder (and on 127.0.0.1 only when `tcp=True`), trusts local connections, and is stopped by its
own pid. `initdb` refuses to run as root, so as root the server runs as the system user
`kioku-pg` (created here with `useradd --system` when missing; `scripts/setup.sh --dev` creates
it ahead of time). The temp folder lives under /tmp because pytest's tmp dirs are private to root.

The pytest fixtures at the bottom start at most one server per install per test session (a
module-level cache, so several test files importing the fixtures share it).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

PG_USER = "kioku-pg"
"""The system user the server runs as when the tests run as root."""
DEBIAN_BIN_GLOB = "/usr/lib/postgresql/*/bin"


@dataclass(frozen=True)
class PgInstall:
    """A set of PostgreSQL binaries."""

    name: str
    """`pgserver` or `debian`."""
    bin_dir: Path
    has_vector: bool
    """Whether the pgvector extension ships with these binaries."""


def find_install(name: str) -> PgInstall | None:
    """The install called `name`, or None when it is not on this machine."""
    if name == "pgserver":
        # Located without importing pgserver: its import creates runtime folders and lock files.
        spec = importlib.util.find_spec("pgserver")
        if spec is None or not spec.submodule_search_locations:
            return None
        bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
        return PgInstall("pgserver", bin_dir, has_vector=True) if (bin_dir / "postgres").exists() else None
    if name == "debian":
        found = sorted(Path("/").glob(DEBIAN_BIN_GLOB.lstrip("/")), key=lambda p: p.parent.name)
        for bin_dir in reversed(found):
            if (bin_dir / "initdb").exists() and (bin_dir / "postgres").exists():
                share = Path("/usr/share/postgresql") / bin_dir.parent.name / "extension"
                return PgInstall("debian", bin_dir, has_vector=(share / "vector.control").exists())
        return None
    raise ValueError(f"unknown PostgreSQL install {name!r} (use 'pgserver' or 'debian')")


def reachable_install(install: PgInstall, run_as: pwd.struct_passwd) -> PgInstall:
    """`install` when `run_as` can run its binaries, else a copy under the temp folder.

    A checkout inside a folder only root may enter (`/root`, a `mktemp -d`) hides the venv's
    pgserver binaries from the unprivileged server user. PostgreSQL finds its libraries and
    extensions relative to its binaries, and the wheel's binaries find their shared libraries in
    the sibling `<package>.libs` folder (RPATH `$ORIGIN/../../../pgserver.libs`), so the copy keeps
    `<package>/<install>/` and `<package>.libs/` side by side."""
    if _can_run(install.bin_dir / "postgres", run_as):
        return install
    tree = install.bin_dir.parent  # .../site-packages/pgserver/pginstall
    package = tree.parent
    libs = package.with_name(package.name + ".libs")
    dest = Path(tempfile.gettempdir()) / f"kioku-pg-install-{hashlib.sha256(str(tree).encode()).hexdigest()[:12]}"
    copied_bin = dest / package.name / tree.name / "bin"
    if not (copied_bin / "postgres").exists():
        partial = dest.with_name(f"{dest.name}.{os.getpid()}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(tree, partial / package.name / tree.name, symlinks=True)
        if libs.is_dir():
            shutil.copytree(libs, partial / libs.name, symlinks=True)
        for folder in (partial, partial / package.name):
            folder.chmod(0o755)
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(partial, dest)
    return PgInstall(install.name, copied_bin, install.has_vector)


def _can_run(binary: Path, run_as: pwd.struct_passwd) -> bool:
    try:
        subprocess.run([str(binary), "--version"], capture_output=True, check=True, **PgServer._user_kwargs(run_as))
    except (OSError, subprocess.CalledProcessError):
        return False
    return True


def ensure_system_user(name: str = PG_USER) -> pwd.struct_passwd:
    """The unprivileged user that owns the data folder; created when missing (needs root)."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            check=True, capture_output=True, text=True,
        )
        return pwd.getpwnam(name)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    """One PostgreSQL server in its own temp folder; `start()` runs initdb and the postmaster."""

    def __init__(self, install: PgInstall, *, tcp: bool = False, durable: bool = False) -> None:
        self.install = install
        self.tcp = tcp
        self.durable = durable
        """False (tests): fsync off, which only matters if the machine itself crashes; a killed
        client or server process still loses nothing committed."""
        self.root: Path | None = None
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.start_seconds = 0.0
        """initdb + start until the first connection is accepted."""

    # -- paths and connection strings --------------------------------------------------------

    @property
    def data_dir(self) -> Path:
        assert self.root is not None
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        assert self.root is not None
        return self.root / "sock"

    @property
    def conninfo(self) -> str:
        """A libpq connection string to the `postgres` database over the unix socket."""
        return f"host={self.socket_dir} port={self.port} user=postgres dbname=postgres"

    @property
    def url(self) -> str:
        """A postgresql:// URL over TCP (only with `tcp=True`)."""
        if not self.tcp:
            raise RuntimeError("this server listens on a unix socket only; start it with tcp=True")
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def conninfo_for(self, dbname: str) -> str:
        return f"host={self.socket_dir} port={self.port} user=postgres dbname={dbname}"

    # -- life cycle ----------------------------------------------------------------------------

    def start(self) -> "PgServer":
        began = time.perf_counter()
        self.root = Path(tempfile.mkdtemp(prefix=f"kioku-pg-{self.install.name}-", dir="/tmp"))
        self.socket_dir.mkdir()
        run_as = self._run_as()
        if run_as is not None:
            for path in (self.root, self.socket_dir):
                os.chown(path, run_as.pw_uid, run_as.pw_gid)
        self._run(["initdb", "-D", str(self.data_dir), "-U", "postgres", "--auth=trust", "--encoding=UTF8",
                   "--locale=C.UTF-8", "--no-sync"], run_as)
        for _ in range(5):
            self.port = free_port()
            if self._launch(run_as):
                self.start_seconds = time.perf_counter() - began
                return self
        raise RuntimeError(f"PostgreSQL ({self.install.name}) did not start; log:\n{self.log_tail()}")

    def _run_as(self) -> pwd.struct_passwd | None:
        if os.geteuid() != 0:
            return None
        user = ensure_system_user()
        self.install = reachable_install(self.install, user)
        return user

    def _run(self, argv: list[str], run_as: pwd.struct_passwd | None) -> None:
        argv = [str(self.install.bin_dir / argv[0]), *argv[1:]]
        result = subprocess.run(argv, capture_output=True, text=True, **self._user_kwargs(run_as))
        if result.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed ({result.returncode}): {result.stderr.strip()}")

    @staticmethod
    def _user_kwargs(run_as: pwd.struct_passwd | None) -> dict:
        if run_as is None:
            return {}
        return {"user": run_as.pw_uid, "group": run_as.pw_gid, "extra_groups": [],
                "env": {**os.environ, "HOME": "/tmp", "USER": run_as.pw_name}}

    def _launch(self, run_as: pwd.struct_passwd | None) -> bool:
        settings = {
            "listen_addresses": "127.0.0.1" if self.tcp else "",
            "port": str(self.port),
            "unix_socket_directories": str(self.socket_dir),
            "max_connections": "200",
            "shared_buffers": "128MB",
            "maintenance_work_mem": "256MB",
            "fsync": "on" if self.durable else "off",
            "full_page_writes": "on" if self.durable else "off",
        }
        argv = [str(self.install.bin_dir / "postgres"), "-D", str(self.data_dir)]
        for key, value in settings.items():
            argv += ["-c", f"{key}={value}"]
        log = open(self.root / "server.log", "ab")  # noqa: SIM115 - the child keeps it open
        try:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, **self._user_kwargs(run_as))
        finally:
            log.close()
        return self._wait_ready()

    def _wait_ready(self, timeout: float = 30.0) -> bool:
        import psycopg

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                return False  # exited: most likely the port was taken; the caller tries another
            try:
                with psycopg.connect(self.conninfo, connect_timeout=2):
                    return True
            except psycopg.OperationalError:
                time.sleep(0.05)
        self._kill()
        return False

    def log_tail(self, n: int = 40) -> str:
        if self.root is None or not (self.root / "server.log").exists():
            return ""
        return "\n".join((self.root / "server.log").read_text(errors="replace").splitlines()[-n:])

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # "fast" shutdown: roll back clients, exit cleanly
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def halt(self) -> None:
        """Stop the server process (fast shutdown), keeping its folder: "the database went down"."""
        self._kill()

    def stop(self) -> None:
        self._kill()
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def create_database(self, name: str, *, vector: bool) -> str:
        """A fresh database (optionally with pgvector created in it); returns its conninfo."""
        import psycopg

        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        conninfo = self.conninfo_for(name)
        if vector:
            with psycopg.connect(conninfo, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return conninfo

    def __enter__(self) -> "PgServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ---------------------------------------------------------------------------- pytest fixtures

_SERVERS: dict[str, PgServer] = {}


def shared_server(name: str) -> PgServer:
    """One server per install for the whole test session (started on first use)."""
    server = _SERVERS.get(name)
    if server is None:
        install = find_install(name)
        if install is None:
            pytest.skip(f"PostgreSQL install {name!r} not found (run scripts/setup.sh --dev)")
        server = _SERVERS[name] = PgServer(install).start()
    return server


def _stop(name: str) -> None:
    server = _SERVERS.pop(name, None)
    if server is not None:
        server.stop()


@pytest.fixture(scope="session")
def pg_vector_server():
    """PostgreSQL 16 from pgserver, with pgvector available."""
    yield shared_server("pgserver")
    _stop("pgserver")


@pytest.fixture(scope="session")
def pg_plain_server():
    """Debian's PostgreSQL, without pgvector: the vectors-in-the-worker path."""
    yield shared_server("debian")
    _stop("debian")


_DB_COUNTER = iter(range(1, 1_000_000))


def fresh_database(server: PgServer, *, vector: bool) -> str:
    return server.create_database(f"t{os.getpid()}_{next(_DB_COUNTER)}", vector=vector)


@pytest.fixture(params=["pgvector", "plain"])
def pg_db(request):
    """A fresh, empty database; parametrized over both paths (with pgvector, and without it)."""
    if request.param == "pgvector":
        server = request.getfixturevalue("pg_vector_server")
        return PgDatabase(fresh_database(server, vector=True), vector=True, server=server)
    server = request.getfixturevalue("pg_plain_server")
    return PgDatabase(fresh_database(server, vector=False), vector=False, server=server)


@dataclass(frozen=True)
class PgDatabase:
    conninfo: str
    vector: bool
    """Whether pgvector is available in this database."""
    server: PgServer


@pytest.fixture
def pg(pg_db):
    """An upgraded database on both paths: (Database, SchemaState, PgDatabase)."""
    import psycopg

    from engine.backends.postgres import Database, PgSettings, upgrade

    with psycopg.connect(pg_db.conninfo) as conn:
        state = upgrade(conn)
    db = Database(PgSettings(url=pg_db.conninfo, max_connections=4), environ={}).open()
    yield db, state, pg_db
    db.close()
