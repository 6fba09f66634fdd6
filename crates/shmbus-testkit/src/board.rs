//! Where a blackboard key's probe starts, written from docs/LAYOUT.md
//! §21.4 alone (as an independent reader would), so that a test can pick
//! keys that share an entry without the library's own hash.

/// The entry a key's probe starts at in a table of `entries` entries (a
/// power of two): LAYOUT §21.4's multiply-xorshift over the key's
/// little-endian 8-byte words, the last zero-padded, masked.
///
/// # Examples
/// ```
/// // LAYOUT §21.6's worked example: key 7 of a 2048-entry table.
/// assert_eq!(shmbus_testkit::blackboard_home(&7u64.to_le_bytes(), 2048), 1223);
/// ```
pub fn blackboard_home(key: &[u8], entries: u64) -> u64 {
    let mut h: u64 = 0x243F_6A88_85A3_08D3;
    for word in key.chunks(8) {
        let mut w = [0u8; 8];
        w[..word.len()].copy_from_slice(word);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^= h >> 32;
    }
    h & (entries - 1)
}
