"""`lightmind up` (what `make up` runs) starts the services, prints how to call them, and stops
cleanly on Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from lightmind import launcher
from lightmind.testing import free_port

BIN = Path(sys.executable).parent


def test_up_starts_every_service_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    ports = {entry.prefix: free_port() for entry in launcher.SERVICES}
    env = {
        **os.environ,
        "LIGHTMIND_DATA_DIR": str(tmp_path / "data"),
        "LIGHTMIND_EMBEDDED_PG_PORT": str(free_port()),
        **{f"{prefix}_PORT": str(port) for prefix, port in ports.items()},
        "LIGHTMIND_EMBEDDING_ADDR": f"127.0.0.1:{ports['LIGHTMIND_EMBEDDING']}",
        "LIGHTMIND_MEMORY_ADDR": f"127.0.0.1:{ports['LIGHTMIND_MEMORY']}",
        "LIGHTMIND_SKILL_ADDR": f"127.0.0.1:{ports['LIGHTMIND_SKILL']}",
        "LIGHTMIND_AGENT_ADDR": f"127.0.0.1:{ports['LIGHTMIND_AGENT']}",
    }
    out_path = tmp_path / "up.log"
    with open(out_path, "w") as out:
        proc = subprocess.Popen(
            [str(BIN / "lightmind"), "up"], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 240
        while "Lightmind is up" not in out_path.read_text():
            assert proc.poll() is None, out_path.read_text()
            assert time.monotonic() < deadline, out_path.read_text()
            time.sleep(0.3)
        banner = out_path.read_text()
        for entry in launcher.available():
            port = ports[entry.prefix]
            assert f"{entry.name}" in banner and f"127.0.0.1:{port}" in banner
            listed = subprocess.run(
                [str(BIN / "grpcurl"), "-plaintext", f"127.0.0.1:{port}", "list"],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert listed.returncode == 0, listed.stderr
            assert "lightmind." in listed.stdout
        assert "grpcurl" in banner
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(120)
    assert code == 0, out_path.read_text()
    assert "stopped." in out_path.read_text()
