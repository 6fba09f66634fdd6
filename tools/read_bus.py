#!/usr/bin/env python3
"""Read a shmbus broadcast segment, written from docs/LAYOUT.md alone
(and show a stream's header and cursors).

    python3 tools/read_bus.py PATH [--from oldest|latest|next|SEQ] [--count N]
                                   [--timeout SECS] [--hex] [--quiet]
    python3 tools/read_bus.py PATH --json
    python3 tools/read_bus.py PATH --slots
    python3 tools/read_bus.py PATH --blocks

PATH is a bus name (a bare name means /dev/shm/NAME) or a path (anything
containing '/'), as in LAYOUT.md section 2.

The tool opens the file read-only (O_RDONLY|O_NOFOLLOW|O_NONBLOCK, so a FIFO
is refused, never waited on), maps it PROT_READ, validates the header as in
LAYOUT.md section 9 and prints the header. Then it reads messages with the
seqlock reader protocol of section 12, one line per message:

    SEQ<TAB>PAYLOAD          payload as text (trailing NULs trimmed) if it is
                             printable UTF-8, otherwise hex (always hex with --hex)
    LAGGED<TAB>skipped=N<TAB>resume=SEQ
                             the publisher lapped this reader (section 12.4)

Header lines start with '# ' (suppress them with --quiet). With --json it
prints the header and live control-page state as one JSON object and exits.
The state includes the raw futex word ("futex_word") and its bit 0
("sleepers_flag": a subscriber may be asleep, LAYOUT.md sections 5 and 13),
and the gate of lossless subscribers (section 13.1): max_gating, evict_ns,
gate_gen, room_word, the gating entries, and per subscriber line its
contract (lossy, lossless or evicted), evictions and blocked_ns.

It is an inspector like `shmbus stat`. It writes nothing to the segment,
takes no lock, never sleeps on the futex (it polls), and does not register
as a subscriber. On a many-publisher bus (LAYOUT.md section 18) it does
not decode abandoned stamps: it stops at one as at an empty slot.

Pool buses (header flag bit 3, LAYOUT.md section 19). The header lines
(and --json) add the pool's geometry (pool_blocks, pool_block_size and the
offsets of the state words, the blocks, the active mask and the hold
lines), the message type its blocks carry (pool_type_name, pool_type_hash,
pool_msg_size, pool_msg_align, as the creator recorded it: `bytes` for a
raw pool, a hash of 0 for a pool made before the header recorded one;
section 19.1), a census of the blocks (free, loaned, on_ring, held, reclaimable,
corrupt; the meanings of the Rust `Census`) and every active registry
entry with its eight hold words; --json also lists every block's state
word decoded (pool_block_states), and --blocks prints one line per block:

    block B<TAB>offset OFF<TAB>state WORD<TAB>WHAT

WHAT being free, loaned pid P, published seq S (on_ring | held by entries
E | reclaimable), or corrupt. A message of a pool bus is the block its
descriptor names, printed as above. Taking no hold, the tool reads the
block between two loads of its state word and keeps the copy only if both
say published(SEQ); otherwise the block was reclaimed and it prints a lag
of one (LAGGED skipped=1), as a PoolSubscriber counts it. With --slots a
pool bus's slot lines end with the descriptor decoded (block B len N).

Blackboards (kind 3, LAYOUT.md section 21). The header lines (and --json)
add the key type (key_type, key_size, key_align, key_hash), the table's
entries, keys (the writer's count), updates (its version) and mid_write
(entries whose stamp is odd), with the writer's pid and liveness, and
many_writers (header flag bit 1) with unblock_ns (its control word). --get
KEYHEX looks a key up as section 21.4 says (the hash, the probe, each
entry read between two loads of its stamp, at most 320 tries, an entry
mid-write passed if its tag is 0 or its key bytes are another key's) and
prints VERSION<TAB>VALUEHEX; --entries prints every used entry's version, tag,
key and value.

Services (kind 4: request-response, LAYOUT.md section 25). The header lines (and --json) add the service's
shape (clients, slots per client, servers, the largest request and
response and their types), the work bell and summary bits, each server
entry ever used (pid, alive by its lock on byte 64 + entry, taken,
answered, late, refused, latency sum, mean and max), each client entry
ever used (pid, alive by its lock on byte 128 + entry, posted bits,
bell, calls, timeouts, late, gone, full, and its calls in flight) and
every call slot that is not FREE (client, slot, phase, generation,
server, request and response lengths); --calls prints one line per such
slot:

    client C<TAB>slot K<TAB>PHASE<TAB>generation G<TAB>server S

Streams (kind 2, LAYOUT.md section 20). The header lines (and --json) are
a stream's: its record type (type_name `stream` for raw records, else the
typed stream's record type, with msg_align), the largest record
(msg_size), and its cursors read as an inspector must (tail, head, fill,
corrupt) with the producer's and consumer's pids and liveness. Its
records are not read: the tool prints the header and exits.

Memory-model caveat (LAYOUT.md section 23). Python has no atomics and no
fences. Every 64-bit word (stamps, cursor, epoch) is loaded through a
memoryview cast to 'Q'. In CPython that is one aligned 8-byte memcpy, in
practice a single untorn load on x86-64 and aarch64. The payload is copied
and then the stamp is loaded again, and the copy is thrown away unless the
stamp is unchanged. On x86-64 loads are not reordered with each other (TSO),
so the re-check is sound in practice. On weakly ordered CPUs the missing
acquire fence makes a torn copy possible, though very unlikely. Use a C or
Rust reader where that matters.

Standard library only. Exit status: 0 on success, 2 if the bus cannot be
opened or fails validation (the error is named as in the Rust OpenError),
1 on bad usage.
"""

import argparse
import errno
import fcntl
import json
import mmap
import os
import stat as statmod
import struct
import sys
import time

# --- constants (LAYOUT.md sections 4, 5, 14) -------------------------------
MAGIC = int.from_bytes(b"SHMBUS\0\0", "little")
MAGIC_BUILDING = int.from_bytes(b"SHMBUS~\0", "little")
VERSION = 2
KIND_BROADCAST = 1
KIND_STREAM = 2
# Section 20: a stream's ring size and records.
MIN_STREAM, MAX_STREAM = 64, 1 << 32
STREAM_RECORD_ALIGN = 8
S_TAIL, S_HEAD, S_PRODUCER_PID, S_CONSUMER_PID = 0, 64, 128, 192
LOCK_CONSUMER = 2
KIND_BLACKBOARD = 3
# Section 25: a blackboard's key type, control words and entries.
H_KEY_HASH, H_KEY_SIZE, H_KEY_ALIGN, H_KEY_NAME = 536, 544, 548, 552
B_VERSION, B_KEYS, B_WRITER_PID, B_BELL = 0, 8, 128, 256
B_UNBLOCK_NS = 192  # many-writer tables only (section 21.2)
FLAG_MULTI_WRITER = 2  # header flag bit 1 on a blackboard (section 21.1)
MAX_KEYS, MAX_KEY_SIZE, MAX_VALUE_SIZE = 1 << 24, 1024, 1 << 20
TAG_EMPTY, TAG_LIVE, TAG_REMOVED = 0, 1, 2
BB_TRIES = 256 + 64  # a read's bounded tries of one entry (section 21.5)
KIND_SERVICE = 4
# Services: the header's shape words past the response type (which sits
# where a blackboard keeps its key type), the control area's bell, summary
# bits and lines, a call slot's words, and the state word's phases.
H_SV_SLOTS, H_SV_SERVERS = 616, 620
SV_WORK_BELL, SV_SUMMARY, SV_SERVERS = 0, 64, 128
SVS_PID, SVS_TAKEN, SVS_ANSWERED, SVS_LATE, SVS_REFUSED = 0, 8, 16, 24, 32
SVS_LATENCY_SUM, SVS_LATENCY_MAX = 40, 48
SVC_POSTED, SVC_BELL, SVC_PID = 0, 8, 12
SVC_CALLS, SVC_TIMEOUTS, SVC_LATE, SVC_GONE, SVC_FULL = 64, 72, 80, 88, 96
SV_CLIENT_BYTES = 128
SLOT_STATE, SLOT_REQUEST_LEN, SLOT_RESPONSE_LEN, SLOT_REQUEST = 0, 8, 12, 64
PHASES = {0: "free", 1: "posted", 2: "taken", 3: "done", 4: "cancelled", 5: "refused"}
PHASES_WITH_SERVER = ("taken", "done", "cancelled", "refused")
LOCK_SERVER, LOCK_CLIENT = 64, 128
MAX_CLIENTS, MAX_CALL_SLOTS, MAX_SERVERS, MAX_PAYLOAD = 256, 64, 64, 64 << 20
KINDS = {1: "broadcast", 2: "stream", 3: "blackboard", 4: "service"}
HEADER_END = 168
FLAG_JOURNALED = 1  # header flag bit 0 (LAYOUT.md section 4)
FLAG_MULTI_PUBLISHER = 2  # header flag bit 1 on a broadcast bus (section 4)
FLAG_POOL = 8  # header flag bit 3 (LAYOUT.md sections 4, 19)
FLAG_HUGE_PAGES = 4  # header flag bit 2 (LAYOUT.md section 4)
JOURNAL_PATH_LEN_OFF, JOURNAL_PATH_MAX = 168, 256
# Pool buses (LAYOUT.md section 19): two header words past the journal path.
H_POOL_BLOCKS, H_POOL_BLOCK_SIZE, H_POOL_PID_NS = 432, 440, 448
# The block message type (LAYOUT.md sections 4, 19.1).
H_POOL_TYPE_HASH, H_POOL_MSG_SIZE, H_POOL_MSG_ALIGN, H_POOL_TYPE_NAME = 456, 464, 468, 472
MAX_BLOCK_SIZE = 1 << 30
MAX_BLOCKS = 1 << 20
DESCRIPTOR_BYTES = 16
MAX_MSG_SIZE = 16 << 20
LINE = 64
STAMP_BYTES = 8
ISIZE_MAX = (1 << 63) - 1
M64 = (1 << 64) - 1

# Header: (offset, struct code, name), little-endian.
HEADER_FIELDS = [
    (8, "I", "version"),
    (12, "I", "kind"),
    (16, "I", "page_size"),
    (20, "I", "flags"),
    (24, "Q", "control_offset"),
    (32, "Q", "data_offset"),
    (40, "Q", "total_len"),
    (48, "Q", "capacity"),
    (56, "I", "slot_size"),
    (60, "I", "msg_size"),
    (64, "I", "msg_align"),
    (72, "Q", "type_hash"),
    (80, "Q", "first_seq"),
    (88, "I", "creator_pid"),
    (96, "Q", "created_ns"),
]
TYPE_NAME_OFF, TYPE_NAME_LEN = 104, 64

# Control page, relative to control_offset.
C_CURSOR = 0
C_EPOCH = 64
C_PUBLISHER_PID = 128
# 192: unblock_ns (u64) on a many-publisher bus; reserved on a
# single-publisher bus (formerly a count of sleepers). Not read here.
# Section 5 and 13.1, lossless subscribers (the gate): the eviction
# timeout, how many may gate, the gate's generation and room words, and
# the gating set (a bit per registry entry, four u64 words).
C_EVICT_NS = 200
C_MAX_GATING = 208
C_FUTEX = 256
FUTEX_SLEEPERS = 1  # bit 0 of the futex word: a subscriber may be asleep
C_GATE_GEN = 260
C_ROOM = 320
C_GATING = 480
GATING_WORDS = 4
C_REGISTRY = 1024
REGISTRY_SLOTS = 256
# Section 5.1: one line per registry entry, from control offset 4096.
C_SUBSCRIBERS = 4096
L_POSITION, L_SKIPPED, L_START, L_ACTIVE_NS, L_SEQ = 0, 8, 16, 24, 32
L_CONTRACT, L_EVICTIONS, L_BLOCKED_NS = 36, 40, 48
CONTRACT_LOSSLESS = 1
# Section 19, pool buses only: the active mask (a bit per registry entry,
# four u64 words) and one hold line per registry entry after the
# subscriber lines, each of HOLDS u64 words (0, or block + 1).
C_POOL_ACTIVE = 512
ACTIVE_WORDS = REGISTRY_SLOTS // 64
C_POOL_HOLDS = C_SUBSCRIBERS + LINE * REGISTRY_SLOTS
HOLDS = 8


def broadcast_control_len(page):
    """Section 3: a broadcast bus's control area, whole pages."""
    return round_up(C_SUBSCRIBERS + LINE * REGISTRY_SLOTS, page)


def pool_control_len(page):
    """Section 3: a pool bus's control area, with the hold lines."""
    return round_up(C_POOL_HOLDS + LINE * REGISTRY_SLOTS, page)


# Section 19: a block's state word.
def published(seq):
    return ((seq << 2) | 2) & M64


def age(word, head):
    """How many sequences before head the published word lies, mod 2^62."""
    return (((head << 2) - (word & ~3)) & M64) >> 2


def overwritten(word, head, cap):
    """Whether the published word's descriptor has left the ring: more than
    cap sequences behind head. At or past head (an age of 2^61 or more) it
    has not: another publisher may have claimed it after head was loaded."""
    return cap < age(word, head) < 1 << 61

# OFD lock bytes.
LOCK_PUBLISHER = 0
LOCK_ATTACHED = 1
LOCK_REGISTRY = 64

F_OFD_GETLK = getattr(fcntl, "F_OFD_GETLK", 36)
FLOCK = "hh4xqqi4x"  # struct flock on x86-64 / aarch64 Linux, 32 bytes


class OpenError(Exception):
    """An error named after the Rust OpenError variant it mirrors."""

    def __init__(self, kind, detail):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind


def resolve(name):
    """Section 2: a bare name lives under /dev/shm; a name with '/' is a path."""
    if name == "":
        raise OpenError("Name", "bus name is empty")
    if "\0" in name:
        raise OpenError("Name", "bus name contains a NUL byte")
    if "/" in name:
        return name
    if name in (".", ".."):
        raise OpenError("Name", f"bus name {name!r} is reserved")
    if len(name.encode()) > 255:
        raise OpenError("Name", "bus name is longer than 255 bytes")
    return "/dev/shm/" + name


def round_up(n, to):
    return (n + to - 1) // to * to


def s64(x):
    """Signed wrapping interpretation of a u64 (section 1: ahead(a, b))."""
    x &= M64
    return x - (1 << 64) if x >> 63 else x


def fnv1a(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x00000100000001B3) & M64
    return h


class Bus:
    """A validated, read-only mapping of one broadcast segment."""

    def __init__(self, path, init_timeout=1.0):
        self.path = path
        fd, length = self._open_initialized(path, init_timeout)
        self.fd = fd
        self.file_len = length
        # Section 9 step 6.
        if length < HEADER_END:
            raise OpenError("Truncated", f"file is {length} bytes, header needs {HEADER_END}")
        # Step 7: map exactly the fstat length, read-only, shared.
        try:
            self.mm = mmap.mmap(fd, length, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
        except OSError as e:
            raise OpenError("Io", f"mmap: {e}")
        self.buf = memoryview(self.mm)
        # 64-bit word view for single-load reads of shared words.
        self.words = self.buf[: length - length % 8].cast("Q")
        self.swap = sys.byteorder != "little"
        self.stream = False
        self.bb = None
        self.sv = None
        self._read_header()
        self._validate()

    # -- section 9 steps 2-5 -------------------------------------------------
    @staticmethod
    def _open_initialized(path, init_timeout):
        start = time.monotonic()
        while True:
            try:
                # O_NONBLOCK: opening a FIFO must not wait for a writer.
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
            except FileNotFoundError:
                raise OpenError("NotFound", f"{path}: no such bus")
            except PermissionError:
                raise OpenError("PermissionDenied", f"{path}: permission denied")
            except OSError as e:
                if e.errno == errno.ELOOP:
                    raise OpenError("Symlink", f"{path}: is a symbolic link; refusing to follow it")
                if e.errno in (errno.EISDIR, errno.ENXIO):
                    raise OpenError("NotAFile", f"{path}: not a regular file")
                raise OpenError("Io", f"open: {e}")
            st = os.fstat(fd)
            if not statmod.S_ISREG(st.st_mode):
                os.close(fd)
                raise OpenError("NotAFile", f"{path}: not a regular file")
            length = st.st_size
            if 1 <= length < 8:
                # Never a bus being built (create sets the length first).
                os.close(fd)
                raise OpenError(
                    "Truncated", f"file is {length} bytes, header needs {HEADER_END}"
                )
            magic = 0
            if length >= 8:
                raw = os.pread(fd, 8, 0)
                if len(raw) == 8:
                    magic = int.from_bytes(raw, "little")
            if magic == MAGIC:
                return fd, length
            os.close(fd)
            if magic not in (0, MAGIC_BUILDING):
                raise OpenError(
                    "BadMagic",
                    f"not a shmbus segment: magic is {magic:#018x}, expected {MAGIC:#018x}",
                )
            waited = time.monotonic() - start
            if waited >= init_timeout:
                raise OpenError(
                    "NotInitialized",
                    f"{path}: not initialized (no header after waiting {waited:.3f}s); "
                    "its creator may have died",
                )
            time.sleep(0.001)

    # -- shared-word access ----------------------------------------------------
    def u64(self, off):
        """One 8-byte load of an aligned shared word (the Acquire/Relaxed
        loads of the protocol; see the module docstring for the caveat)."""
        v = self.words[off >> 3]
        if self.swap:
            v = int.from_bytes(v.to_bytes(8, sys.byteorder), "little")
        return v

    def u32(self, off):
        return struct.unpack_from("<I", self.buf, off)[0]

    # -- section 9 steps 8-11 and 14 --------------------------------------------
    def _read_header(self):
        magic = self.u64(0)  # Acquire in Rust: read first.
        if magic != MAGIC:
            raise OpenError(
                "BadMagic", f"not a shmbus segment: magic is {magic:#018x}, expected {MAGIC:#018x}"
            )
        h = {"magic": magic}
        for off, code, name in HEADER_FIELDS:
            h[name] = struct.unpack_from("<" + code, self.buf, off)[0]
        raw = bytes(self.buf[TYPE_NAME_OFF : TYPE_NAME_OFF + TYPE_NAME_LEN])
        h["type_name"] = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
        self.h = h

    def _validate(self):
        h = self.h
        if h["version"] != VERSION:
            raise OpenError("VersionMismatch", f"layout version {h['version']}, expected {VERSION}")
        page = h["page_size"]
        local = mmap.PAGESIZE
        if page == 0 or page & (page - 1) or page % local:
            raise OpenError(
                "InvalidGeometry", f"page size {page} is not a multiple of this system's {local}"
            )
        if h["control_offset"] != page:
            raise OpenError(
                "InvalidGeometry", f"control page at {h['control_offset']}, expected {page}"
            )
        if h["data_offset"] < 2 * page or h["data_offset"] % page:
            raise OpenError(
                "InvalidGeometry",
                f"data pages at {h['data_offset']}, expected a multiple of {page} from {2 * page}",
            )
        # Every kind: the header and control pages lie inside the segment.
        if h["total_len"] < h["data_offset"]:
            raise OpenError(
                "InvalidGeometry",
                f"total length {h['total_len']} does not reach the data pages at "
                f"{h['data_offset']}",
            )
        if h["total_len"] > ISIZE_MAX:
            raise OpenError("InvalidGeometry", f"total length {h['total_len']} is too large")
        if self.file_len < h["total_len"]:
            raise OpenError(
                "Truncated",
                f"file is {self.file_len} bytes, header needs {h['total_len']}",
            )
        # A pool bus's pool (section 9 step 10.7), from two words past byte
        # 168: only now that the header page is known to be in the file.
        self.pool = self._read_pool() if h["flags"] & FLAG_POOL else None
        # Step 11: a journaled bus's path length (the path itself is not read
        # here). Past byte 168, so only now that the header page is known to
        # be in the file.
        if h["flags"] & FLAG_JOURNALED:
            n = self.u32(JOURNAL_PATH_LEN_OFF)
            if n == 0 or n > JOURNAL_PATH_MAX:
                raise OpenError(
                    "InvalidGeometry",
                    f"journal path length {n} is outside 1..={JOURNAL_PATH_MAX}",
                )
        # Step 14: a stream's own geometry (section 20); this reader shows
        # its header and cursors, never its records.
        if h["kind"] == KIND_STREAM:
            self._validate_stream()
            return
        if h["kind"] == KIND_BLACKBOARD:
            self._validate_blackboard()
            return
        if h["kind"] == KIND_SERVICE:
            self._validate_service()
            return
        # Nothing above touched a byte past the header page, and nothing
        # below runs for another kind.
        if h["kind"] != KIND_BROADCAST:
            found = KINDS.get(h["kind"], f"unknown ({h['kind']})")
            raise OpenError("WrongKind", f"segment kind is {found}, expected broadcast")
        # The slot geometry, checked once the kind is known to be broadcast.
        want = page + (pool_control_len(page) if self.pool else broadcast_control_len(page))
        if h["data_offset"] != want:
            raise OpenError(
                "InvalidGeometry",
                f"data pages at {h['data_offset']}, expected {want} for a broadcast",
            )
        cap = h["capacity"]
        msg = h["msg_size"]
        slot = h["slot_size"]
        if cap == 0 or cap & (cap - 1):
            raise OpenError("InvalidGeometry", f"capacity {cap} is not a power of two")
        if msg == 0 or msg > MAX_MSG_SIZE:
            raise OpenError("InvalidGeometry", f"message size {msg} outside 1..={MAX_MSG_SIZE}")
        if slot < STAMP_BYTES + round_up(msg, 8) or slot % LINE:
            raise OpenError(
                "InvalidGeometry",
                f"slot size {slot} cannot hold a {msg}-byte message in 64-byte lines",
            )
        end = h["data_offset"] + cap * slot  # Python ints do not overflow;
        if end > M64 or end > h["total_len"]:  # > 2^64-1 is the Rust overflow.
            raise OpenError(
                "InvalidGeometry",
                f"{cap} slots of {slot} bytes do not fit in {h['total_len']} bytes",
            )
        if self.pool and msg != DESCRIPTOR_BYTES:
            raise OpenError(
                "InvalidGeometry",
                f"a pool bus's slots carry {DESCRIPTOR_BYTES}-byte descriptors, "
                f"not {msg}-byte messages",
            )
        # Derived geometry (section 6).
        self.cap = cap
        self.mask = cap - 1
        self.slot_size = slot
        self.msg_size = msg
        self.data = h["data_offset"]
        self.ctl = h["control_offset"]
        self.first = h["first_seq"]

    def _validate_stream(self):
        """Section 20's checks, after the kind (section 9 step 14.2)."""
        h = self.h
        page = h["page_size"]
        if h["data_offset"] != h["control_offset"] + page:
            raise OpenError(
                "InvalidGeometry",
                f"data pages at {h['data_offset']}, expected {h['control_offset'] + page} "
                "for kind stream",
            )
        cap = h["capacity"]
        if not MIN_STREAM <= cap <= MAX_STREAM or cap & (cap - 1):
            raise OpenError(
                "InvalidGeometry",
                f"stream capacity {cap} is not a power of two in {MIN_STREAM}..={MAX_STREAM}",
            )
        if h["msg_size"] != cap // 2 - 8:
            raise OpenError(
                "InvalidGeometry",
                f"largest record {h['msg_size']} should be {cap // 2 - 8} for a {cap}-byte stream",
            )
        align = h["msg_align"]
        if align == 0 or align & (align - 1) or align > STREAM_RECORD_ALIGN:
            raise OpenError(
                "InvalidGeometry",
                f"record alignment {align} is not a power of two up to {STREAM_RECORD_ALIGN}",
            )
        if h["data_offset"] + cap > h["total_len"]:
            raise OpenError(
                "InvalidGeometry", f"{cap} bytes of ring do not fit in {h['total_len']} bytes"
            )
        self.stream = True
        self.cap = cap
        self.ctl = h["control_offset"]
        self.data = h["data_offset"]

    def _validate_blackboard(self):
        """Section 25.1's checks, after the kind."""
        h = self.h
        page = h["page_size"]
        if h["data_offset"] != h["control_offset"] + page:
            raise OpenError(
                "InvalidGeometry",
                f"data pages at {h['data_offset']}, expected {h['control_offset'] + page} "
                "for kind blackboard",
            )
        keys = h["capacity"]
        key_size = self.u32(H_KEY_SIZE)
        value_size = h["msg_size"]
        if not 1 <= keys <= MAX_KEYS:
            raise OpenError("InvalidGeometry", f"a blackboard of {keys} keys: it holds 1..={MAX_KEYS}")
        if not 1 <= key_size <= MAX_KEY_SIZE or not 1 <= value_size <= MAX_VALUE_SIZE:
            raise OpenError(
                "InvalidGeometry",
                f"a blackboard of {key_size}-byte keys and {value_size}-byte values",
            )
        k, v = round_up(key_size, 8), round_up(value_size, 8)
        entry = round_up(16 + k + v, LINE)
        if h["slot_size"] != entry:
            raise OpenError("InvalidGeometry", f"entry size {h['slot_size']} should be {entry}")
        if h["flags"] & (FLAG_JOURNALED | FLAG_POOL):
            raise OpenError("InvalidGeometry", f"a blackboard flagged {h['flags']:#x}")
        entries = 1
        while entries < 2 * keys:
            entries *= 2
        if h["data_offset"] + entries * entry > h["total_len"]:
            raise OpenError(
                "InvalidGeometry",
                f"{entries} entries of {entry} bytes do not fit in {h['total_len']} bytes",
            )
        raw = bytes(self.buf[H_KEY_NAME : H_KEY_NAME + TYPE_NAME_LEN])
        self.bb = {
            "keys": keys,
            "entries": entries,
            "entry_size": entry,
            "key_size": key_size,
            "value_size": value_size,
            "value_offset": 16 + k,
            "key_align": self.u32(H_KEY_ALIGN),
            "key_hash": self.u64(H_KEY_HASH),
            "key_type": raw.split(b"\0", 1)[0].decode("utf-8", "replace"),
        }
        self.ctl = h["control_offset"]
        self.data = h["data_offset"]

    def _validate_service(self):
        """A service's shape, checked as the Rust `validate_kind` does."""
        h = self.h
        page = h["page_size"]
        clients, request = h["capacity"], h["msg_size"]
        slots, servers = self.u32(H_SV_SLOTS), self.u32(H_SV_SERVERS)
        response = self.u32(H_KEY_SIZE)
        for what, found, most in (
            ("clients", clients, MAX_CLIENTS),
            ("slots per client", slots, MAX_CALL_SLOTS),
            ("servers", servers, MAX_SERVERS),
            ("request bytes", request, MAX_PAYLOAD),
            ("response bytes", response, MAX_PAYLOAD),
        ):
            if not 1 <= found <= most:
                raise OpenError(
                    "InvalidGeometry", f"a service of {found} {what}: it takes 1..={most}"
                )
        clients_at = SV_SERVERS + servers * LINE
        control = round_up(clients_at + clients * SV_CLIENT_BYTES, page)
        if h["data_offset"] != h["control_offset"] + control:
            raise OpenError(
                "InvalidGeometry",
                f"data pages at {h['data_offset']}, expected {h['control_offset'] + control} "
                "for kind service",
            )
        response_at = SLOT_REQUEST + round_up(request, LINE)
        slot = response_at + round_up(response, LINE)
        if h["slot_size"] != slot:
            raise OpenError(
                "InvalidGeometry", f"call slot size {h['slot_size']} should be {slot}"
            )
        if h["flags"] & ~FLAG_HUGE_PAGES:
            raise OpenError("InvalidGeometry", f"a service flagged {h['flags']:#x}")
        if h["data_offset"] + clients * slots * slot > h["total_len"]:
            raise OpenError(
                "InvalidGeometry",
                f"{clients * slots} call slots of {slot} bytes do not fit in "
                f"{h['total_len']} bytes",
            )
        raw = bytes(self.buf[H_KEY_NAME : H_KEY_NAME + TYPE_NAME_LEN])
        self.sv = {
            "clients": clients,
            "slots": slots,
            "servers": servers,
            "request_size": request,
            "response_size": response,
            "response_align": self.u32(H_KEY_ALIGN),
            "response_hash": self.u64(H_KEY_HASH),
            "response_type": raw.split(b"\0", 1)[0].decode("utf-8", "replace"),
            "clients_at": clients_at,
            "slot_size": slot,
        }
        self.ctl = h["control_offset"]
        self.data = h["data_offset"]

    def sv_calls(self):
        """Every call slot not FREE: its state word taken apart."""
        sv = self.sv
        calls = []
        for c in range(sv["clients"]):
            for k in range(sv["slots"]):
                at = self.data + (c * sv["slots"] + k) * sv["slot_size"]
                word = self.u64(at + SLOT_STATE)
                if word & 0xFF == 0:
                    continue
                phase = PHASES.get(word & 0xFF, "unknown")
                calls.append({
                    "client": c,
                    "slot": k,
                    "phase": phase,
                    "generation": word >> 32,
                    "server": (word >> 8) & 0xFF if phase in PHASES_WITH_SERVER else None,
                    "request_len": self.u32(at + SLOT_REQUEST_LEN),
                    "response_len": self.u32(at + SLOT_RESPONSE_LEN),
                })
        return calls

    def service_state(self):
        sv = self.sv
        servers = []
        for s in range(sv["servers"]):
            line = self.ctl + SV_SERVERS + s * LINE
            pid = self.u32(line + SVS_PID)
            if pid == 0:
                continue
            answered = self.u64(line + SVS_ANSWERED)
            total = self.u64(line + SVS_LATENCY_SUM)
            servers.append({
                "entry": s,
                "pid": pid,
                "alive": self.lock_held(LOCK_SERVER + s),
                "taken": self.u64(line + SVS_TAKEN),
                "answered": answered,
                "late": self.u64(line + SVS_LATE),
                "refused": self.u64(line + SVS_REFUSED),
                "latency_sum_ns": total,
                "mean_latency_ns": total // answered if answered else None,
                "max_latency_ns": self.u64(line + SVS_LATENCY_MAX),
            })
        calls = self.sv_calls()
        clients = []
        for c in range(sv["clients"]):
            entry = self.ctl + sv["clients_at"] + c * SV_CLIENT_BYTES
            pid = self.u32(entry + SVC_PID)
            if pid == 0:
                continue
            clients.append({
                "entry": c,
                "pid": pid,
                "alive": self.lock_held(LOCK_CLIENT + c),
                "posted_bits": f"{self.u64(entry + SVC_POSTED):#x}",
                "bell": self.u32(entry + SVC_BELL),
                "calls": self.u64(entry + SVC_CALLS),
                "timeouts": self.u64(entry + SVC_TIMEOUTS),
                "late": self.u64(entry + SVC_LATE),
                "gone": self.u64(entry + SVC_GONE),
                "full": self.u64(entry + SVC_FULL),
                "outstanding": [
                    {key: k[key] for key in ("slot", "phase", "generation", "server")}
                    for k in calls
                    if k["client"] == c
                ],
            })
        return {
            "clients": sv["clients"],
            "slots": sv["slots"],
            "servers": sv["servers"],
            "request_size": sv["request_size"],
            "request_type": self.h["type_name"],
            "request_align": self.h["msg_align"],
            "response_size": sv["response_size"],
            "response_type": sv["response_type"],
            "response_align": sv["response_align"],
            "response_hash": f"{sv['response_hash']:#018x}",
            "work_bell": self.u32(self.ctl + SV_WORK_BELL),
            "summary": [f"{self.u64(self.ctl + SV_SUMMARY + 8 * w):#x}" for w in range(4)],
            "answered": sum(s["answered"] for s in servers) & M64,
            "in_flight": len(calls),
            "live_servers": sum(1 for s in servers if s["alive"]),
            "live_clients": sum(1 for c in clients if c["alive"]),
            "attached": self.lock_held(LOCK_ATTACHED),
            "per_server": servers,
            "per_client": clients,
            "calls": calls,
        }

    def bb_entry(self, i, lookup=None):
        """Section 25.5, one entry read as a reader does: the stamp, the
        words under it, the stamp again, at most BB_TRIES times. Returns
        (stamp, tag, key, value), or (stamp, None, None, None) if no try
        saw the stamp even and unchanged. For a lookup of key `lookup`,
        None as soon as a try finds the stamp odd and the tag 0 or key
        bytes other than `lookup`: that entry cannot hold it (section
        25.4), and the lookup goes on past it."""
        bb = self.bb
        off = self.data + i * bb["entry_size"]
        ko, vo = off + 16, off + bb["value_offset"]
        for _ in range(BB_TRIES):
            s1 = self.u64(off)
            if s1 % 2 == 0:
                tag = self.u64(off + 8)
                key = bytes(self.buf[ko : ko + bb["key_size"]])
                value = bytes(self.buf[vo : vo + bb["value_size"]])
                if self.u64(off) == s1:
                    return s1, tag, key, value
            elif lookup is not None and (
                self.u64(off + 8) == TAG_EMPTY or bytes(self.buf[ko : ko + bb["key_size"]]) != lookup
            ):
                return None
            time.sleep(0)
        return self.u64(off), None, None, None

    def bb_hash(self, key):
        """Section 25.4: where a key's probe starts (before the mask)."""
        h = 0x243F6A8885A308D3
        padded = key + b"\0" * (-len(key) % 8)
        for j in range(0, len(padded), 8):
            w = int.from_bytes(padded[j : j + 8], "little")
            h = ((h ^ w) * 0x9E3779B97F4A7C15) & M64
            h ^= h >> 32
        return h

    def bb_get(self, key):
        """Section 25.4's lookup: (version, value), None if absent; raises
        OpenError-like RuntimeError for an entry that cannot be read."""
        bb = self.bb
        mask = bb["entries"] - 1
        home = self.bb_hash(key) & mask
        for n in range(bb["entries"]):
            i = (home + n) & mask
            read = self.bb_entry(i, lookup=key)
            if read is None:
                continue
            stamp, tag, k, value = read
            if tag is None:
                stuck = not self.lock_held(LOCK_PUBLISHER)
                raise RuntimeError(f"entry {i} {'stuck' if stuck else 'busy'} (stamp {stamp:#x})")
            if tag == TAG_EMPTY:
                return None
            if tag == TAG_LIVE and k == key:
                return stamp // 2, value
            if tag > TAG_REMOVED:
                raise RuntimeError(f"entry {i} has tag {tag}: a corrupt table")
        return None

    def blackboard_state(self):
        many = bool(self.h["flags"] & FLAG_MULTI_WRITER)
        mid_write = sum(
            1
            for i in range(self.bb["entries"])
            if self.u64(self.data + i * self.bb["entry_size"]) % 2
        )
        return {
            "keys": self.u64(self.ctl + B_KEYS),
            # The header's `capacity`, as `shmbus stat --json` names it.
            "max_keys": self.h["capacity"],
            "updates": self.u64(self.ctl + B_VERSION),
            "entries": self.bb["entries"],
            "mid_write": mid_write,
            "key_type": self.bb["key_type"],
            "key_size": self.bb["key_size"],
            "key_align": self.bb["key_align"],
            "key_hash": f"{self.bb['key_hash']:#018x}",
            "key_hash_matches_name": fnv1a(self.bb["key_type"].encode()) == self.bb["key_hash"],
            "value_type": self.h["type_name"],
            "value_size": self.h["msg_size"],
            "bell": self.u32(self.ctl + B_BELL),
            "writer_pid": self.u32(self.ctl + B_WRITER_PID),
            "writer_alive": self.lock_held(LOCK_PUBLISHER),
            "attached": self.lock_held(LOCK_ATTACHED),
            "many_writers": many,
            "unblock_ns": self.u64(self.ctl + B_UNBLOCK_NS) if many else None,
        }

    def stream_state(self):
        """Section 20, inspecting a live stream: HEAD, TAIL, HEAD again."""
        for _ in range(1000):
            head1 = self.u64(self.ctl + S_HEAD)
            tail = self.u64(self.ctl + S_TAIL)
            head2 = self.u64(self.ctl + S_HEAD)
            if head1 == head2:
                fill = (tail - head1) & M64
                corrupt = fill > self.cap
                break
        else:
            fill = min((tail - head1) & M64, self.cap)
            corrupt = (tail - head1) & M64 > self.cap + ((head2 - head1) & M64)
        producer_pid = self.u32(self.ctl + S_PRODUCER_PID)
        consumer_pid = self.u32(self.ctl + S_CONSUMER_PID)
        return {
            "tail": tail,
            "head": head2,
            "fill": None if corrupt else fill,
            "corrupt": corrupt,
            "producer_pid": producer_pid,
            "producer_alive": self.lock_held(LOCK_PUBLISHER),
            "consumer_pid": consumer_pid,
            "consumer_alive": self.lock_held(LOCK_CONSUMER),
        }

    def _read_pool(self):
        """Section 9 step 10.7 (`read_pool`): the pool lies after the slots,
        rounded up to a page, and inside total_len."""
        h = self.h
        page = h["page_size"]
        blocks = self.u64(H_POOL_BLOCKS)
        size = self.u64(H_POOL_BLOCK_SIZE)
        slots_end = round_up(h["capacity"] * h["slot_size"], page) + h["data_offset"]
        if slots_end > M64:
            raise OpenError(
                "InvalidGeometry",
                f"{h['capacity']} slots of {h['slot_size']} bytes overflow",
            )
        if h["flags"] & 1:
            raise OpenError(
                "InvalidGeometry", "a pool bus flagged as journaled: a pool has no journal"
            )
        if blocks <= h["capacity"]:
            raise OpenError(
                "InvalidGeometry",
                f"a pool of {blocks} blocks for a ring of {h['capacity']} slots: "
                "it needs more blocks than slots",
            )
        if not 64 <= size <= MAX_BLOCK_SIZE or size % 64:
            raise OpenError(
                "InvalidGeometry",
                f"pool block size {size} is not a multiple of 64 in 64..={MAX_BLOCK_SIZE} bytes",
            )
        if not 1 <= blocks <= MAX_BLOCKS:
            raise OpenError(
                "InvalidGeometry", f"pool of {blocks} blocks is outside 1..={MAX_BLOCKS}"
            )
        states = slots_end
        blocks_offset = states + round_up(8 * blocks, page)
        end = blocks_offset + round_up(blocks * size, page)
        if blocks_offset > M64 or end > ISIZE_MAX:
            raise OpenError(
                "InvalidGeometry", f"capacity {blocks} x slot {size} bytes is too large"
            )
        if end > h["total_len"]:
            raise OpenError(
                "InvalidGeometry",
                f"a pool of {blocks} blocks of {size} bytes ends at {end}, "
                f"past the segment's {h['total_len']} bytes",
            )
        raw = bytes(self.buf[H_POOL_TYPE_NAME : H_POOL_TYPE_NAME + TYPE_NAME_LEN])
        return {
            "blocks": blocks,
            "block_size": size,
            "pid_ns": self.u64(H_POOL_PID_NS),
            # Shown, never trusted: a reader of raw bytes needs none of it.
            "type_name": raw.split(b"\0", 1)[0].decode("utf-8", "replace"),
            "type_hash": self.u64(H_POOL_TYPE_HASH),
            "msg_size": self.u32(H_POOL_MSG_SIZE),
            "msg_align": self.u32(H_POOL_MSG_ALIGN),
            "states": states,
            "blocks_offset": blocks_offset,
            "end": end,
        }

    # -- control page (section 5) ------------------------------------------------
    def cursor(self):
        return self.u64(self.ctl + C_CURSOR)

    def epoch(self):
        return self.u64(self.ctl + C_EPOCH)

    def lock_held(self, byte):
        """Section 14: F_OFD_GETLK with F_WRLCK on one byte, l_pid = 0."""
        arg = struct.pack(FLOCK, fcntl.F_WRLCK, os.SEEK_SET, byte, 1, 0)
        res = fcntl.fcntl(self.fd, F_OFD_GETLK, arg)
        return struct.unpack(FLOCK, res)[0] != fcntl.F_UNLCK

    def state(self):
        if self.stream:
            return self.stream_state()
        if self.bb:
            return self.blackboard_state()
        if self.sv:
            return self.service_state()
        head = self.cursor()
        futex = self.u32(self.ctl + C_FUTEX)
        published = (head - self.first) & M64
        subs = []
        lines = []
        alive_entries = {}
        for i in range(REGISTRY_SLOTS):
            pid = self.u32(self.ctl + C_REGISTRY + 4 * i)
            alive = self.lock_held(LOCK_REGISTRY + i)
            alive_entries[i] = (pid, alive)
            if alive:
                subs.append(pid)
            if alive or pid:
                lines.append(self.subscriber_line(i, pid, alive, head))
        pool = {}
        if self.pool:
            active = self.pool_active(alive_entries)
            states = self.block_states(head, active)
            census = dict.fromkeys(CENSUS, 0)
            for b in states:
                census[b["where"]] += 1
            pool = {"pool_census": census, "pool_active": active}
        gating = [self.u64(self.ctl + C_GATING + 8 * w) for w in range(GATING_WORDS)]
        for line in lines:
            line.update(self.gate_line(line["entry"], line["alive"], gating))
        return {
            "head": head,
            "published": published,
            "max_gating": self.u32(self.ctl + C_MAX_GATING),
            "evict_ns": self.u64(self.ctl + C_EVICT_NS),
            "gate_gen": self.u32(self.ctl + C_GATE_GEN),
            "room_word": self.u32(self.ctl + C_ROOM),
            "gating": [i for i in range(REGISTRY_SLOTS) if gating[i // 64] >> (i % 64) & 1],
            "oldest": (head - min(published, self.cap)) & M64,
            "epoch": self.epoch(),
            "publisher_pid": self.u32(self.ctl + C_PUBLISHER_PID),
            "publisher_alive": self.lock_held(LOCK_PUBLISHER),
            "attached": self.lock_held(LOCK_ATTACHED),
            "subscribers": subs,
            "subscriber_lines": lines,
            "futex_word": futex,
            "sleepers_flag": bool(futex & FUTEX_SLEEPERS),
            **pool,
        }

    # -- the pool (section 19) ---------------------------------------------------
    def state_offset(self, b):
        return self.pool["states"] + 8 * b

    def block_offset(self, b):
        return self.pool["blocks_offset"] + b * self.pool["block_size"]

    def pool_active(self, registry=None):
        """The active entries (a bit each in the mask at control offset 512)
        with their hold words (hold line i at control offset 20480 + 64i)."""
        out = []
        for w in range(ACTIVE_WORDS):
            mask = self.u64(self.ctl + C_POOL_ACTIVE + 8 * w)
            for bit in range(64):
                if not mask >> bit & 1:
                    continue
                i = 64 * w + bit
                at = self.ctl + C_POOL_HOLDS + LINE * i
                holds = [self.u64(at + 8 * k) for k in range(HOLDS)]
                if registry is None:
                    pid, alive = (self.u32(self.ctl + C_REGISTRY + 4 * i),
                                  self.lock_held(LOCK_REGISTRY + i))
                else:
                    pid, alive = registry[i]
                out.append({
                    "entry": i,
                    "pid": pid,
                    "alive": alive,
                    "holds": holds,
                    "held": sum(1 for v in holds if v),
                    # A hold word is block + 1; one past the pool names nothing.
                    "held_blocks": [v - 1 for v in holds if 0 < v <= self.pool["blocks"]],
                })
        return out

    def block_states(self, head=None, active=None):
        """Every block's state word decoded, and where the census puts it."""
        if head is None:
            head = self.cursor()
        if active is None:
            active = self.pool_active()
        holders = {}
        for e in active:
            # A gone subscriber's holds are the next sweep's to clear
            # (section 19.6): its blocks are reclaimable, not held.
            if not e["alive"]:
                continue
            for b in e["held_blocks"]:
                holders.setdefault(b, []).append(e["entry"])
        out = []
        for b in range(self.pool["blocks"]):
            word = self.u64(self.state_offset(b))
            d = {"block": b, "word": word}
            tag = word & 3
            if word == 0:
                d.update(state="free", where="free")
            elif tag == 1 and word >> 2 <= 0xFFFF_FFFF:
                d.update(state="loaned", pid=word >> 2, where="loaned")
            elif tag == 2:
                a = age(word, head)
                # The low 62 bits are stored: the sequence that has them,
                # nearest the head (`age` before it, or ahead of it).
                seq = (head - a) & M64 if a < 1 << 61 else (head + (1 << 62) - a) & M64
                d.update(state="published", seq=seq, age=a)
                if not overwritten(word, head, self.cap):
                    d["where"] = "on_ring"
                elif b in holders:
                    d.update(where="held", held_by=holders[b])
                else:
                    d["where"] = "reclaimable"
            else:
                d.update(state="corrupt", where="corrupt")
            out.append(d)
        return out

    def read_block(self, seq, desc):
        """Section 19, an inspector's read of the message seq whose
        descriptor is desc: ('read', bytes) or ('lost', None)."""
        block, length = struct.unpack("<QQ", desc)
        if block >= self.pool["blocks"] or length > self.pool["block_size"]:
            return ("lost", None)  # a descriptor no publisher wrote
        want = published(seq)
        at = self.state_offset(block)
        if self.u64(at) != want:
            return ("lost", None)  # reclaimed: the subscriber's skipped one
        off = self.block_offset(block)
        copy = bytes(self.buf[off : off + length])
        if self.u64(at) != want:
            return ("lost", None)  # reclaimed while we copied: discard
        return ("read", copy)

    def gate_line(self, i, alive, gating):
        """Sections 5.1 and 13.1: entry i's contract, evictions and the
        publisher's time blocked on it. A live entry is lossless while its
        bit in `gating` is set, evicted if it asked lossless (contract 1)
        and its bit is clear; a gone entry's bit says nothing, so it left
        lossless unless its line counts an eviction."""
        at = self.ctl + C_SUBSCRIBERS + LINE * i
        asked = self.u32(at + L_CONTRACT) == CONTRACT_LOSSLESS
        evictions = self.u32(at + L_EVICTIONS)
        if alive:
            gates = bool(gating[i // 64] >> (i % 64) & 1)
            contract = "lossless" if gates else "evicted" if asked else "lossy"
        else:
            contract = "lossy" if not asked else "evicted" if evictions else "lossless"
        return {
            "contract": contract,
            "evictions": evictions,
            "blocked_ns": self.u64(at + L_BLOCKED_NS),
        }

    def subscriber_line(self, i, pid, alive, head=None):
        """Section 5.1: registry entry i's line, read under its sequence lock
        (at most 1000 tries), then checked against the cursor loaded after
        it (the subscriber moves on while it is read; `head` is ignored)."""
        at = self.ctl + C_SUBSCRIBERS + LINE * i
        out = {"entry": i, "pid": pid, "alive": alive, "corrupt": "kept changing"}
        journaled = bool(self.h["flags"] & FLAG_JOURNALED)
        for _ in range(1000):
            s1 = self.u32(at + L_SEQ)
            if s1 & 1:
                continue
            start, skipped, pos = (self.u64(at + f) for f in (L_START, L_SKIPPED, L_POSITION))
            if self.u32(at + L_SEQ) != s1:
                continue
            head = self.cursor()  # after the line
            out.update(position=pos, active_ns=self.u64(at + L_ACTIVE_NS), corrupt=None)
            # As distances from an origin: first_seq, or on a journaled bus
            # the line's start (a joiner starts at the journal's base, which
            # may be below first_seq, section 22.3), then not past the head.
            # start <= position <= head + 1 (one past is honest, section
            # 13); skipped <= position - start.
            origin = start if journaled else self.first
            s, p, h = ((v - origin) & M64 for v in (start, pos, head))
            if journaled and h >= 1 << 63:
                out["corrupt"] = f"start {start} is past the cursor {head}"
            elif p > h + 1:
                out["corrupt"] = f"position {pos} is more than one past the cursor {head}"
            elif s > p:
                first = "" if journaled else f"the first sequence {self.first} and "
                out["corrupt"] = f"start {start} is not between {first}position {pos}"
            elif skipped > p - s:
                out["corrupt"] = f"skipped {skipped} is more than the {p - s} messages it moved"
            else:
                out.update(lag=max(h - p, 0), skipped=skipped, delivered=p - s - skipped)
            break
        return out

    # -- data pages and the reader protocol (sections 6, 12) ---------------------
    def slot_offset(self, seq):
        return self.data + (seq & self.mask) * self.slot_size

    def start_at(self, start):
        head = self.cursor()
        published = (head - self.first) & M64
        if start == "next":
            return head
        if start == "latest":
            return (head - min(published, 1)) & M64
        if start == "oldest":
            return (head - min(published, self.cap)) & M64
        return int(start, 0) & M64

    def classify(self, seq, stamp):
        d = s64(stamp - done(seq))
        if d < 0:
            return ("empty", None)
        return ("lapped", (seq + (d + 1) // 2) & M64)

    def read(self, seq):
        """One attempt at sequence seq: ('read', bytes) | ('empty', None) |
        ('lapped', newer)."""
        off = self.slot_offset(seq)
        want = done(seq)
        before = self.u64(off)  # Acquire in the protocol.
        if before != want:
            return self.classify(seq, before)
        copy = bytes(self.buf[off + 8 : off + 8 + self.msg_size])
        # (No acquire fence is possible here in Python: see the docstring.)
        after = self.u64(off)
        if after == want:
            return ("read", copy)
        return self.classify(seq, after)

    def oldest_after_lap(self, newer):
        by_slot = (newer + 1 - self.cap) & M64
        by_head = (self.cursor() - self.cap) & M64
        return by_head if s64(by_head - by_slot) > 0 else by_slot

    def poll(self, pos):
        """One subscriber step: (kind, value, new_pos)."""
        kind, val = self.read(pos)
        if kind == "read" and self.pool:
            kind, val = self.read_block(pos, val)
            if kind == "lost":
                return ("lagged", 1, (pos + 1) & M64)
        if kind == "read":
            return ("message", val, (pos + 1) & M64)
        if kind == "empty":
            return ("empty", None, pos)
        to = self.oldest_after_lap(val)
        return ("lagged", (to - pos) & M64, to)


def done(seq):
    return (2 * seq + 2) & M64


# The Census fields of the Rust pool (LAYOUT.md section 19), in its order.
CENSUS = ("free", "loaned", "on_ring", "held", "reclaimable", "corrupt")


def block_line(bus, d):
    """One --blocks line."""
    what = {
        "free": "free",
        "loaned": f"loaned pid {d.get('pid')}",
        "corrupt": "corrupt",
    }.get(d["state"])
    if what is None:
        where = d["where"]
        if where == "held":
            where = "held by entries " + ",".join(map(str, d["held_by"]))
        what = f"published seq {d['seq']} (age {d['age']}, {where})"
    return f"block {d['block']}\toffset {bus.block_offset(d['block'])}\tstate {d['word']:#018x}\t{what}"


def render(payload, as_hex):
    if not as_hex:
        trimmed = payload.rstrip(b"\0")
        if trimmed:
            try:
                text = trimmed.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            if text is not None and text.isprintable():
                return text
    return payload.hex()


def segment_kind(h):
    """The kind as `shmbus stat` names it: the header's kind and, for a
    broadcast bus or a blackboard, its flags (LAYOUT.md section 4)."""
    name = KINDS.get(h["kind"], f"unknown ({h['kind']})")
    many = h["flags"] & FLAG_MULTI_PUBLISHER
    if h["kind"] == KIND_BROADCAST:
        if h["flags"] & FLAG_POOL:
            return "pool, many-publisher" if many else "pool"
        if h["flags"] & FLAG_JOURNALED:
            return "broadcast, journaled"
        return "broadcast, many-publisher" if many else "broadcast"
    if h["kind"] == KIND_BLACKBOARD and h["flags"] & FLAG_MULTI_WRITER:
        return "blackboard, many-writer"
    return name


def header_dict(bus):
    h = dict(bus.h)
    out = {"path": bus.path}
    out["magic"] = f"{h['magic']:#018x}"
    out["version"] = h["version"]
    out["kind"] = segment_kind(h)
    for key in (
        "page_size", "flags", "control_offset", "data_offset", "total_len", "capacity",
        "slot_size", "msg_size", "msg_align",
    ):
        out[key] = h[key]
    out["type_name"] = h["type_name"]
    out["type_hash"] = f"{h['type_hash']:#018x}"
    out["type_hash_matches_name"] = fnv1a(h["type_name"].encode()) == h["type_hash"]
    for key in ("first_seq", "creator_pid", "created_ns"):
        out[key] = h[key]
    out["file_len"] = bus.file_len
    if bus.pool:
        out["pool_blocks"] = bus.pool["blocks"]
        out["pool_block_size"] = bus.pool["block_size"]
        out["pool_pid_ns"] = bus.pool["pid_ns"]
        out["pool_type_name"] = bus.pool["type_name"]
        out["pool_type_hash"] = f"{bus.pool['type_hash']:#018x}"
        out["pool_msg_size"] = bus.pool["msg_size"]
        out["pool_msg_align"] = bus.pool["msg_align"]
        out["pool_states_offset"] = bus.pool["states"]
        out["pool_blocks_offset"] = bus.pool["blocks_offset"]
        out["pool_active_offset"] = bus.ctl + C_POOL_ACTIVE
        out["pool_holds_offset"] = bus.ctl + C_POOL_HOLDS
    return out


def blackboard_get(bus, keyhex):
    """--get: section 21.4's lookup of one key, printed VERSION<TAB>VALUEHEX."""
    try:
        key = bytes.fromhex(keyhex)
    except ValueError:
        print(f"read_bus: --get {keyhex!r} is not hex", file=sys.stderr)
        return 1
    if len(key) != bus.bb["key_size"]:
        print(f"read_bus: a key of {len(key)} bytes, the table's are {bus.bb['key_size']}",
              file=sys.stderr)
        return 1
    try:
        found = bus.bb_get(key)
    except RuntimeError as e:
        print(f"read_bus: {e}", file=sys.stderr)
        return 1
    if found is None:
        print(f"read_bus: no key {keyhex}", file=sys.stderr)
        return 1
    print(f"{found[0]}\t{found[1].hex()}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description="Read a shmbus broadcast bus (docs/LAYOUT.md).")
    ap.add_argument("path", help="bus name (under /dev/shm) or path")
    ap.add_argument("--from", dest="start", default="oldest",
                    help="oldest (default), latest, next, or a sequence number")
    ap.add_argument("--count", type=int, default=None,
                    help="stop after N messages (lag reports do not count)")
    ap.add_argument("--timeout", type=float, default=0.0,
                    help="keep polling for new messages until SECS pass with none (default 0)")
    ap.add_argument("--hex", action="store_true", help="print every payload as hex")
    ap.add_argument("--quiet", "-q", action="store_true", help="no '# ' header lines")
    ap.add_argument("--json", action="store_true",
                    help="print header and control-page state as JSON and exit")
    ap.add_argument("--slots", action="store_true",
                    help="print every slot's stamp and what it means, and exit")
    ap.add_argument("--blocks", action="store_true",
                    help="pool buses: print every block's state word and what it means, and exit")
    ap.add_argument("--get", metavar="KEYHEX",
                    help="blackboards: print the key's version and value (hex), and exit")
    ap.add_argument("--entries", action="store_true",
                    help="blackboards: print every entry's stamp, tag, key and value, and exit")
    ap.add_argument("--calls", action="store_true",
                    help="services: print every call slot that is not free, and exit")
    ap.add_argument("--init-timeout", type=float, default=1.0,
                    help="how long to wait for a bus being created (default 1 s)")
    args = ap.parse_args(argv)

    try:
        bus = Bus(resolve(args.path), args.init_timeout)
    except OpenError as e:
        print(f"read_bus: {e}", file=sys.stderr)
        return 2

    if args.json:
        out = header_dict(bus)
        out.update(bus.state())
        if bus.pool:
            out["pool_block_states"] = bus.block_states()
        print(json.dumps(out, indent=2))
        return 0

    if bus.bb and args.get is not None:
        return blackboard_get(bus, args.get)
    if not args.quiet:
        for k, v in header_dict(bus).items():
            print(f"# {k}: {v}")
        for k, v in bus.state().items():
            if bus.sv and isinstance(v, list) and v and isinstance(v[0], dict):
                # A service's servers, clients and calls: a line each.
                for item in v:
                    print(f"# {k}: " + ", ".join(f"{a}={b}" for a, b in item.items()))
            else:
                print(f"# {k}: {v}")
    if bus.bb:
        # Section 25: read by key, or entry by entry; never as a ring.
        if args.entries:
            for i in range(bus.bb["entries"]):
                stamp, tag, key, value = bus.bb_entry(i)
                if tag is None:
                    print(f"entry {i}\tstamp {stamp:#x}\tmid-write")
                elif tag != TAG_EMPTY:
                    what = {TAG_LIVE: "live", TAG_REMOVED: "removed"}.get(tag, f"tag {tag}")
                    print(f"entry {i}\tversion {stamp // 2}\t{what}\t{key.hex()}\t{value.hex()}")
        return 0
    if bus.sv:
        # A service has no messages to read: its calls, if asked.
        if args.calls:
            for k in bus.sv_calls():
                server = "-" if k["server"] is None else k["server"]
                print(f"client {k['client']}\tslot {k['slot']}\t{k['phase']}\t"
                      f"generation {k['generation']}\tserver {server}")
        return 0
    if bus.stream:
        # Only the consumer reads a stream's records (section 20).
        if args.slots or args.blocks:
            print("read_bus: a stream has no slots nor blocks", file=sys.stderr)
            return 1
        return 0

    if args.slots:
        head = bus.cursor()
        for i in range(bus.cap):
            off = bus.data + i * bus.slot_size
            st = bus.u64(off)
            # The stamp is 2s+2 (done) or 2s+1 (writing) mod 2^64, so it
            # holds s only mod 2^63: take the candidate nearest the cursor.
            # The initial stamp 2*first_seq reads as done(first_seq - 1), a
            # sequence never published (short of 2^64 messages).
            low = ((st - 1) // 2) if st % 2 else (((st - 2) & M64) // 2)
            s = min((low, low | 1 << 63), key=lambda c: abs(s64(c - head)))
            if st % 2:
                what = f"writing seq {s}"
            elif s == (bus.first - 1) & M64:
                what = "empty (initial stamp 2*first_seq)"
            else:
                what = f"done seq {s}"
            payload = bytes(bus.buf[off + 8 : off + 8 + bus.msg_size])
            line = f"slot {i}\toffset {off}\tstamp {st:#018x}\t{what}\t{render(payload, args.hex)}"
            if bus.pool:
                line += "\tblock {} len {}".format(*struct.unpack("<QQ", payload))
            print(line)
        return 0

    if args.blocks:
        if not bus.pool:
            print("read_bus: --blocks: this bus has no pool (header flag bit 3)", file=sys.stderr)
            return 1
        for d in bus.block_states():
            print(block_line(bus, d))
        return 0

    pos = bus.start_at(args.start)
    got = 0
    last_progress = time.monotonic()
    while args.count is None or got < args.count:
        kind, val, new_pos = bus.poll(pos)
        if kind == "message":
            print(f"{pos}\t{render(val, args.hex)}")
            got += 1
            last_progress = time.monotonic()
        elif kind == "lagged":
            print(f"LAGGED\tskipped={val}\tresume={new_pos}")
            last_progress = time.monotonic()
        else:
            if time.monotonic() - last_progress >= args.timeout:
                break
            time.sleep(0.001)
        pos = new_pos
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
