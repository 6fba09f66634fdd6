#!/usr/bin/env python3
"""Reads a shmbus recording (docs/RECORDING.md), written from that page
alone, with Python's standard library only. Prints one line per record:

    bus ID KIND MSG_SIZE NAME
    message BUS SEQ MONO_NS WALL_NS PAYLOAD_HEX
    gap BUS FIRST COUNT

and ends at the end of the file or at a record cut short by it (a
recorder killed mid-write). A damaged record is one line on stderr naming
its offset, exit 1; a file that is not a recording, exit 2.

    python3 tools/read_recording.py FILE

crates/shmbus-cli/tests/record.rs compares its output with the Rust
reader's.
"""
import struct
import sys

MASK = (1 << 64) - 1
K = 0x9E3779B97F4A7C15
M = 0xBF58476D1CE4E5B9
MAGIC = 0x00434552424D4853


def check(seed, body):
    padded = body + b"\0" * (-len(body) % 8)
    h = ((seed ^ 0x53484D4A524E4C31) * K) & MASK
    for (w,) in struct.iter_unpack("<Q", padded):
        h = (((h << 23) | (h >> 41)) & MASK) ^ ((w * M) & MASK)
    h = ((h ^ (h >> 31)) * K) & MASK
    return (h ^ (h >> 29)) | 1


def main(path):
    data = open(path, "rb").read()
    if len(data) < 16:
        print(f"{path}: {len(data)} bytes, a recording's header is 16", file=sys.stderr)
        return 2
    magic, version, _ = struct.unpack_from("<QII", data, 0)
    if magic != MAGIC or version != 1:
        print(f"{path}: not a version 1 recording", file=sys.stderr)
        return 2
    sizes = []
    off = 16
    out = []
    while off + 8 <= len(data):
        ty, length = struct.unpack_from("<II", data, off)
        padded = length + (-length % 8)
        if length > 32 + (1 << 24):
            print(f"record at offset {off}: body of {length} bytes", file=sys.stderr)
            return 1
        if off + 16 + padded > len(data):
            break  # cut short: the end
        body = data[off + 8 : off + 8 + length]
        (stored,) = struct.unpack_from("<Q", data, off + 8 + padded)
        pad = data[off + 8 + length : off + 8 + padded]
        if stored != check(ty | (length << 32), body) or pad.strip(b"\0"):
            print(f"record at offset {off}: check", file=sys.stderr)
            return 1
        if ty == 1 and length >= 16:
            bus, kind, size, _ = struct.unpack_from("<IIII", body, 0)
            if bus != len(sizes):
                print(f"record at offset {off}: bus id {bus}", file=sys.stderr)
                return 1
            sizes.append(size)
            out.append(f"bus {bus} {kind} {size} {body[16:].decode()}")
        elif ty == 2 and length >= 32:
            bus, _, seq, mono, wall = struct.unpack_from("<IIQQQ", body, 0)
            if bus >= len(sizes) or length != 32 + sizes[bus]:
                print(f"record at offset {off}: bus {bus}", file=sys.stderr)
                return 1
            out.append(f"message {bus} {seq} {mono} {wall} {body[32:].hex()}")
        elif ty == 3 and length == 24:
            bus, _, first, count = struct.unpack_from("<IIQQ", body, 0)
            if bus >= len(sizes) or count == 0:
                print(f"record at offset {off}: gap", file=sys.stderr)
                return 1
            out.append(f"gap {bus} {first} {count}")
        else:
            print(f"record at offset {off}: type {ty}, {length} bytes", file=sys.stderr)
            return 1
        off += 16 + padded
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
