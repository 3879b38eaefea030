"""The ``script`` executor: Python source run in a sandboxed subprocess.

Protocol: the arguments arrive as one JSON object on stdin; the script prints its result as
JSON on stdout (plain text is returned as text). A non-zero exit, a crash, a timeout or too
much output is a failure the model reads, with the tail of stderr. The isolation itself is
done by ``sandbox_launcher`` in its own process; see its docstring and docs/skill.md for what
it does and does not protect against. Here: a fresh temporary directory per run (owned by a
per-run uid, removed afterwards), an empty environment, a cap on stdout/stderr read, and a
wall-clock timeout that SIGKILLs the whole process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Any

from lightmind.errors import FailedPrecondition
from skill_svc.config import SandboxConfig
from skill_svc.executors.base import ExecutionContext, ToolFailure, ToolOutcome
from skill_svc.records import ToolRecord

log = logging.getLogger("lightmind.skill.sandbox")

LAUNCHER = Path(__file__).with_name("sandbox_launcher.py")
EXIT_SANDBOX_FAILED = 125
STDERR_TAIL = 2000
_uids = itertools.count()


class ScriptExecutor:
    def __init__(self, config: SandboxConfig) -> None:
        self._config = config

    def _uid(self) -> int:
        # A uid of its own per run: no other process shares it, so RLIMIT_NPROC and signals
        # cannot reach anything else.
        return self._config.uid_base + next(_uids) % 4096

    async def probe(self) -> str:
        """Runs a trivial script; returns a description of the isolation that works here."""
        code = (
            "import json, os, socket\n"
            "try:\n"
            "    socket.create_connection(('127.0.0.1', 9), timeout=1)\n"
            "    net = 'reachable'\n"
            "except OSError as e:\n"
            "    net = 'blocked: ' + str(e)\n"
            "print(json.dumps({'uid': os.getuid(), 'network': net}))\n"
        )
        try:
            outcome = await asyncio.wait_for(self.execute(code, {}), 30)
        except (ToolFailure, FailedPrecondition) as exc:
            return f"unavailable: {getattr(exc, 'message', exc)}"
        return f"ok: {outcome.value}"

    async def run(
        self, tool: ToolRecord, arguments: dict[str, Any], context: ExecutionContext
    ) -> ToolOutcome:
        return await self.execute(tool.implementation["content"], arguments)

    async def execute(self, source: str, arguments: dict[str, Any]) -> ToolOutcome:
        cfg = self._config
        # realpath: the launcher compares it with mount points.
        workdir = os.path.realpath(tempfile.mkdtemp(prefix="lightmind-script-"))  # noqa: ASYNC240
        uid = self._uid()
        proc: asyncio.subprocess.Process | None = None
        try:
            script = Path(workdir) / "main.py"
            script.write_text(source)
            if os.geteuid() == 0:
                os.chown(workdir, uid, uid)
            os.chmod(workdir, 0o700)
            settings = {
                "workdir": workdir,
                "script": str(script),
                "python": cfg.python,
                "uid": uid,
                "gid": uid,
                "isolation": cfg.isolation,
                "cpu_seconds": cfg.cpu_seconds,
                "memory_mb": cfg.memory_mb,
                "file_size_mb": cfg.file_size_mb,
                "open_files": cfg.open_files,
                "processes": cfg.processes,
            }
            proc = await asyncio.create_subprocess_exec(
                cfg.python,
                "-I",
                "-S",
                "-B",
                str(LAUNCHER),
                json.dumps(settings),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                cwd=workdir,
                start_new_session=True,
            )
            stdout, stderr, code = await self._communicate(proc, json.dumps(arguments).encode())
        finally:
            if proc is not None and proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                with contextlib.suppress(ProcessLookupError):
                    await asyncio.shield(proc.wait())
            shutil.rmtree(workdir, ignore_errors=True)
        err_text = stderr.decode(errors="replace")[-STDERR_TAIL:]
        if code == EXIT_SANDBOX_FAILED and err_text.startswith("sandbox:"):
            log.error("script sandbox unavailable: %s", err_text.strip())
            raise FailedPrecondition(
                "script tools cannot run here: the sandbox is unavailable; see the server log",
                reason="SANDBOX_UNAVAILABLE",
            )
        if code != 0:
            why = f"killed by signal {code - 128}" if code > 128 else f"exited with status {code}"
            if code - 128 in (signal.SIGXCPU, signal.SIGKILL):
                why += " (CPU or memory limit)"
            raise ToolFailure(f"the script {why}: {err_text.strip()}")
        text = stdout.decode(errors="replace")
        try:
            return ToolOutcome(value=json.loads(text))
        except ValueError:
            return ToolOutcome(text=text)

    async def _communicate(
        self, proc: asyncio.subprocess.Process, payload: bytes
    ) -> tuple[bytes, bytes, int]:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        limit = self._config.output_bytes

        async def feed() -> None:
            assert proc.stdin is not None
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(payload)
                await proc.stdin.drain()
                proc.stdin.close()

        async def read(stream: asyncio.StreamReader, name: str) -> bytes:
            data = bytearray()
            while chunk := await stream.read(65536):
                data += chunk
                if len(data) > limit:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    raise ToolFailure(f"the script wrote more than {limit} bytes to {name}")
            return bytes(data)

        _, out, err = await asyncio.gather(
            feed(), read(proc.stdout, "stdout"), read(proc.stderr, "stderr")
        )
        code = await proc.wait()
        return out, err, code
