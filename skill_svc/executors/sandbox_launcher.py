"""Sandbox launcher for ``script`` tools; run as ``python -I -S sandbox_launcher.py CONFIG``.

It runs as its own process (never as a ``preexec_fn`` inside the threaded gRPC server) and
uses only the standard library. As root it:

1. unshares mount, network and PID namespaces (the new network namespace has only a loopback
   interface that is down: no network at all);
2. makes every mount private and read-only except a bind mount of the script's fresh
   temporary directory, so the only writable place is that directory;
3. forks; the child is PID 1 of the new PID namespace (when it exits, the kernel kills every
   process the script started), mounts a fresh /proc (other processes are invisible),
   applies rlimits (CPU, address space, file size, open files, processes, no core dumps),
   drops to an unprivileged uid/gid with no supplementary groups, and execs the interpreter
   in isolated mode (-I -S: no site-packages, no PYTHON* variables) on the script.

Not root: it tries the same inside a new user namespace (uid mapped to itself). When no
namespace can be created it exits 125, or with ``best_effort`` runs the script with rlimits
only. The parent process reads CONFIG as JSON: workdir, script, python, uid, gid, limits.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import sys
from typing import Any, NoReturn

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_REC, MS_PRIVATE, MS_RELATIME = 16384, 1 << 18, 1 << 21
OPTION_FLAGS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
}
EXIT_SANDBOX_FAILED = 125

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_ulong,
    ctypes.c_void_p,
]


def fail(message: str) -> NoReturn:
    sys.stderr.write("sandbox: " + message + "\n")
    sys.stderr.flush()
    os._exit(EXIT_SANDBOX_FAILED)


def unshare(flags: int) -> None:
    if libc.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def _enc(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def mount(source: str | None, target: str, fstype: str | None, flags: int) -> None:
    if libc.mount(_enc(source), _enc(target), _enc(fstype), flags, None) != 0:
        raise OSError(ctypes.get_errno(), f"mount {target}: {os.strerror(ctypes.get_errno())}")


def mounts() -> list[tuple[str, list[str]]]:
    found: list[tuple[str, list[str]]] = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            point = parts[4].encode().decode("unicode_escape")
            found.append((point, parts[5].split(",")))
    return found


def lock_filesystem(workdir: str) -> list[str]:
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount(workdir, workdir, None, MS_BIND)
    failed: list[str] = []
    for point, options in mounts():
        if point == workdir or point.startswith("/proc"):
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for option in options:
            flags |= OPTION_FLAGS.get(option, 0)
        try:
            mount(None, point, None, flags)
        except OSError:
            failed.append(point)
    if "/" in failed:
        raise OSError(1, "could not make / read-only")
    return failed


def limits(cfg: dict[str, Any]) -> None:
    mb = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_CPU, (cfg["cpu_seconds"], cfg["cpu_seconds"] + 1))
    resource.setrlimit(resource.RLIMIT_AS, (cfg["memory_mb"] * mb,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["file_size_mb"] * mb,) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (cfg["open_files"],) * 2)
    resource.setrlimit(resource.RLIMIT_NPROC, (cfg["processes"],) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_script(cfg: dict[str, Any], drop_to_uid: bool) -> NoReturn:
    os.chdir(cfg["workdir"])
    limits(cfg)
    if drop_to_uid:
        os.setgroups([])
        os.setgid(cfg["gid"])
        os.setuid(cfg["uid"])
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": cfg["workdir"],
        "LANG": "C.UTF-8",
        "TMPDIR": cfg["workdir"],
    }
    python = cfg["python"]
    os.execve(python, [python, "-I", "-S", "-B", cfg["script"]], env)


def wait_for(pid: int) -> NoReturn:
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        os._exit(128 + os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status))


def main() -> None:
    cfg: dict[str, Any] = json.loads(sys.argv[1])
    root = os.geteuid() == 0
    try:
        if root:
            unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID)
        else:
            uid, gid = os.geteuid(), os.getegid()
            unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID)
            with open("/proc/self/setgroups", "w") as f:
                f.write("deny")
            with open("/proc/self/uid_map", "w") as f:
                f.write(f"0 {uid} 1")
            with open("/proc/self/gid_map", "w") as f:
                f.write(f"0 {gid} 1")
        lock_filesystem(cfg["workdir"])
    except OSError as exc:
        if cfg["isolation"] == "required":
            fail(
                f"cannot isolate the script ({exc}); set "
                "LIGHTMIND_SKILL_SCRIPT_ISOLATION=best_effort to run it anyway"
            )
        run_script(cfg, drop_to_uid=root)
    pid = os.fork()
    if pid == 0:
        # Without a fresh /proc the host's processes stay visible; not a reason to refuse.
        with contextlib.suppress(OSError):
            mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        run_script(cfg, drop_to_uid=root)
    wait_for(pid)


if __name__ == "__main__":
    main()
