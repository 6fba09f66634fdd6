//! [`Recording`]: reads a recording back, record by record, trusting
//! nothing in it.

use std::io::{self, Read};

use super::error::{OpenRecordingError, ReadError};
use super::format::{
    BUS_FIXED, BUS_FIXED_V2, BUS_LOSSLESS, GAP_LEN, HEADER_LEN, HEADER_V2, MAGIC, MAX_BODY,
    MAX_BUSES, MAX_MESSAGE, MAX_NAME, MAX_TYPE_NAME, MESSAGE_FIXED, RECORD_HEAD, TYPE_BUS,
    TYPE_GAP, TYPE_MESSAGE, VERSION, VERSION_1, padded, record_check, u32_at, u64_at,
};
use super::{BusRecord, GapRecord, MessageRecord, Record, RecordedKind};
use crate::TypeFingerprint;
use crate::journal::format::check_words;

/// Up to this many bytes a record is read straight into the reader's
/// buffer, grown to fit; a longer one is read as far as the file has it.
const GROWN: usize = 64 << 10;

/// Reads a recording (docs/RECORDING.md) from any `io::Read`: an iterator
/// of its [`Record`]s in file order.
///
/// Everything read is untrusted: lengths are bounded before anything is
/// allocated for them, and a record that is whole but wrong is a
/// [`ReadError`] naming its offset, after which the iteration ends. A
/// record cut short by the end of the file (a recorder killed mid-write)
/// is the end of the recording, not an error.
///
/// # Examples
/// ```
/// use shmbus::record::{Record, RecordedKind, Recorder, Recording};
///
/// let mut recorder = Recorder::new(Vec::new())?;
/// let bus = recorder.add_bus("ticks", RecordedKind::Bus, 4)?;
/// recorder.message(bus, 5, 10, 20, b"abcd")?;
/// let mut bytes = recorder.into_inner();
/// bytes.truncate(bytes.len() - 3); // the last record cut short
///
/// let mut recording = Recording::new(&bytes[..])?;
/// assert!(matches!(recording.next(), Some(Ok(Record::Bus(b))) if b.name == "ticks"));
/// assert!(recording.next().is_none()); // the cut record ends it
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Recording<R: Read> {
    input: R,
    /// The next record's offset in the file.
    offset: u64,
    /// Each declared bus's message size and whether messages may be
    /// shorter, by id.
    sizes: Vec<(u32, bool)>,
    done: bool,
    buf: Vec<u8>,
    /// A message payload's allocation given back (`recycle`), reused for
    /// the next message record.
    spare: Vec<u8>,
    version: u32,
    part: u32,
    id: u64,
}

impl<R: Read> Recording<R> {
    /// Reads and checks the file's header.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{Recorder, Recording};
    ///
    /// let bytes = Recorder::new(Vec::new())?.into_inner();
    /// assert_eq!(Recording::new(&bytes[..])?.count(), 0); // no record yet
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`OpenRecordingError::Truncated`] for a file shorter than the
    /// header, [`OpenRecordingError::BadMagic`] for one that is not a
    /// recording, [`OpenRecordingError::Version`] for a version this code
    /// does not read (it reads 1 and 2), [`OpenRecordingError::Io`] if
    /// reading fails.
    pub fn new(input: R) -> Result<Self, OpenRecordingError> {
        Self::with_magic(input, MAGIC)
    }

    /// Opens a file of this framing with `magic` (a recording's or an
    /// index's).
    pub(crate) fn with_magic(mut input: R, want: u64) -> Result<Self, OpenRecordingError> {
        let mut head = [0u8; HEADER_LEN];
        let n = read_full(&mut input, &mut head)?;
        if n < HEADER_LEN {
            return Err(OpenRecordingError::Truncated {
                found: n,
                expected: HEADER_LEN,
            });
        }
        let magic = u64_at(&head, 0);
        if magic != want {
            return Err(OpenRecordingError::BadMagic {
                found: magic,
                expected: want,
            });
        }
        let version = u32_at(&head, 8);
        if version != VERSION && (version != VERSION_1 || want != MAGIC) {
            return Err(OpenRecordingError::Version {
                found: version,
                expected: VERSION,
            });
        }
        let (mut part, mut id, mut offset) = (0, 0, HEADER_LEN);
        if version == VERSION {
            let mut rest = [0u8; HEADER_V2 - HEADER_LEN];
            let n = read_full(&mut input, &mut rest)?;
            if n < rest.len() {
                return Err(OpenRecordingError::Truncated {
                    found: HEADER_LEN + n,
                    expected: HEADER_V2,
                });
            }
            part = u32_at(&head, 12);
            id = u64_at(&rest, 0);
            offset = HEADER_V2;
        }
        Ok(Self {
            input,
            offset: offset as u64,
            sizes: Vec::new(),
            done: false,
            buf: Vec::new(),
            spare: Vec::new(),
            version,
            part,
            id,
        })
    }

    /// Goes on from `offset` of a file whose header said `version`, `part`
    /// and `id`, `input` already there, with these buses declared before
    /// it (an index's seek).
    pub(crate) fn resume(
        input: R,
        (version, part, id): (u32, u32, u64),
        offset: u64,
        buses: &[BusRecord],
    ) -> Self {
        Self {
            input,
            offset,
            sizes: buses
                .iter()
                .map(|b| (b.msg_size, b.kind.variable_length()))
                .collect(),
            done: false,
            buf: Vec::new(),
            spare: Vec::new(),
            version,
            part,
            id,
        }
    }

    /// The file's version (1 or 2).
    ///
    /// # Examples
    /// ```
    /// let bytes = shmbus::record::Recorder::new(Vec::new())?.into_inner();
    /// assert_eq!(shmbus::record::Recording::new(&bytes[..])?.version(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The header's part number (0 for the first file of a recording, and
    /// for a version 1 file) and recording id (0 in version 1).
    ///
    /// # Examples
    /// ```
    /// let bytes = shmbus::record::Recorder::new(Vec::new())?.into_inner();
    /// assert_eq!(shmbus::record::Recording::new(&bytes[..])?.part().0, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn part(&self) -> (u32, u64) {
        (self.part, self.id)
    }

    /// A payload's allocation back from a consumer done with its message
    /// record: the next one reuses it rather than allocating.
    pub(crate) fn recycle(&mut self, payload: Vec<u8>) {
        self.spare = payload;
    }

    /// The input, given back where the last record read ended.
    pub(crate) fn into_input(self) -> R {
        self.input
    }

    /// The raw next record of an index file: its type and body, checked.
    pub(crate) fn next_raw(&mut self) -> Result<Option<(u32, Vec<u8>)>, ReadError> {
        let offset = self.offset;
        let Some((ty, len, rest)) = self.read_checked(offset)? else {
            return Ok(None);
        };
        self.offset += (RECORD_HEAD + rest) as u64;
        Ok(Some((ty, self.buf[..len].to_vec())))
    }

    /// The offset of the next record: after the iteration ends, the length
    /// of the valid prefix.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{RecordedKind, Recorder, Recording};
    ///
    /// let mut recorder = Recorder::new(Vec::new())?;
    /// recorder.add_bus("ticks", RecordedKind::Bus, 8)?; // 32 + 8 + 64 + 8 bytes
    /// let mut bytes = recorder.into_inner();
    /// bytes.extend_from_slice(&[2, 0, 0, 0]); // a record cut short
    /// let mut recording = Recording::new(&bytes[..])?;
    /// recording.by_ref().for_each(drop);
    /// assert_eq!(recording.offset(), 112);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next record; `Ok(None)` at the end (or at a cut-short record).
    fn read_record(&mut self) -> Result<Option<Record>, ReadError> {
        let offset = self.offset;
        let Some((ty, len, rest)) = self.read_checked(offset)? else {
            return Ok(None);
        };
        // Taken out for the parse, which adds buses; an error ends the
        // iteration, so it need not come back then.
        let buf = std::mem::take(&mut self.buf);
        let body = &buf[..len];
        let record = match ty {
            TYPE_BUS => Record::Bus(self.bus(offset, body)?),
            TYPE_MESSAGE => Record::Message(self.message(offset, body)?),
            TYPE_GAP => Record::Gap(self.gap(offset, body)?),
            found => return Err(ReadError::UnknownType { offset, found }),
        };
        self.buf = buf;
        self.offset += (RECORD_HEAD + rest) as u64;
        Ok(Some(record))
    }

    /// The next record's type, body length and bytes after its head, its
    /// body in `buf` and checked; `Ok(None)` at the end or a cut record.
    fn read_checked(&mut self, offset: u64) -> Result<Option<(u32, usize, usize)>, ReadError> {
        let mut head = [0u8; RECORD_HEAD];
        if !read_whole(&mut self.input, &mut head)? {
            return Ok(None);
        }
        let ty = u32_at(&head, 0);
        let len = u32_at(&head, 4);
        if len as usize > MAX_BODY {
            return Err(ReadError::TooLong {
                offset,
                found: len,
                max: MAX_BODY,
            });
        }
        let len = len as usize;
        let rest = padded(len) + 8;
        if rest <= self.buf.len().max(GROWN) {
            // Read in place: the buffer only grows, and only to `GROWN` or
            // to the size of a record this recording held whole.
            if self.buf.len() < rest {
                self.buf.resize(rest, 0);
            }
            if !read_whole(&mut self.input, &mut self.buf[..rest])? {
                return Ok(None);
            }
        } else {
            self.buf.clear();
            // Grows with the bytes there are, so a lying length costs
            // nothing.
            (&mut self.input)
                .take(rest as u64)
                .read_to_end(&mut self.buf)?;
            if self.buf.len() < rest {
                return Ok(None);
            }
        }
        let found = u64_at(&self.buf, padded(len));
        // With its padding zero (checked next), the body's padded words
        // are the buffer's own, as they lie.
        let pad_clean = self.buf[len..padded(len)].iter().all(|&b| b == 0);
        let head = u64::from(ty) | ((len as u64) << 32);
        if !pad_clean || found != check_words(head, &self.buf[..padded(len)]) {
            return Err(ReadError::Checksum {
                offset,
                found,
                expected: record_check(ty, &self.buf[..len]),
            });
        }
        Ok(Some((ty, len, rest)))
    }

    fn bus(&mut self, offset: u64, body: &[u8]) -> Result<BusRecord, ReadError> {
        if self.version == VERSION_1 {
            return self.bus_v1(offset, body);
        }
        if body.len() < BUS_FIXED_V2 {
            return Err(ReadError::BodyLength {
                offset,
                found: body.len(),
                expected: BUS_FIXED_V2,
            });
        }
        let (bus, kind, msg_size) = self.bus_head(offset, body)?;
        let type_len = u64::from(u32_at(body, 48));
        let name_len = u64::from(u32_at(body, 52));
        let room = body.len() - BUS_FIXED_V2;
        if type_len > MAX_TYPE_NAME as u64
            || name_len > MAX_NAME as u64
            || type_len + name_len != room as u64
        {
            return Err(ReadError::NameLength {
                offset,
                found: type_len + name_len,
                expected: room,
            });
        }
        let names = &body[BUS_FIXED_V2..];
        let (type_name, name) = names.split_at(type_len as usize);
        let utf8 =
            |b: &[u8], err: ReadError| std::str::from_utf8(b).map(str::to_owned).map_err(|_| err);
        let msg_type = TypeFingerprint {
            size: u32_at(body, 32),
            align: u32_at(body, 36),
            name_hash: u64_at(body, 40),
            name: utf8(type_name, ReadError::TypeNameNotUtf8 { offset })?,
        };
        let name = utf8(name, ReadError::NameNotUtf8 { offset })?;
        self.sizes.push((msg_size, kind.variable_length()));
        Ok(BusRecord {
            id: bus,
            name,
            kind,
            msg_size,
            slots: u64_at(body, 16),
            blocks: u64_at(body, 24),
            msg_type: Some(msg_type),
            lossless: u32_at(body, 12) & BUS_LOSSLESS != 0,
        })
    }

    /// A bus record's id, kind and message size, checked (both versions).
    fn bus_head(&self, offset: u64, body: &[u8]) -> Result<(u32, RecordedKind, u32), ReadError> {
        let id = u32_at(body, 0);
        if id as usize != self.sizes.len() || self.sizes.len() >= MAX_BUSES {
            return Err(ReadError::BusId {
                offset,
                found: id,
                expected: self.sizes.len(),
            });
        }
        let code = u32_at(body, 4);
        let kind = RecordedKind::from_code(code)
            .filter(|&k| self.version != VERSION_1 || k == RecordedKind::Bus)
            .ok_or(ReadError::UnknownKind {
                offset,
                found: code,
            })?;
        let msg_size = u32_at(body, 8);
        if msg_size as usize > MAX_MESSAGE {
            return Err(ReadError::TooLong {
                offset,
                found: msg_size,
                max: MAX_MESSAGE,
            });
        }
        Ok((id, kind, msg_size))
    }

    fn bus_v1(&mut self, offset: u64, body: &[u8]) -> Result<BusRecord, ReadError> {
        if body.len() < BUS_FIXED || body.len() > BUS_FIXED + MAX_NAME {
            return Err(ReadError::BodyLength {
                offset,
                found: body.len(),
                expected: if body.len() < BUS_FIXED {
                    BUS_FIXED
                } else {
                    BUS_FIXED + MAX_NAME
                },
            });
        }
        let (id, kind, msg_size) = self.bus_head(offset, body)?;
        let name = std::str::from_utf8(&body[BUS_FIXED..])
            .map_err(|_| ReadError::NameNotUtf8 { offset })?
            .to_owned();
        self.sizes.push((msg_size, false));
        Ok(BusRecord {
            id,
            name,
            kind,
            msg_size,
            slots: 0,
            blocks: 0,
            msg_type: None,
            lossless: false,
        })
    }

    fn known(&self, offset: u64, body: &[u8]) -> Result<(u32, bool), ReadError> {
        let bus = u32_at(body, 0);
        match self.sizes.get(bus as usize) {
            Some(&size) => Ok(size),
            None => Err(ReadError::UnknownBus {
                offset,
                found: bus,
                buses: self.sizes.len(),
            }),
        }
    }

    fn message(&mut self, offset: u64, body: &[u8]) -> Result<MessageRecord, ReadError> {
        if body.len() < MESSAGE_FIXED {
            return Err(ReadError::BodyLength {
                offset,
                found: body.len(),
                expected: MESSAGE_FIXED,
            });
        }
        let (size, variable) = self.known(offset, body)?;
        let size = size as usize;
        let fits = if variable {
            body.len() <= MESSAGE_FIXED + size
        } else {
            body.len() == MESSAGE_FIXED + size
        };
        if !fits {
            return Err(ReadError::BodyLength {
                offset,
                found: body.len(),
                expected: MESSAGE_FIXED + size,
            });
        }
        Ok(MessageRecord {
            bus: u32_at(body, 0),
            seq: u64_at(body, 8),
            mono_ns: u64_at(body, 16),
            wall_ns: u64_at(body, 24),
            payload: {
                let mut payload = std::mem::take(&mut self.spare);
                payload.clear();
                payload.extend_from_slice(&body[MESSAGE_FIXED..]);
                payload
            },
        })
    }

    fn gap(&self, offset: u64, body: &[u8]) -> Result<GapRecord, ReadError> {
        if body.len() != GAP_LEN {
            return Err(ReadError::BodyLength {
                offset,
                found: body.len(),
                expected: GAP_LEN,
            });
        }
        self.known(offset, body)?;
        let count = u64_at(body, 16);
        if count == 0 {
            return Err(ReadError::EmptyGap { offset });
        }
        Ok(GapRecord {
            bus: u32_at(body, 0),
            first: u64_at(body, 8),
            count,
        })
    }
}

impl<R: Read> Iterator for Recording<R> {
    type Item = Result<Record, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.read_record() {
            Ok(Some(record)) => Some(Ok(record)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Fills `buf`, or says the input ended first (`false`; what it read of
/// `buf` is then lost, which a reader at a cut record never needs).
/// `read_exact`, which a buffered input serves with one copy.
#[inline]
fn read_whole(input: &mut impl Read, buf: &mut [u8]) -> io::Result<bool> {
    match input.read_exact(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// Reads until `buf` is full or the input ends; the bytes read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match input.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
