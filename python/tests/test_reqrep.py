"""Request-response from Python: ``Server``, ``Request`` and ``Client`` in
this process, and a Python client against a Rust server in another process
(``cargo run -p shmbus --example reqrep_serve``, or the binary named by
$SHMBUS_REQREP_SERVE) through every outcome: the response, the server
killed after taking the request, no server alive, a deadline passed (the
late response never reaches the next call), a full client, a refusal;
and a Python client killed with calls outstanding, whose entry the next
client takes over.
Every child runs under a deadline and is killed when its test ends."""

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import shmbus
from conftest import CHILD_TIMEOUT, REPO, readline_within

SERVE = Path(os.environ.get("SHMBUS_REQREP_SERVE", REPO / "target" / "debug" / "examples" / "reqrep_serve"))


@pytest.fixture(scope="session")
def reqrep_serve():
    """The Rust server's binary, built here if it is not there and cargo is."""
    if not SERVE.exists():
        try:
            subprocess.run(
                ["cargo", "build", "-q", "-p", "shmbus", "--example", "reqrep_serve"],
                cwd=REPO,
                check=True,
                timeout=900,
            )
        except FileNotFoundError:
            pytest.fail(f"no reqrep_serve at {SERVE}: build it (cargo build -p shmbus --example reqrep_serve) or set SHMBUS_REQREP_SERVE")
    return str(SERVE)


class RustServer:
    """``reqrep_serve NAME ARGS...`` once it said ``ready``; killed on exit."""

    def __init__(self, binary, name, *args):
        self.proc = subprocess.Popen(
            [binary, name, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.expect("ready")

    def expect(self, line):
        """Reads stdout lines (bounded) until ``line``."""
        while True:
            got = readline_within(self.proc.stdout).decode().strip()
            if got == line:
                return
            if not got and self.proc.poll() is not None:
                pytest.fail(f"the server exited ({self.proc.returncode}) before {line!r}: {self.proc.stderr.read()!r}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=CHILD_TIMEOUT)
        return False


def test_a_call_is_answered_by_a_python_server_in_this_process(bus_name):
    with shmbus.Server.create(bus_name, 64, 16, clients=2, slots=4) as server, shmbus.Client.attach(bus_name) as client:
        call = client.send(b"ping", timeout=0)
        assert not client.is_answered(call)
        request = server.recv(timeout=5)
        assert (request.data, request.client, request.answered) == (b"ping", 0, False)
        assert request.respond(b"pong") is True
        assert request.answered
        assert client.is_answered(call)
        assert client.wait(call, timeout=5) == b"pong"
        assert client.outstanding == 0
        assert (server.max_request, server.max_response) == (64, 16)
        with pytest.raises(shmbus.UnknownCallError) as e:
            client.wait(call, timeout=0)
        assert e.value.call == call
        assert server.recv(timeout=0) is None


def test_a_request_dropped_or_left_in_a_with_block_unanswered_is_refused(bus_name):
    with shmbus.Server.create(bus_name, 8, 8) as server, shmbus.Client.attach(bus_name) as client:
        first = client.send(b"a")
        del_me = server.recv(timeout=5)
        del del_me
        with pytest.raises(shmbus.RefusedError) as e:
            client.wait(first, timeout=5)
        assert e.value.pid == os.getpid()
        assert isinstance(e.value, shmbus.CallError)
        second = client.send(b"b")
        with server.recv(timeout=5) as request:
            assert request.data == b"b"
        with pytest.raises(shmbus.RefusedError):
            client.wait(second, timeout=5)
        with pytest.raises(shmbus.ClosedError):
            request.respond(b"x")


def test_a_response_too_long_leaves_the_request_to_answer_and_a_late_one_says_false(bus_name):
    with shmbus.Server.create(bus_name, 8, 4) as server, shmbus.Client.attach(bus_name) as client:
        call = client.send(b"q")
        request = server.recv(timeout=5)
        server.close()  # the request outlives its server's handle
        with pytest.raises(shmbus.MessageTooLongError) as e:
            request.respond(b"12345")
        assert (e.value.length, e.value.max) == (5, 4)
        with pytest.raises(shmbus.CallTimeoutError):
            client.wait(call, timeout=0.01)
        assert request.respond(b"1234") is False


def test_a_second_client_of_a_one_client_service_is_refused_its_entry(bus_name):
    with shmbus.Server.create(bus_name, 8, 8, clients=1), shmbus.Client.attach(bus_name):
        with pytest.raises(shmbus.RoleTakenError) as e:
            shmbus.Client.attach(bus_name)
        assert (e.value.side, e.value.entries) == ("client", 1)


def test_bad_shapes_and_a_missing_service_raise_the_create_and_open_errors(bus_name):
    with pytest.raises(shmbus.InvalidGeometryError):
        shmbus.Server.create(bus_name, 8, 8, slots=65)
    with pytest.raises(shmbus.BusNotFoundError):
        shmbus.Client.attach(bus_name)


def test_a_call_is_answered_by_a_rust_server_in_another_process(bus_name, reqrep_serve):
    with RustServer(reqrep_serve, bus_name, "--create"), shmbus.Client.attach(bus_name) as client:
        assert client.call(b"hello", timeout=10) == b"hello"
        assert client.call(bytearray(b"again"), timeout=10) == b"again"


def test_a_call_whose_rust_server_is_killed_after_taking_it_raises_server_gone(bus_name, reqrep_serve):
    with RustServer(reqrep_serve, bus_name, "--create", "--mode", "hang") as server, shmbus.Client.attach(bus_name) as client:
        call = client.send(b"doomed")
        server.expect("taken")
        pid = server.proc.pid
        os.kill(pid, signal.SIGKILL)
        started = time.monotonic()
        with pytest.raises(shmbus.ServerGoneError) as e:
            client.wait(call, timeout=20)
        assert e.value.pid == pid
        assert isinstance(e.value, ConnectionError)
        assert time.monotonic() - started < 10


def test_a_call_with_no_server_alive_raises_no_server(bus_name, reqrep_serve):
    with RustServer(reqrep_serve, bus_name, "--create", "--count", "0") as server:
        assert server.proc.wait(timeout=CHILD_TIMEOUT) == 0
    with shmbus.Client.attach(bus_name) as client:
        with pytest.raises(shmbus.NoServerError):
            client.call(b"anyone", timeout=10)


def test_a_call_past_its_deadline_times_out_and_its_late_response_never_reaches_the_next_call(bus_name, reqrep_serve):
    with RustServer(reqrep_serve, bus_name, "--create", "--mode", "hold:300") as server, shmbus.Client.attach(bus_name) as client:
        with pytest.raises(shmbus.CallTimeoutError) as e:
            client.call(b"first", timeout=0.05)
        assert isinstance(e.value, shmbus.TimeoutError)
        assert client.call(b"second", timeout=10) == b"second"
        server.expect("late")


def test_a_client_with_every_call_slot_outstanding_raises_full_when_it_does_not_wait(bus_name, reqrep_serve):
    with RustServer(reqrep_serve, bus_name, "--create", "--slots", "2", "--mode", "hold:1000"), shmbus.Client.attach(bus_name) as client:
        client.send(b"1", timeout=0)
        client.send(b"2", timeout=0)
        with pytest.raises(shmbus.FullError) as e:
            client.send(b"3", timeout=0)
        assert e.value.outstanding == 2


def test_a_request_its_rust_server_drops_unanswered_raises_refused(bus_name, reqrep_serve):
    with RustServer(reqrep_serve, bus_name, "--create", "--mode", "refuse") as server, shmbus.Client.attach(bus_name) as client:
        with pytest.raises(shmbus.RefusedError) as e:
            client.call(b"please", timeout=10)
        assert e.value.pid == server.proc.pid


def test_call_async_is_answered_by_a_rust_server_without_blocking_the_loop(bus_name, reqrep_serve):
    async def main(client):
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        t = asyncio.get_running_loop().create_task(ticker())
        got = await client.call_async(b"async", timeout=10)
        t.cancel()
        return got, ticks

    with RustServer(reqrep_serve, bus_name, "--create", "--mode", "hold:200"), shmbus.Client.attach(bus_name) as client:
        got, ticks = asyncio.run(main(client))
        assert got == b"async"
        assert ticks >= 5, "the loop ran while the call waited"


def test_a_python_server_in_another_process_answers_a_python_client(bus_name):
    script = textwrap.dedent(
        f"""
        import sys, shmbus
        with shmbus.Server.create({bus_name!r}, 64, 64) as server:
            print("ready", flush=True)
            for _ in range(2):
                request = server.recv(timeout=30)
                request.respond(request.data.upper())
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert readline_within(child.stdout).strip() == b"ready"
        with shmbus.Client.attach(bus_name) as client:
            assert client.call(b"one", timeout=10) == b"ONE"
            assert client.call(b"two", timeout=10) == b"TWO"
        assert child.wait(timeout=CHILD_TIMEOUT) == 0, child.stderr.read()
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate()


def test_a_python_client_killed_with_calls_outstanding_leaves_its_entry_to_the_next(bus_name):
    # One client entry: the next client must take the dead one's.
    with shmbus.Server.create(bus_name, 64, 64, clients=1, slots=4) as server:
        script = textwrap.dedent(
            f"""
            import signal, shmbus
            client = shmbus.Client.attach({bus_name!r})
            for data in (b"answered", b"held", b"untaken"):
                client.send(data)
            print("ready", flush=True)
            signal.pause()
            """
        )
        child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert readline_within(child.stdout).strip() == b"ready"
            first = server.recv(timeout=10)
            assert first.data == b"answered"
            assert first.respond(b"never read") is True
            held = server.recv(timeout=10)
            assert held.data == b"held"
            child.kill()
            child.wait(timeout=CHILD_TIMEOUT)
            with shmbus.Client.attach(bus_name) as heir:
                assert server.recv(timeout=0) is None, "the untaken request was withdrawn"
                assert held.respond(b"late") is False, "its caller is gone"
        finally:
            if child.poll() is None:
                child.kill()
            child.communicate()
