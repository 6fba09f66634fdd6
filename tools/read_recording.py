#!/usr/bin/env python3
"""Reads a shmbus recording (docs/RECORDING.md, versions 1 and 2), written
from that page alone, with Python's standard library only. Reads FILE and
its rotated parts (FILE.1, FILE.2, ... while they exist) as one, and
prints one line per record:

    bus ID KIND MSG_SIZE SLOTS BLOCKS LOSSLESS TYPE NAME
    message BUS SEQ MONO_NS WALL_NS PAYLOAD_HEX
    gap BUS FIRST COUNT

TYPE is SIZE:ALIGN:NAME_HASH_HEX:NAME (`-` in a version 1 file, which has
none), LOSSLESS 1 or 0. Each bus is printed once, though every part
declares it again. It ends at the end of the last part, or at a record cut
short by the end of its part's file (a recorder killed mid-write); a file
named as the next part that is not that part of this recording (cut inside
its header, or any other file) ends it too, unless the file after it is a
part. A damaged record is one line on stderr naming its offset (and its
part's file, after the first), exit 1; a file that is not a recording, or
a part lost from the middle, exit 2.

    python3 tools/read_recording.py FILE
    python3 tools/read_recording.py FILE --seek-time MONO_NS
    python3 tools/read_recording.py FILE --seek-seq BUS SEQ

With --seek-time (--seek-seq) it prints the buses, then the records from
the first message received at or after MONO_NS (the first message or gap
of BUS at or past SEQ), found through each part's index (FILE.idx) where
it is usable, by reading from the start where it is not.

crates/shmbus-cli/tests/record.rs compares its output with the Rust
reader's.
"""
import mmap
import os
import stat
import struct
import sys

MASK = (1 << 64) - 1
K = 0x9E3779B97F4A7C15
M = 0xBF58476D1CE4E5B9
MAGIC = 0x00434552424D4853  # "SHMBREC\0"
INDEX_MAGIC = struct.unpack("<Q", b"SHMBIDX\0")[0]
VARIABLE = {3, 4}  # pool, stream: messages up to the message size


class Damaged(Exception):
    pass


def check(seed, body):
    padded = body + b"\0" * (-len(body) % 8)
    h = ((seed ^ 0x53484D4A524E4C31) * K) & MASK
    for (w,) in struct.iter_unpack("<Q", padded):
        h = (((h << 23) | (h >> 41)) & MASK) ^ ((w * M) & MASK)
    h = ((h ^ (h >> 31)) * K) & MASK
    return (h ^ (h >> 29)) | 1


def part_path(base, part):
    return base if part == 0 else f"{base}.{part}"


def regular(path):
    """Whether path is a regular file (reading a FIFO would hang); raises
    OSError (FileNotFoundError if there is nothing there)."""
    return stat.S_ISREG(os.stat(path).st_mode)


def text(body, what, off):
    try:
        return body.decode()
    except UnicodeDecodeError:
        raise Damaged(f"record at offset {off}: the {what} is not UTF-8")


def header(data, magic):
    """(version, part, id, first record offset), or None."""
    if len(data) < 16:
        return None
    m, version, part = struct.unpack_from("<QII", data, 0)
    if m != magic:
        return None
    if version == 1 and magic == MAGIC:
        return (1, 0, 0, 16)
    if version == 2 and len(data) >= 32:
        (rid,) = struct.unpack_from("<Q", data, 16)
        return (2, part, rid, 32)
    return None


def frames(data, off):
    """(offset, type, body) of each whole record from off; stops at a cut
    record, raises Damaged at a bad check."""
    while off + 8 <= len(data):
        ty, length = struct.unpack_from("<II", data, off)
        if length > 32 + (1 << 24):
            raise Damaged(f"record at offset {off}: body of {length} bytes")
        padded = length + (-length % 8)
        if off + 16 + padded > len(data):
            return
        body = bytes(data[off + 8 : off + 8 + length])
        (stored,) = struct.unpack_from("<Q", data, off + 8 + padded)
        pad = bytes(data[off + 8 + length : off + 8 + padded])
        if stored != check(ty | (length << 32), body) or pad.strip(b"\0"):
            raise Damaged(f"record at offset {off}: check")
        yield off, ty, body
        off += 16 + padded


def parse(version, off, ty, body, buses):
    """One record as a tuple; buses (a list of (kind, size)) grows."""
    if ty == 1 and version == 1 and len(body) >= 16:
        bus, kind, size, _ = struct.unpack_from("<IIII", body, 0)
        if bus != len(buses) or kind != 1:
            raise Damaged(f"record at offset {off}: bus {bus} kind {kind}")
        buses.append((kind, size))
        return ("bus", bus, kind, size, 0, 0, 0, "-", text(body[16:], "bus name", off))
    if ty == 1 and version == 2 and len(body) >= 56:
        bus, kind, size, flags, slots, blocks = struct.unpack_from("<IIIIQQ", body, 0)
        tsize, talign, thash, tlen, nlen = struct.unpack_from("<IIQII", body, 32)
        if bus != len(buses) or not 1 <= kind <= 5 or size > 1 << 24:
            raise Damaged(f"record at offset {off}: bus {bus} kind {kind}")
        if tlen > 256 or nlen > 4096 or 56 + tlen + nlen != len(body):
            raise Damaged(f"record at offset {off}: names")
        tname = text(body[56 : 56 + tlen], "message type name", off)
        name = text(body[56 + tlen :], "bus name", off)
        buses.append((kind, size))
        typ = f"{tsize}:{talign}:{thash:x}:{tname}"
        return ("bus", bus, kind, size, slots, blocks, flags & 1, typ, name)
    if ty == 2 and len(body) >= 32:
        bus, _, seq, mono, wall = struct.unpack_from("<IIQQQ", body, 0)
        if bus >= len(buses):
            raise Damaged(f"record at offset {off}: bus {bus}")
        kind, size = buses[bus]
        n = len(body) - 32
        if n > size or (kind not in VARIABLE and n != size):
            raise Damaged(f"record at offset {off}: payload of {n} bytes")
        return ("message", bus, seq, mono, wall, body[32:])
    if ty == 3 and len(body) == 24:
        bus, _, first, count = struct.unpack_from("<IIQQ", body, 0)
        if bus >= len(buses) or count == 0:
            raise Damaged(f"record at offset {off}: gap")
        return ("gap", bus, first, count)
    raise Damaged(f"record at offset {off}: type {ty}, {len(body)} bytes")


def read_index(path, part, rid):
    """([(bus, offset)], [(offset, mono_below, bus, seq_below)]) or None."""
    try:
        if not regular(path + ".idx"):
            return None
        with open(path + ".idx", "rb") as f:
            data = f.read()
    except OSError:
        return None
    h = header(data, INDEX_MAGIC)
    if h is None or h[0] != 2 or h[1:3] != (part, rid):
        return None
    buses, positions = [], []
    try:
        for _, ty, body in frames(data, 32):
            if ty == 1 and len(body) == 16:
                bus, _, offset = struct.unpack_from("<IIQ", body, 0)
                buses.append((bus, offset))
            elif ty == 2 and len(body) == 32:
                offset, mono, bus, _, seq = struct.unpack_from("<QQIIQ", body, 0)
                positions.append((offset, mono, bus, seq))
            else:
                break
    except Damaged:
        pass  # what checked before it stands
    return buses, positions


class Part:
    def __init__(self, path):
        self.path = path
        # Mapped, not read: a seek touches only the pages it reads.
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            self.data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        self.head = header(self.data, MAGIC)


def records_from(part, off, buses):
    """Records of one part from off (a record start), buses declared."""
    for o, ty, body in frames(part.data, off):
        yield parse(part.head[0], o, ty, body, buses)


def start_by_index(part, before):
    """(offset, buses, bus lines) to start reading this part at, or None."""
    version, number, rid, _ = part.head
    if version != 2:
        return None
    idx = read_index(part.path, number, rid)
    if idx is None:
        return None
    bus_entries, positions = idx
    chosen = [p for p in positions if before(p)]
    if not chosen:
        return None
    pos = chosen[-1]
    buses, lines = [], []
    try:
        for bus, offset in bus_entries:
            if offset >= pos[0]:
                break
            if bus != len(buses):
                return None
            first = next(records_from(part, offset, buses), None)
            if first is None or first[0] != "bus" or first[1] != bus:
                return None
            lines.append(first)
        first = next(records_from(part, pos[0], list(buses)), None)
    except Damaged:
        return None
    if first is None or first[0] == "bus":
        return None
    return pos[0], buses, lines


def look(path, number, rid):
    """(Part, None) if path is part `number` of the recording `rid`,
    (None, None) if there is no file there, (None, why) if it is not that
    part."""
    try:
        if not regular(path):
            return None, f"{path}: not a regular file"
        part = Part(path)
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, f"{path}: {e.strerror}"
    if len(part.data) < 32:
        return None, f"{path}: the file is {len(part.data)} bytes, a recording's header is 32"
    if part.head is None or part.head[:3] != (2, number, rid):
        return None, f"{path}: not part {number} of recording {rid:#018x}"
    return part, None


def read_all(base, target=None):
    """Lines of the recording at base and its parts (from a seek target:
    ("time", t) or ("seq", bus, s))."""
    if not regular(base):
        raise SystemExit(f"{base}: not a regular file")
    first = Part(base)
    if first.head is None:
        raise SystemExit(f"{base}: not a shmbus recording")
    parts = [first]
    # A later part given by its own name is read alone, and so is a
    # version 1 file.
    while first.head[1] == 0 and first.head[0] == 2:
        k = len(parts)
        part, why = look(part_path(base, k), k, first.head[2])
        if part is not None:
            parts.append(part)
            continue
        # Not a part (a recorder killed as it made it, or another file):
        # the end, unless the next file is one (then a part was lost).
        if why is not None and look(part_path(base, k + 1), k + 1, first.head[2])[0]:
            raise SystemExit(why)
        break
    start_part, start_off, start_buses, start_lines = 0, parts[0].head[3], [], []
    if target is not None:
        if target[0] == "time":
            before = lambda p: p[1] <= target[1]
        else:
            before = lambda p: p[2] == target[1] and p[3] <= target[2]
        for k in range(len(parts) - 1, -1, -1):
            found = start_by_index(parts[k], before)
            if found:
                start_part, (start_off, start_buses, start_lines) = k, found
                break
    # The buses declared before the start (the index gave them) first.
    known = list(start_lines)  # bus lines, by id
    lines = list(start_lines)
    seeking = target is not None
    for k in range(start_part, len(parts)):
        part = parts[k]
        buses = list(start_buses) if k == start_part else []
        off = start_off if k == start_part else part.head[3]
        for r in named(k, part, records_from(part, off, buses)):
            if r[0] == "bus":
                if r[1] < len(known):
                    if known[r[1]] != r:
                        raise Damaged(f"{part.path}: bus {r[1]} differs from the first part's")
                    continue
                known.append(r)
                lines.append(r)
                continue
            if seeking:
                if target[0] == "time":
                    hit = r[0] == "message" and r[3] >= target[1]
                elif r[0] == "message":
                    hit = r[1] == target[1] and r[2] >= target[2]
                else:
                    hit = r[1] == target[1] and r[2] + r[3] > target[2]
                if not hit:
                    continue
                seeking = False
            lines.append(r)
    return lines


def named(k, part, records):
    """records, a damaged one's error naming its part's file after the
    first."""
    try:
        yield from records
    except Damaged as e:
        if k == 0:
            raise
        raise Damaged(f"{part.path}: {e}") from None


def show(r):
    if r[0] == "bus":
        return " ".join(str(x) for x in r)
    if r[0] == "message":
        return f"message {r[1]} {r[2]} {r[3]} {r[4]} {r[5].hex()}"
    return f"gap {r[1]} {r[2]} {r[3]}"


def main(argv):
    if len(argv) == 2:
        target = None
    elif len(argv) == 4 and argv[2] == "--seek-time":
        target = ("time", int(argv[3]))
    elif len(argv) == 5 and argv[2] == "--seek-seq":
        target = ("seq", int(argv[3]), int(argv[4]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        lines = read_all(argv[1], target)
    except Damaged as e:
        print(e, file=sys.stderr)
        return 1
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2
    except OSError as e:
        print(e, file=sys.stderr)
        return 2
    print("\n".join(show(r) for r in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
