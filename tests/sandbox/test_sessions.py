"""Shell sessions and the process host on the local tier (test_docker covers the container)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from driveros.sandbox import LocalSandbox, PathEscapeError, ProcessNotFoundError


async def test_session_keeps_cwd_and_exports(local: LocalSandbox, workspace: Path) -> None:
    session = await local.open_session()
    await session.run("cd src; export COLOR=blue")
    result = await session.run("pwd; echo $COLOR")
    assert result.stdout == f"{workspace.resolve() / 'src'}\nblue\n"
    assert session.cwd == "src"
    assert (await session.run("echo $FLAVOR", env={"FLAVOR": 'it\'s "odd"'})).stdout == (
        'it\'s "odd"\n'
    )
    assert (await session.run("echo $FLAVOR")).stdout == 'it\'s "odd"\n'


async def test_session_framing_survives_binary_and_missing_newlines(local: LocalSandbox) -> None:
    session = await local.open_session()
    assert (await session.run("printf 'no newline'")).stdout == "no newline"
    raw = await session.run("printf '\\000\\001\\377__DRV_fake 0 /\\000'; printf x >&2")
    assert raw.stdout == "\x00\x01\ufffd__DRV_fake 0 /\x00" and raw.stderr == "x"
    assert raw.exit_code == 0
    fed = await session.run("od -An -c", stdin=b"a'\\\x00")
    assert fed.stdout.split() == ["a", "'", "\\", "\\0"]
    assert (await session.run("echo next")).stdout == "next\n"


async def test_session_exit_codes_and_syntax_errors(local: LocalSandbox) -> None:
    session = await local.open_session()
    await session.run("cd src")
    assert (await session.run("false")).exit_code == 1
    broken = await session.run("echo 'unterminated")
    assert broken.exit_code != 0 and "nterminated" in broken.stderr
    assert (await session.run("exit 7")).exit_code == 7
    after = await session.run("pwd")  # a fresh shell, in the last known cwd
    assert after.ok and after.stdout.endswith("/src\n")


async def test_session_timeout_interrupts_the_command_only(local: LocalSandbox) -> None:
    session = await local.open_session()
    await session.run("export KEPT=yes")
    slow = await session.run("sleep 30; echo never", timeout=0.3)
    assert slow.timed_out and slow.exit_code == 124 and "never" not in slow.stdout
    spin = await session.run("while :; do :; done", timeout=0.3)  # a builtin loop stops too
    assert spin.timed_out and "killed" not in spin.stderr
    assert (await session.run("echo $KEPT")).stdout == "yes\n"


async def test_session_command_ignoring_sigint_kills_the_shell(local: LocalSandbox) -> None:
    session = await local.open_session()
    await session.run("cd src; export LOST=yes")
    spin = await session.run("sh -c 'trap \"\" INT; sleep 30'", timeout=1.0)
    assert spin.timed_out and "session shell was killed" in spin.stderr
    again = await session.run("pwd; echo ${LOST:-gone}")
    assert again.stdout.endswith("/src\ngone\n")


async def test_session_interrupt_from_another_task(local: LocalSandbox) -> None:
    session = await local.open_session()
    running = asyncio.create_task(session.run("echo started; sleep 30; echo never"))
    await asyncio.sleep(0.3)
    await session.interrupt()
    result = await running
    assert result.exit_code == 130 and "never" not in result.stdout
    assert (await session.run("echo alive")).stdout == "alive\n"


async def test_session_cancel_reraises_and_session_recovers(local: LocalSandbox) -> None:
    session = await local.open_session()
    running = asyncio.create_task(session.run("sleep 30"))
    await asyncio.sleep(0.2)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert (await session.run("echo back")).stdout == "back\n"


async def test_session_caps_output(workspace: Path) -> None:
    async with LocalSandbox(workspace, output_cap=2048) as sandbox:
        session = await sandbox.open_session()
        big = await session.run("head -c 100000 /dev/zero | tr '\\0' z; echo done >&2")
        assert len(big.stdout) == 2048 and big.stdout_truncated and big.stderr == "done\n"
        assert (await session.run("echo small")).stdout == "small\n"


async def test_session_refuses_cwd_outside(local: LocalSandbox) -> None:
    with pytest.raises(PathEscapeError):
        await local.open_session(cwd="../elsewhere")


async def test_process_host_reads_incrementally_and_stops(local: LocalSandbox) -> None:
    proc = await local.start_process("echo one; read x; echo two $x >&2; sleep 30")
    assert (await proc.read(wait=10)).stdout == "one\n"
    await proc.write(b"more\n")
    second = await proc.read(wait=10)
    assert second.stderr == "two more\n" and second.running
    assert local.get_process(proc.id) is proc and local.processes() == [proc]
    code = await proc.stop(grace=0.5)
    assert code == 128 + 15 and not proc.running
    final = await proc.read()
    assert not final.running and final.exit_code == 143


async def test_process_host_wait_and_dropped_output(workspace: Path) -> None:
    async with LocalSandbox(workspace, output_cap=1000) as sandbox:
        proc = await sandbox.start_process("head -c 5000 /dev/zero | tr '\\0' q; exit 3")
        assert await proc.wait(timeout=30) == 3
        out = await proc.read()
        assert len(out.stdout) == 1000 and out.dropped == 4000 and out.exit_code == 3
        with pytest.raises(ProcessNotFoundError):
            sandbox.get_process("p999")
