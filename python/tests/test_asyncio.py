"""asyncio: ``await recv_async()`` / ``pop_async()`` and ``async for`` on the
receiving handles, on the core's one waiter thread (no thread per handle, no
polling in Python)."""

import asyncio
import os
import random
import signal
import struct
import subprocess
import sys
import time

import pytest

import shmbus
from conftest import CHILD_TIMEOUT, CTRL_C, Child, readline_within

# The long tests' loop counts, times SHMBUS_TEST_SCALE (as the Rust tests':
# a fraction such as CI's 0.5 too), never below `least`.
SCALE = float(os.environ.get("SHMBUS_TEST_SCALE", "1"))


def scaled(n, least):
    return max(least, int(n * SCALE))


def u64(i):
    return struct.pack("<Q", i)


def run(coro):
    """Runs `coro` in a fresh event loop under the children's deadline."""
    return asyncio.run(asyncio.wait_for(coro, CHILD_TIMEOUT))


async def until_registrations(n):
    """Waits (bounded) until `n` wake-ups are armed in this process."""
    deadline = time.monotonic() + CHILD_TIMEOUT
    while shmbus.aio_registrations() != n:
        assert time.monotonic() < deadline, f"{shmbus.aio_registrations()} registrations, expected {n}"
        await asyncio.sleep(0.001)


def publisher_child(names, count, pace_every=7):
    """A child process that attaches to each bus of `names` and publishes
    u64 0..count-1 on each, round robin, pausing 1 ms every `pace_every`
    messages so that the receivers wait (and are woken) often."""
    code = (
        "import shmbus, struct, sys, time\n"
        f"pubs = [shmbus.Publisher.attach(n) for n in {names!r}]\n"
        f"for i in range({count}):\n"
        "    for p in pubs:\n"
        "        p.publish(struct.pack('<Q', i))\n"
        f"    if i % {pace_every} == 0:\n"
        "        time.sleep(0.001)\n"
        "print('done', file=sys.stderr, flush=True)\n"
    )
    return Child([sys.executable, "-c", code])


def make_buses(bus_name, n, capacity):
    """`n` bus names, created with at least `capacity` slots (their
    publisher handle closed, the buses stay)."""
    capacity = 1 << (capacity - 1).bit_length()
    names = [f"{bus_name}-{k}" for k in range(n)]
    for name in names:
        shmbus.Publisher.create(name, msg_size=8, capacity=capacity).close()
    return names


def remove_all(names):
    for name in names:
        try:
            shmbus.remove(name)
        except shmbus.BusNotFoundError:
            pass


def test_many_tasks_on_many_buses_fed_by_another_process_get_every_message_once_in_order(bus_name):
    count = scaled(300, 100)
    names = make_buses(bus_name, 4, capacity=2 * count)
    try:
        # Two subscribers (two tasks) per bus, open before the first message.
        subs = [shmbus.Subscriber.open(n, "oldest") for n in names for _ in range(2)]

        async def follow(sub, use_async_for):
            got = []
            if use_async_for:
                async for msg in sub:
                    got.append(msg)
                    if len(got) == count:
                        break
            else:
                while len(got) < count:
                    got.append(await sub.recv_async())
            return got

        async def main():
            tasks = [asyncio.create_task(follow(s, k % 2 == 0)) for k, s in enumerate(subs)]
            child = publisher_child(names, count)
            try:
                results = await asyncio.gather(*tasks)
            finally:
                rc, _, err = child.finish()
            assert rc == 0, err
            return results

        for got in run(main()):
            assert got == [u64(i) for i in range(count)]
        assert shmbus.aio_registrations() == 0
        for s in subs:
            s.close()
    finally:
        remove_all(names)


def test_receives_cancelled_at_random_points_lose_no_message_and_no_lag(bus_name):
    count = scaled(300, 100)
    rng = random.Random(31)
    (name,) = make_buses(bus_name, 1, capacity=2 * count)
    try:
        sub = shmbus.Subscriber.open(name, "oldest")

        async def main():
            got = []
            cancelled = 0
            child = publisher_child([name], count, pace_every=3)
            try:
                while len(got) < count:
                    if rng.random() < 0.5:
                        # A timeout cancels the receive wherever it is.
                        try:
                            got.append(await asyncio.wait_for(sub.recv_async(), rng.uniform(0, 0.002)))
                        except asyncio.TimeoutError:
                            cancelled += 1
                    else:
                        task = asyncio.create_task(sub.recv_async())
                        for _ in range(rng.randrange(3)):
                            await asyncio.sleep(0)
                        task.cancel()
                        try:
                            got.append(await task)
                        except asyncio.CancelledError:
                            cancelled += 1
                    assert shmbus.aio_registrations() == 0
            finally:
                rc, _, err = child.finish()
            assert rc == 0, err
            return got, cancelled

        got, cancelled = run(main())
        assert got == [u64(i) for i in range(count)]
        assert cancelled > 0

        # A lap reported once, exactly as a blocking receive reports it, by
        # the receive after a cancelled one.
        twin = shmbus.Subscriber.open(name, "next")
        assert twin.position == sub.position
        with shmbus.Publisher.attach(name) as pub:
            for i in range(sub.capacity + 5):
                pub.publish(u64(i))

            async def lapped():
                task = asyncio.create_task(sub.recv_async())
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                return await sub.recv_async()

            lag = run(lapped())
            assert isinstance(lag, shmbus.Lagged), lag
            assert lag == twin.recv(timeout=5)
            assert sub.position == twin.position
        twin.close()
        assert shmbus.aio_registrations() == 0
        sub.close()
    finally:
        remove_all([name])


def test_a_stream_whose_producer_is_killed_ends_the_waiting_pop_with_peer_gone(bus_name):
    code = (
        "import shmbus, sys, time\n"
        f"p = shmbus.Producer.create({bus_name!r}, 4096)\n"
        "print('ready', file=sys.stderr, flush=True)\n"
        "sys.stdin.readline()\n"
        "p.push(b'last')\n"
        "time.sleep(600)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        assert child.stderr.readline() == b"ready\n"
        consumer = shmbus.Consumer.open(bus_name)

        async def main():
            child.stdin.write(b"go\n")
            child.stdin.flush()
            first = await consumer.pop_async()
            waiting = asyncio.create_task(consumer.pop_async())
            await until_registrations(1)
            child.send_signal(signal.SIGKILL)
            with pytest.raises(shmbus.PeerGoneError) as e:
                await asyncio.wait_for(waiting, 10)
            return first, e.value

        first, gone = run(main())
        assert first == b"last"
        assert str(child.pid) in str(gone)
        assert shmbus.aio_registrations() == 0
        consumer.close()
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=CHILD_TIMEOUT)


def test_ctrl_c_while_tasks_wait_ends_asyncio_run_with_no_registration_left(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8):
        code = (
            CTRL_C + "import asyncio, shmbus, sys, time\n"
            f"subs = [shmbus.Subscriber.open({bus_name!r}) for _ in range(3)]\n"
            "async def main():\n"
            "    tasks = [asyncio.create_task(s.recv_async()) for s in subs]\n"
            "    while shmbus.aio_registrations() < 3:\n"
            "        await asyncio.sleep(0.001)\n"
            "    print('waiting', flush=True)\n"
            "    await asyncio.gather(*tasks)\n"
            "try:\n"
            "    asyncio.run(main())\n"
            "except KeyboardInterrupt:\n"
            "    print('interrupted', shmbus.aio_registrations(), flush=True)\n"
            "    sys.exit(0)\n"
            "sys.exit(1)\n"
        )
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert readline_within(child.stdout) == b"waiting\n"
            child.send_signal(signal.SIGINT)
            out, err = child.communicate(timeout=CHILD_TIMEOUT)
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()
        assert child.returncode == 0, err
        assert out == b"interrupted 0\n"


def test_a_loop_shut_down_while_tasks_wait_leaves_no_registration(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8) as pub:
        subs = [shmbus.Subscriber.open(bus_name) for _ in range(3)]

        async def main():
            for s in subs:
                asyncio.create_task(s.recv_async())
            await until_registrations(3)
            # Returns with the tasks waiting: asyncio.run cancels them.

        asyncio.run(main())
        assert shmbus.aio_registrations() == 0
        # They took nothing: each subscriber still gets the next message.
        pub.publish(b"after")
        assert [s.recv(timeout=5) for s in subs] == [b"after" + bytes(3)] * 3
        for s in subs:
            s.close()


def test_a_loop_closed_while_tasks_wait_leaves_no_registration(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8) as pub:
        subs = [shmbus.Subscriber.open(bus_name) for _ in range(3)]
        loop = asyncio.new_event_loop()
        tasks = [loop.create_task(s.recv_async()) for s in subs]
        loop.run_until_complete(until_registrations(3))
        # Closed with the tasks still waiting (no asyncio.run to cancel
        # them), the loop and its tasks still referenced: the close alone
        # drops their wake-ups.
        loop.close()
        assert shmbus.aio_registrations() == 0
        assert not any(t.done() for t in tasks)
        # They took nothing: each subscriber still gets the next message.
        pub.publish(b"after")
        assert [s.recv(timeout=5) for s in subs] == [b"after" + bytes(3)] * 3
        for s in subs:
            s.close()
        del tasks, loop


def test_a_loop_dropped_unclosed_while_tasks_wait_leaves_no_registration_once_collected(bus_name):
    import gc

    with shmbus.Publisher.create(bus_name, msg_size=8):
        subs = [shmbus.Subscriber.open(bus_name) for _ in range(3)]
        loop = asyncio.new_event_loop()
        for s in subs:
            loop.create_task(s.recv_async())
        loop.run_until_complete(until_registrations(3))
        # Nothing of this module may keep the loop alive: collected, it
        # closes (asyncio's own ResourceWarning says it was not closed).
        del loop
        with pytest.warns(ResourceWarning, match="unclosed event loop"):
            gc.collect()
        assert shmbus.aio_registrations() == 0
        for s in subs:
            s.close()


def test_idle_awaiting_tasks_use_no_cpu(bus_name):
    names = make_buses(bus_name, 4, capacity=8)
    stream = f"{bus_name}-stream"
    producer = shmbus.Producer.create(stream, 4096)
    try:
        subs = [shmbus.Subscriber.open(n) for n in names for _ in range(2)]
        # Two tasks on one subscriber: one gets the message, the other
        # waits on, idle.
        shared = subs[0]
        consumer = shmbus.Consumer.open(stream)

        async def idle_for_a_second():
            before = time.process_time()
            await asyncio.sleep(1.0)
            return time.process_time() - before

        async def main():
            tasks = [asyncio.create_task(s.recv_async()) for s in subs]
            tasks.append(asyncio.create_task(shared.recv_async()))
            await until_registrations(len(tasks))
            with shmbus.Publisher.attach(names[0]) as pub:
                pub.publish(b"one")
            done, _ = await asyncio.wait([tasks[0], tasks[-1]], return_when=asyncio.FIRST_COMPLETED)
            assert len(done) == 1
            await asyncio.sleep(0.1)
            buses = await idle_for_a_second()
            # A stream consumer's wait naps (PEER_CHECK, 20 ms: a dead
            # producer rings no bell) and turns again, 50 times a second.
            tasks.append(asyncio.create_task(consumer.pop_async()))
            await asyncio.sleep(0.1)
            with_stream = await idle_for_a_second()
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            return buses, with_stream

        buses, with_stream = run(main())
        # A poll every millisecond costs far more than this (each turn of
        # the loop is tens of microseconds, 0.15 s a second for 8 tasks);
        # asleep, nothing runs.
        assert buses < 0.01, f"{buses:.3f} s of CPU over 1 s idle"
        # The stream's peer checks: about 0.3 ms each.
        assert with_stream < 0.05, f"{with_stream:.3f} s of CPU over 1 s idle, with a stream consumer"
        assert shmbus.aio_registrations() == 0
        for s in subs:
            s.close()
        consumer.close()
    finally:
        producer.close()
        remove_all(names + [stream])


def test_closing_a_subscriber_ends_its_waiting_receive_and_async_for(bus_name):
    with shmbus.Publisher.create(bus_name, msg_size=8) as pub:
        a = shmbus.Subscriber.open(bus_name)
        b = shmbus.Subscriber.open(bus_name)

        async def main():
            async def collect():
                return [m async for m in b]

            waiting = asyncio.create_task(a.recv_async())
            iterating = asyncio.create_task(collect())
            await until_registrations(2)
            pub.publish(b"one")
            await until_registrations(1)
            assert await waiting == b"one" + bytes(5)
            waiting = asyncio.create_task(a.recv_async())
            await until_registrations(2)
            a.close()
            b.close()
            with pytest.raises(shmbus.ClosedError):
                await waiting
            return await iterating

        assert run(main()) == [b"one" + bytes(5)]
        assert shmbus.aio_registrations() == 0


def test_a_pool_subscriber_receives_samples_asynchronously(bus_name):
    with shmbus.PoolPublisher.create(bus_name, block_size=64, blocks=16, capacity=8) as pub:
        with shmbus.PoolSubscriber.open(bus_name) as sub:

            async def main():
                task = asyncio.create_task(sub.recv_async())
                await until_registrations(1)
                loan = pub.loan(5, timeout=5)
                loan.memoryview[:] = b"block"
                loan.publish()
                sample = await task
                data = bytes(sample)
                sample.release()
                return data

            assert run(main()) == b"block"
            assert shmbus.aio_registrations() == 0


def test_a_journal_subscriber_receives_entries_from_the_file_then_the_ring(bus_name, tmp_path):
    with shmbus.JournalPublisher.create(bus_name, tmp_path / "j", msg_size=8, capacity=8) as pub:
        for i in range(20):
            pub.publish(u64(i))
        with shmbus.JournalSubscriber.join(bus_name) as late:

            async def main():
                seqs = []
                async for e in late:
                    assert e.data == u64(e.sequence)
                    seqs.append(e.sequence)
                    if len(seqs) == 20:
                        await until_registrations(0)
                        asyncio.get_running_loop().call_later(0.01, pub.publish, u64(20))
                    if len(seqs) == 21:
                        break
                return seqs

            assert run(main()) == list(range(21))
            assert shmbus.aio_registrations() == 0


def test_tasks_awaiting_a_blackboard_another_process_writes_see_each_key_reach_its_last_value(bus_name):
    count = scaled(2000, 200)
    shmbus.Blackboard.create(bus_name, keys=8, key_size=8, value_size=8).close()
    readers = [shmbus.Blackboard.open(bus_name) for _ in range(5)]

    async def follow_table(r):
        since, wakes = 0, 0
        while since < count:
            v = await r.wait_async(since)
            assert since < v <= count
            since, wakes = v, wakes + 1
        return wakes

    async def follow_key(r, k):
        last = max(i for i in range(count) if i % 4 == k)
        since, seen = 0, 0
        while True:
            value, version = await r.wait_key_async(u64(k), since)
            (v,) = struct.unpack("<Q", value)
            assert version > since and (v % 4, version) == (k, v + 1)
            since, seen = version, seen + 1
            if v == last:
                return seen

    async def main():
        # Nothing written yet: a wait times out, and its cancellation
        # leaves no wake-up armed.
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(readers[0].wait_async(0), 0.02)
        assert shmbus.aio_registrations() == 0
        tasks = [asyncio.ensure_future(follow_table(readers[0]))]
        tasks += [asyncio.ensure_future(follow_key(readers[1 + k], k)) for k in range(4)]
        await until_registrations(5)
        code = (
            "import shmbus, struct, time\n"
            f"b = shmbus.Blackboard.attach({bus_name!r})\n"
            f"for i in range({count}):\n"
            "    b.put(struct.pack('<Q', i % 4), struct.pack('<Q', i))\n"
            "    if i % 7 == 0:\n"
            "        time.sleep(0.001)\n"
            "b.close()\n"
        )
        child = Child([sys.executable, "-c", code])
        try:
            got = await asyncio.gather(*tasks)
        except BaseException:
            child.kill()
            raise
        rc, _, err = child.finish()
        assert rc == 0, err
        return got

    wakes, *per_key = run(main())
    assert wakes >= 1 and all(n >= 1 for n in per_key)
    assert shmbus.aio_registrations() == 0
    for r in readers:
        r.close()
