"""The warm pytest server: its start (preloading pytest and its plugins, refusing what it
cannot serve), its loop (accept, check, fork, reap) and the child that runs the pytest script.

Standard library only, never imported by driveros: the sandbox's copy of the warm process is
``_warm_wire.py`` (the wire and the client; its docstring has the whole protocol) followed by
this module, without the import of those names below (:func:`driveros.intel._warm.server_code`).
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
import struct
import sys
from typing import TYPE_CHECKING

# -- not shipped: the sandbox's copy has _warm_wire.py above this module, in the same file
from driveros.intel._warm_wire import HEADER, UNAVAILABLE, Request, client, env_key, receive

# -- shipped
if TYPE_CHECKING:
    from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


# -- the server ---------------------------------------------------------------------------


def _stat_key(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _environment_state(script: str) -> dict[str, tuple[int, int, int] | None]:
    """What the preloaded state depends on: every imported module's file, the script, the
    interpreter, each import directory and its ``.pth`` files and distributions."""
    paths = {script, sys.executable}
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if isinstance(name, str):
            paths.add(name)
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        paths.add(entry)
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        for name in names:
            if name.endswith((".pth", ".dist-info", ".egg-info", ".egg-link")):
                paths.add(os.path.join(entry, name))
    return {p: _stat_key(p) for p in paths}


def _in_environment(path: str) -> bool:
    parts = path.split(os.sep)
    return "site-packages" in parts or "dist-packages" in parts


def _workspace_module(roots: list[str]) -> str | None:
    """The first imported module whose file is in the workspace, outside an environment."""
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str):
            continue
        real = os.path.realpath(file)
        for root in roots:
            inside = real == root or real.startswith(root.rstrip(os.sep) + os.sep)
            if inside and not _in_environment(real[len(root) :]):
                return name
    return None


def _preload() -> str | None:
    """Import pytest and the plugins the cold command would auto-load; why not, or None.

    The plugins' distributions are imported through pytest's assertion-rewriting hook, as
    the cold command imports them (it rewrites every top-level module of a distribution
    with a ``pytest11`` entry point); a plain import would leave their asserts unrewritten
    and make pytest warn "Module already imported so cannot be rewritten". That needs
    pytest's own (private) helpers: any of them missing or failing means no warm process.
    """
    import importlib.metadata

    try:
        import pytest  # noqa: F401
        from _pytest.assertion import install_importhook
        from _pytest.config import get_config

        if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
            return None
        config = get_config()  # pytest's built-in plugins, no ini file, no conftest
        hook = install_importhook(config)
        try:
            config._mark_plugins_for_rewrite(hook, False)
            for ep in importlib.metadata.entry_points(group="pytest11"):
                ep.load()
        finally:
            sys.meta_path.remove(hook)
    except BaseException as exc:
        return f"preloading failed: {type(exc).__name__}: {exc}"
    return None


def _quiet(preload: Callable[[], str | None], record: str) -> str | None:
    """``preload()`` with stdout and stderr going to ``record``: a plugin that writes
    something when imported writes it in every cold run, and in no warm one, so that means
    no warm process."""
    saved = [os.dup(fd) for fd in (1, 2)]
    out = os.open(record, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for fd in (1, 2):
            os.dup2(out, fd)
        why = preload()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in enumerate(saved, start=1):
            os.dup2(copy, fd)
            os.close(copy)
        written = os.fstat(out).st_size
        os.close(out)
    if why is None and written:
        return "a plugin writes output when it is imported"
    return why


def _warm_up(scratch: str) -> str | None:
    """One throwaway collection of an empty directory, so what the plugins import on
    configuration (hypothesis, ...) is imported here too; why not, or None. No conftest
    (``--noconftest``), no ini file but an empty one of its own, output to /dev/null."""
    import pytest

    os.makedirs(scratch, mode=0o700, exist_ok=True)
    ini = os.path.join(scratch, "pytest.ini")
    with open(ini, "w") as f:
        f.write("[pytest]\n")
    meta_path = list(sys.meta_path)
    args = ["-q", "--co", "-p", "no:cacheprovider", "--noconftest"]
    args += [f"--rootdir={scratch}", "-c", ini, scratch]
    saved = [os.dup(fd) for fd in (0, 1, 2)]
    null = os.open(os.devnull, os.O_RDWR)
    # the user's extra options (--junitxml=..., --cov) are for real runs, not this one, and
    # whatever it writes relative to its directory lands in its own
    addopts = os.environ.pop("PYTEST_ADDOPTS", None)
    cwd = os.getcwd()
    try:
        os.chdir(scratch)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        code = pytest.main(args)
    except BaseException as exc:
        return f"warming up failed: {type(exc).__name__}"
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in enumerate(saved):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(null)
        os.chdir(cwd)
        if addopts is not None:
            os.environ["PYTEST_ADDOPTS"] = addopts
    if code not in (0, 5):  # 5: nothing collected, as expected
        return f"warming up failed: pytest exited {code}"
    if sys.meta_path != meta_path:
        return "warming up left an import hook"
    return None


class _Job:
    def __init__(self, conn: socket.socket, pid: int) -> None:
        self.conn = conn
        self.pid = pid
        self.killed = False


class Server:
    def __init__(self, sockdir: str, script: str, roots: list[str]) -> None:
        self.sockdir = sockdir
        self.script = script
        self.roots = [os.path.realpath(r) for r in roots if r]
        self.cwd = os.getcwd()
        self.env = env_key(dict(os.environ))
        self.state: dict[str, tuple[int, int, int] | None] = {}
        self.jobs: dict[int, _Job] = {}
        self.sel = selectors.DefaultSelector()
        self.listener: socket.socket | None = None
        self.wake = (-1, -1)

    def start(self) -> str | None:
        import threading

        # ``python SCRIPT`` puts the script's directory first; this file's is not wanted
        sys.path[0] = os.path.dirname(os.path.realpath(self.script))
        why = _quiet(_preload, os.path.join(self.sockdir, "import.out"))
        why = why or _warm_up(os.path.join(self.sockdir, "empty"))
        if why is None:
            module = _workspace_module(self.roots)
            if module is not None:
                why = f"{module} is imported from the workspace"
        if why is None and threading.active_count() != 1:
            why = "a plugin started a thread"
        if why is not None:
            return why
        self.state = _environment_state(self.script)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        os.chdir(self.sockdir)
        try:
            if os.path.lexists("s"):
                os.unlink("s")
            old = os.umask(0o077)
            try:
                listener.bind("s")
            finally:
                os.umask(old)
            listener.listen(16)
        finally:
            os.chdir(self.cwd)
        self.listener = listener
        self.sel.register(listener, selectors.EVENT_READ, None)
        # a child's end wakes the loop through this pipe (pidfds are missing under gVisor)
        self.wake = os.pipe()
        for fd in self.wake:
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(self.wake[1])
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.sel.register(self.wake[0], selectors.EVENT_READ, "exit")
        return None

    def serve(self) -> None:
        while True:
            for key, _ in self.sel.select():
                if key.data is None:
                    self._accept()
                elif key.data == "exit":
                    self._reap()
                else:
                    self._hangup(key.data)

    def stop(self, *_: object) -> None:
        for job in list(self.jobs.values()):
            _kill_group(job.pid)
        os._exit(0)

    def _accept(self) -> None:
        assert self.listener is not None
        conn, _ = self.listener.accept()
        fds: list[int] = []
        try:
            conn.settimeout(10)
            request, fds = receive(conn)
            reason = self._refusal(conn, request, fds)
            if reason is not None:
                conn.sendall(b"R" + reason.encode()[:200])
                conn.close()
                return
            conn.settimeout(None)
            self._fork(conn, request, fds)
        except (OSError, ValueError):
            conn.close()
        finally:
            for fd in fds:
                os.close(fd)

    def _refusal(self, conn: socket.socket, request: Request, fds: list[int]) -> str | None:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
        if uid != os.getuid():
            return "another user"
        if len(fds) != 3:
            return "three descriptors expected"
        if request.script != self.script:
            return "another script"
        if request.cwd != self.cwd:
            return "another directory"
        if env_key(request.env) != self.env:
            return "another environment"
        if _environment_state(self.script) != self.state:
            return "the environment changed"
        return None

    def _fork(self, conn: socket.socket, request: Request, fds: list[int]) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child never returns
            _child(self, conn, request, fds)
        job = _Job(conn, pid)
        self.jobs[pid] = job
        self.sel.register(conn, selectors.EVENT_READ, job)
        try:
            conn.sendall(b"S")
        except OSError:
            self._hangup(job)

    def _hangup(self, job: _Job) -> None:
        try:
            data = job.conn.recv(1)
        except OSError:
            data = b""
        if not data and not job.killed:  # the client died or was killed: so does the run
            job.killed = True
            _kill_group(job.pid)
            self.sel.unregister(job.conn)

    def _reap(self) -> None:
        try:
            while os.read(self.wake[0], 512):
                pass
        except OSError:
            pass
        for pid in list(self.jobs):
            # what the run left in its group goes with it, as in the sandbox; killed before
            # reaping, while the group's id cannot be anybody else's
            try:
                ended = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                ended = None
            if ended is not None:
                _kill_group(pid)
                _, status = os.waitpid(pid, 0)
                self._finish(self.jobs[pid], status)

    def _finish(self, job: _Job, status: int) -> None:
        if not job.killed:
            self.sel.unregister(job.conn)
            try:
                job.conn.sendall(HEADER.pack(status & 0xFFFFFFFF))
            except OSError:
                pass
        job.conn.close()
        del self.jobs[job.pid]


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def _child(server: Server, conn: socket.socket, request: Request, fds: list[int]) -> None:
    import traceback

    code = 1
    try:
        os.setpgid(0, 0)
        try:  # the server killed outright: its runs end too
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError, ImportError):
            pass
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        server.sel.close()
        for fd in server.wake:
            os.close(fd)
        if server.listener is not None:
            server.listener.close()
        conn.close()
        for job in server.jobs.values():
            job.conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request.env)
        sys.argv = [server.script, *request.args]
        # the interpreter runs a script under its absolute path (argv[0] stays as given)
        code = _run_script(os.path.abspath(server.script))
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def _run_script(script: str) -> int:
    """``python SCRIPT`` from here on: its exit status as the interpreter would give it."""
    import atexit
    import runpy
    import traceback

    try:
        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = _exit_status(exc.code)
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120
    return code


def _exit_status(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


def serve(sockdir: str, script: str, roots: list[str]) -> int:
    server = Server(sockdir, script, roots)
    why = server.start()
    if why is not None:
        print(f"nowarm {why}", flush=True)
        return 0
    signal.signal(signal.SIGTERM, server.stop)
    signal.signal(signal.SIGHUP, server.stop)
    print(f"ready {os.getpid()}", flush=True)
    server.serve()
    return 0


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "serve":
        return serve(argv[1], argv[2], argv[3:])
    if len(argv) >= 3 and argv[0] == "client":
        try:
            return client(argv[1], argv[2], argv[3:])
        except Exception:  # whatever went wrong here, the cold command has the answer
            return UNAVAILABLE
    print("usage: w.py serve SOCKDIR SCRIPT ROOT... | client SOCKDIR SCRIPT ARG...")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
