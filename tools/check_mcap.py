#!/usr/bin/env python3
"""Reads MCAP files shmbus wrote (docs/RECORDING.md, section "MCAP") with
the `mcap` Python package (foxglove's reader, not shmbus's), and checks
them. FILE's rotated parts (FILE.1, FILE.2, ...) are read after it, as
one recording.

    check_mcap.py dump FILE
        Prints the recording as tools/read_recording.py prints a native
        one: bus, message and gap lines (64-bit sequences recovered from
        MCAP's 32-bit ones and the shmbus.seq marks).

    check_mcap.py compare FILE NATIVE
        FILE must hold exactly what tools/read_recording.py reads from the
        native recording NATIVE: every bus line, message (bus, sequence,
        CLOCK_MONOTONIC and wall times, bytes) and gap, in order per bus.

    check_mcap.py last FILE
        Prints each bus's name and the last sequence it covers (a message
        or a gap), -1 for none: how far a recorder has got.

    check_mcap.py agrees FILE NATIVE
        FILE and a native recording NATIVE made at the same time by
        another recorder of the same buses: each bus in both has the same
        bytes at each sequence both recorded, and, where neither missed
        anything, the same sequences.

    check_mcap.py published FILE BUS=LINES... [--kill]
        Each named bus of FILE against the lines LINES (a file, one line
        per message published, in order): every sequence from the bus's
        first recorded one to its last is either a message whose bytes
        (zero padding dropped) are that line, or inside a gap; receive
        times never go back. The channel's metadata must name its kind and
        geometry. Without --kill the file must be whole (footer, summary:
        read again through the indexed reader, in the same order); with
        --kill (a recorder killed), it may end cut, after a whole chunk.

Exit 0 when it holds, 1 (one line on stderr) when it does not.
"""
import os
import struct
import sys

from mcap.exceptions import McapError
from mcap.reader import make_reader
from mcap.records import Channel, Footer, Message, Schema
from mcap.stream_reader import StreamReader

KINDS = {"bus": 1, "many_publisher": 2, "pool": 3, "stream": 4, "journaled": 5}


class Failed(Exception):
    pass


def parts(base):
    yield base
    k = 1
    while os.path.exists(f"{base}.{k}"):
        yield f"{base}.{k}"
        k += 1


def infer(nxt, low):
    """The least sequence at or after nxt whose low 32 bits are low."""
    cand = (nxt & ~0xFFFFFFFF) | low
    return cand if cand >= nxt else cand + (1 << 32)


def read_part(path, whole):
    """The records of one part in file order: (records, cut)."""
    out = []
    cut = False
    with open(path, "rb") as f:
        try:
            for r in StreamReader(f, validate_crcs=True).records:
                out.append(r)
        except McapError as e:
            if whole:
                raise Failed(f"{path}: {type(e).__name__}: {e}")
            cut = True
    if whole and not any(isinstance(r, Footer) for r in out):
        raise Failed(f"{path}: no footer")
    if whole:
        # The indexed reader (summary, chunk indexes) gives the same
        # messages in the same order.
        with open(path, "rb") as f:
            indexed = [
                (c.topic, m.sequence, m.log_time, m.publish_time, bytes(m.data))
                for _, c, m in make_reader(f, validate_crcs=True).iter_messages(log_time_order=False)
            ]
        chans = {r.id: r.topic for r in out if isinstance(r, Channel)}
        streamed = [
            (chans[m.channel_id], m.sequence, m.log_time, m.publish_time, bytes(m.data))
            for m in out
            if isinstance(m, Message)
        ]
        if indexed != streamed:
            raise Failed(f"{path}: the indexed reader reads other messages than the linear one")
    return out, cut


def read(base, whole=True):
    """(buses, lines, cut): buses by name -> metadata; the records as
    read_recording.py prints them."""
    buses = {}  # name -> (id, metadata, schema name)
    lines = []
    cut = False
    for path in parts(base):
        records, c = read_part(path, whole)
        cut = cut or c
        schemas = {}
        channels = {}  # channel id -> ("bus", name) | "gap" | "seq"
        ids = {}  # the part's shmbus.bus_id -> name
        nxt = {}
        for r in records:
            if isinstance(r, Schema):
                schemas[r.id] = r.name
            elif isinstance(r, Channel):
                if r.id in channels:
                    continue
                if r.topic == "shmbus.gap":
                    channels[r.id] = "gap"
                    continue
                if r.topic == "shmbus.seq":
                    channels[r.id] = "seq"
                    continue
                m = r.metadata
                if "shmbus.kind" not in m:
                    raise Failed(f"{path}: channel {r.topic!r} has no shmbus metadata")
                if r.message_encoding != "shmbus.raw":
                    raise Failed(f"{path}: channel {r.topic!r}: encoding {r.message_encoding!r}")
                if r.topic not in buses:
                    buses[r.topic] = (len(buses), m, schemas.get(r.schema_id, ""))
                    lines.append(bus_line(buses[r.topic][0], r.topic, m))
                channels[r.id] = ("bus", r.topic)
                ids[int(m["shmbus.bus_id"])] = r.topic
            elif isinstance(r, Message):
                what = channels.get(r.channel_id)
                if what is None:
                    raise Failed(f"{path}: a message on undeclared channel {r.channel_id}")
                if what == "gap":
                    bus, first, count = struct.unpack("<IQQ", r.data)
                    name = ids[bus]
                    nxt[name] = max(nxt.get(name, 0), first + count)
                    lines.append(f"gap {buses[name][0]} {first} {count}")
                elif what == "seq":
                    bus, seq = struct.unpack("<IQ", r.data)
                    nxt[ids[bus]] = seq
                else:
                    name = what[1]
                    seq = infer(nxt.get(name, 0), r.sequence)
                    nxt[name] = seq + 1
                    lines.append(
                        f"message {buses[name][0]} {seq} {r.publish_time} {r.log_time} {bytes(r.data).hex()}"
                    )
    return buses, lines, cut


def bus_line(i, name, m):
    if "shmbus.type_name" in m:
        h = int(m["shmbus.type_name_hash"], 16)
        typ = f"{m['shmbus.type_size']}:{m['shmbus.type_align']}:{h:x}:{m['shmbus.type_name']}"
    else:
        typ = "-"
    lossless = 1 if m["shmbus.lossless"] == "true" else 0
    return (
        f"bus {i} {KINDS[m['shmbus.kind']]} {m['shmbus.msg_size']} {m['shmbus.slots']} "
        f"{m['shmbus.blocks']} {lossless} {typ} {name}"
    )


def by_bus(lines):
    out = {}
    for line in lines:
        w = line.split(" ")
        out.setdefault(w[1], []).append(line)
    return out


def compare(path, native_lines):
    _, lines, _ = read(path)
    got, want = by_bus(lines), by_bus(native_lines)
    if got != want:
        for bus in sorted(set(got) | set(want)):
            g, w = got.get(bus, []), want.get(bus, [])
            for i, (a, b) in enumerate(zip(g, w)):
                if a != b:
                    raise Failed(f"{path}: bus {bus}, record {i}: {a!r}, the native recording has {b!r}")
            if len(g) != len(w):
                raise Failed(f"{path}: bus {bus}: {len(g)} records, the native recording has {len(w)}")
    return len(lines)


def published(path, specs, kill):
    buses, lines, cut = read(path, whole=not kill)
    if cut and not kill:
        raise Failed(f"{path}: cut short")
    checked = 0
    for spec in specs:
        name, lines_file = spec.split("=", 1)
        with open(lines_file, "rb") as f:
            sent = f.read().split(b"\n")[:-1]
        if name not in buses:
            raise Failed(f"{path}: no channel {name!r}")
        i, meta, schema = buses[name]
        kind = meta["shmbus.kind"]
        size = int(meta["shmbus.msg_size"])
        if kind in ("pool", "stream"):
            if schema != "bytes" and "shmbus.type_name" not in meta:
                raise Failed(f"{path}: {name}: schema {schema!r}, expected bytes")
        elif schema != f"bytes[{size}]" and "shmbus.type_name" not in meta:
            raise Failed(f"{path}: {name}: schema {schema!r}, expected bytes[{size}]")
        covered = {}
        last_mono = last_wall = 0
        for line in lines:
            w = line.split(" ")
            if w[0] == "bus" or int(w[1]) != i:
                continue
            if w[0] == "gap":
                for s in range(int(w[2]), int(w[2]) + int(w[3])):
                    covered[s] = None
                continue
            seq, mono, wall, data = int(w[2]), int(w[3]), int(w[4]), bytes.fromhex(w[5])
            if mono < last_mono or wall < last_wall:
                raise Failed(f"{path}: {name}: message {seq}'s receive time goes back")
            last_mono, last_wall = mono, wall
            if seq in covered:
                raise Failed(f"{path}: {name}: sequence {seq} twice")
            if seq >= len(sent) or data.rstrip(b"\0") != sent[seq]:
                want = sent[seq] if seq < len(sent) else None
                raise Failed(f"{path}: {name}: message {seq} is {data!r}, {want!r} was published")
            covered[seq] = data
        if not covered:
            raise Failed(f"{path}: {name}: nothing recorded")
        lo, hi = min(covered), max(covered)
        missing = [s for s in range(lo, hi + 1) if s not in covered]
        if missing:
            raise Failed(f"{path}: {name}: sequence {missing[0]} is neither a message nor in a gap")
        if not kill and hi != len(sent) - 1:
            raise Failed(f"{path}: {name}: ends at sequence {hi}, {len(sent)} were published")
        checked += sum(1 for v in covered.values() if v is not None)
    return checked, cut


def messages_by_name(lines):
    names, out, gaps = {}, {}, set()
    for line in lines:
        w = line.split(" ")
        if w[0] == "bus":
            names[w[1]] = w[-1]
            out[w[-1]] = {}
        elif w[0] == "message":
            out[names[w[1]]][int(w[2])] = w[5]
        elif w[0] == "gap":
            gaps.add(names[w[1]])
    return out, gaps


def agrees(path, native_lines):
    _, lines, _ = read(path)
    mine, my_gaps = messages_by_name(lines)
    theirs, their_gaps = messages_by_name(native_lines)
    n = 0
    for name, msgs in theirs.items():
        if name not in mine:
            raise Failed(f"{path}: no channel {name!r}, which the native recording has")
        for seq in sorted(set(msgs) & set(mine[name])):
            if msgs[seq] != mine[name][seq]:
                raise Failed(f"{path}: {name}: message {seq} differs from the native recording's")
            n += 1
        if name not in my_gaps and name not in their_gaps and set(msgs) != set(mine[name]):
            raise Failed(f"{path}: {name}: other sequences than the native recording's")
    return n


def last(path):
    buses, lines, _ = read(path, whole=False)
    top = {i: -1 for i, _, _ in buses.values()}
    for line in lines:
        w = line.split(" ")
        if w[0] == "message":
            top[int(w[1])] = max(top[int(w[1])], int(w[2]))
        elif w[0] == "gap":
            top[int(w[1])] = max(top[int(w[1])], int(w[2]) + int(w[3]) - 1)
    return [(name, top[i]) for name, (i, _, _) in buses.items()]


def main(argv):
    try:
        if len(argv) == 3 and argv[1] == "last":
            for name, seq in last(argv[2]):
                print(name, seq)
        elif len(argv) == 3 and argv[1] == "dump":
            _, lines, _ = read(argv[2], whole=False)
            print("\n".join(lines))
        elif len(argv) == 4 and argv[1] == "compare":
            import subprocess

            tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "read_recording.py")
            out = subprocess.run(
                [sys.executable, tool, argv[3]], check=True, capture_output=True, text=True
            ).stdout
            n = compare(argv[2], out.splitlines())
            print(f"{argv[2]}: {n} records, as the native recording")
        elif len(argv) == 4 and argv[1] == "agrees":
            import subprocess

            tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "read_recording.py")
            out = subprocess.run(
                [sys.executable, tool, argv[3]], check=True, capture_output=True, text=True
            ).stdout
            n = agrees(argv[2], out.splitlines())
            print(f"{argv[2]}: {n} messages as the native recording of the same run")
        elif len(argv) >= 4 and argv[1] == "published":
            kill = "--kill" in argv
            specs = [a for a in argv[3:] if a != "--kill"]
            n, cut = published(argv[2], specs, kill)
            print(f"{argv[2]}: {n} messages as published{' (cut short)' if cut else ''}")
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except (Failed, McapError, KeyError, struct.error) as e:
        print(f"check_mcap.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
