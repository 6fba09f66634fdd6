//! What a message carries after its header, and how a receiver proves it
//! read all of it.
//!
//! A message is `[sequence][timestamp][pattern ...][trailer]`: the pattern
//! comes from a fixed seed and is written once per buffer ([`fill`]); the
//! trailer (the last whole 8-byte word, when the message has room for one
//! after the header) is derived from the sequence and written with the
//! header on every send ([`seal`]). A receiver folds every byte of what it
//! got ([`fold`]: the wrapping sum of the message's little-endian words, the
//! last partial word zero-extended) and compares it with [`expected`], which
//! depends only on the header and the size. A corrupt byte changes the sum;
//! a torn delivery (header of one message, trailer of another) does too.
//!
//! The fold costs what reading the bytes costs: four independent lanes of
//! 64-bit adds, which the compiler vectorises.

/// Bytes of the header every message starts with: the sequence, then the
/// timestamp.
pub const HEADER: usize = 16;

/// Writes the header (sequence, timestamp) into a message buffer.
#[inline(always)]
pub fn stamp(buf: &mut [u8], seq: u64, ts: u64) {
    buf[..8].copy_from_slice(&seq.to_le_bytes());
    buf[8..16].copy_from_slice(&ts.to_le_bytes());
}

/// Reads (sequence, timestamp) from a message.
#[inline(always)]
pub fn unstamp(msg: &[u8]) -> (u64, u64) {
    let seq = u64::from_le_bytes(msg[..8].try_into().expect("16-byte header"));
    let ts = u64::from_le_bytes(msg[8..16].try_into().expect("16-byte header"));
    (seq, ts)
}

/// The pattern's seed: any odd constant.
const SEED: u64 = 0x9E37_79B9_7F4A_7C15;

/// Where the trailer is, if the message has a whole word after the header.
#[inline(always)]
fn trailer_at(len: usize) -> Option<usize> {
    let at = (len / 8).checked_sub(1)? * 8;
    (at >= HEADER).then_some(at)
}

/// The trailer of message `seq`.
#[inline(always)]
fn trailer(seq: u64) -> u64 {
    seq.wrapping_mul(SEED) ^ SEED.rotate_left(17)
}

/// Writes the pattern after the header (once per buffer).
pub fn fill(buf: &mut [u8]) {
    let mut x = SEED;
    for b in buf.iter_mut().skip(HEADER) {
        // xorshift64: any fixed, non-trivial sequence of bytes will do.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
}

/// Writes the header and the trailer of message `seq`.
#[inline(always)]
pub fn seal(buf: &mut [u8], seq: u64, ts: u64) {
    stamp(buf, seq, ts);
    if let Some(at) = trailer_at(buf.len()) {
        buf[at..at + 8].copy_from_slice(&trailer(seq).to_le_bytes());
    }
}

/// The wrapping sum of `msg`'s little-endian 8-byte words (a short last
/// word zero-extended), in four lanes.
#[inline]
pub fn fold(msg: &[u8]) -> u64 {
    let word = |w: &[u8]| u64::from_le_bytes(w.try_into().expect("8 bytes"));
    let mut lanes = [0u64; 4];
    let mut chunks = msg.chunks_exact(32);
    for c in &mut chunks {
        for (lane, w) in lanes.iter_mut().zip(c.chunks_exact(8)) {
            *lane = lane.wrapping_add(word(w));
        }
    }
    let rest = chunks.remainder();
    let mut words = rest.chunks_exact(8);
    for w in &mut words {
        lanes[0] = lanes[0].wrapping_add(word(w));
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    lanes[1] = lanes[1].wrapping_add(u64::from_le_bytes(tail));
    lanes
        .iter()
        .fold(0, |acc: u64, &lane| acc.wrapping_add(lane))
}

/// What [`fold`] gives for an intact message of one size: the pattern's
/// share is computed once, the header's and trailer's per message.
pub struct Check {
    pattern: u64,
    trailer: bool,
}

impl Check {
    /// The check for messages of `len` bytes.
    pub fn new(len: usize) -> Check {
        let mut buf = vec![0u8; len];
        fill(&mut buf);
        buf[..HEADER.min(len)].fill(0);
        let at = trailer_at(len);
        if let Some(at) = at {
            buf[at..at + 8].fill(0);
        }
        Check {
            pattern: fold(&buf),
            trailer: at.is_some(),
        }
    }

    /// The fold an intact message with this header has.
    #[inline]
    pub fn expected(&self, seq: u64, ts: u64) -> u64 {
        let t = if self.trailer { trailer(seq) } else { 0 };
        self.pattern
            .wrapping_add(seq)
            .wrapping_add(ts)
            .wrapping_add(t)
    }

    /// Whether `msg` (header already read as `seq`, `ts`) is intact.
    #[inline]
    pub fn holds(&self, msg: &[u8], seq: u64, ts: u64) -> bool {
        fold(msg) == self.expected(seq, ts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed(len: usize, seq: u64, ts: u64) -> Vec<u8> {
        let mut buf = vec![0u8; len];
        fill(&mut buf);
        seal(&mut buf, seq, ts);
        buf
    }

    #[test]
    fn an_intact_message_of_any_size_passes_the_check() {
        for len in [16, 17, 23, 24, 25, 31, 32, 33, 64, 100, 256, 4096, 65536] {
            let check = Check::new(len);
            for seq in [0, 1, 7, 1 << 40] {
                let msg = sealed(len, seq, seq ^ 0xABCD);
                assert!(check.holds(&msg, seq, seq ^ 0xABCD), "len {len} seq {seq}");
            }
        }
    }

    #[test]
    fn a_flipped_byte_anywhere_fails_the_check() {
        for len in [16, 24, 33, 256] {
            let check = Check::new(len);
            for i in 0..len {
                let mut msg = sealed(len, 5, 9);
                msg[i] ^= 0x10;
                let (seq, ts) = unstamp(&msg);
                assert!(
                    !check.holds(&msg, seq, ts) || i < HEADER,
                    "len {len} byte {i}"
                );
                assert!(!check.holds(&msg, 5, 9), "len {len} byte {i}");
            }
        }
    }

    #[test]
    fn a_header_from_one_message_and_a_trailer_from_another_fail_the_check() {
        let check = Check::new(256);
        let mut torn = sealed(256, 3, 0);
        torn[..HEADER].copy_from_slice(&sealed(256, 4, 0)[..HEADER]);
        assert!(!check.holds(&torn, 4, 0));
    }
}
