//! The journal's parser under arbitrary and mutated input: every input is a
//! typed error or a valid prefix, never a panic, and a valid prefix never
//! includes a record that was damaged.

mod common;

use common::ShmDir;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use shmbus::journal::format::{HEADER_LEN, JournalHeader, encode_record, valid_prefix};

fn header(msg_size: u32, snapshot: u64, base: u64) -> JournalHeader {
    JournalHeader {
        msg_size,
        type_hash: 0x1234,
        base,
        snapshot,
        sealed: false,
    }
}

/// A whole journal file: header, `snapshot` records below `base`, then
/// `tail` contiguous records from `base`.
fn image(h: &JournalHeader, tail: u64) -> Vec<u8> {
    let rs = h.record_size();
    let mut out = h.encode().to_vec();
    let seqs = (0..h.snapshot)
        .map(|i| i * 3)
        .chain((0..tail).map(|j| h.base + j));
    for (i, seq) in seqs.enumerate() {
        let mut rec = vec![0u8; rs];
        let msg: Vec<u8> = (0..h.msg_size)
            .map(|b| (b as u64 ^ seq ^ i as u64) as u8)
            .collect();
        encode_record(seq, &msg, &mut rec);
        out.extend_from_slice(&rec);
    }
    out
}

/// Under SHMBUS_TEST_SCALE (256 at 1.0, at least 16; under Miri 8, at
/// least 2).
fn cases() -> u32 {
    let n = if cfg!(miri) {
        common::scale_min(8, 2)
    } else {
        common::scale_min(256, 16)
    };
    u32::try_from(n).unwrap_or(u32::MAX)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn arbitrary_bytes_are_a_typed_error_or_a_header_that_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(h) = JournalHeader::decode(&bytes) {
            prop_assert_eq!(JournalHeader::decode(&h.encode()), Ok(h));
            let (n, _) = valid_prefix(&h, &bytes[HEADER_LEN..]);
            prop_assert!(n as usize * h.record_size() <= bytes.len() - HEADER_LEN);
        }
    }

    #[test]
    fn a_damaged_record_ends_the_valid_prefix_at_or_before_it(
        msg_size in 1u32..40,
        snapshot in 0u64..5,
        tail in 1u64..20,
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4),
        cut in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let h = header(msg_size, snapshot, 100);
        let good = image(&h, tail);
        let total = snapshot + tail;
        let rs = h.record_size();
        prop_assert_eq!(valid_prefix(&h, &good[HEADER_LEN..]).0, total);
        let mut bad = good.clone();
        for (at, bit) in &flips {
            let i = HEADER_LEN + at.index(good.len() - HEADER_LEN);
            bad[i] ^= 1 << bit;
        }
        // Two flips of the same bit cancel: damaged is what differs.
        let mut first_damaged = (HEADER_LEN..good.len())
            .find(|&i| bad[i] != good[i])
            .map_or(total, |i| ((i - HEADER_LEN) / rs) as u64);
        if let Some(c) = cut {
            let len = HEADER_LEN + c.index(good.len() - HEADER_LEN + 1);
            bad.truncate(len);
            first_damaged = first_damaged.min(((len - HEADER_LEN) / rs) as u64);
        }
        let (n, _) = valid_prefix(&h, &bad[HEADER_LEN..]);
        // A flip can make a record fail, never pass (with 64-bit odds).
        prop_assert!(n <= first_damaged, "{} valid, first damaged {}", n, first_damaged);
        for i in 0..n as usize {
            let r = HEADER_LEN + i * rs;
            prop_assert_eq!(&bad[r..r + rs], &good[r..r + rs]);
        }
    }
}

#[test]
fn stat_of_damaged_journal_files_is_a_typed_error_or_their_valid_prefix() {
    let dir = ShmDir::new("jfuzz");
    let path = dir.path().join("j");
    let h = header(16, 2, 50);
    let good = image(&h, 10);
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mutations = proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6);
    // Under SHMBUS_TEST_SCALE; at least 20 mutated images (Miri: 2).
    let cases = if cfg!(miri) {
        common::scale_min(4, 2)
    } else {
        common::scale_min(200, 20)
    };
    for _ in 0..cases {
        let muts = mutations.new_tree(&mut runner).expect("strategy").current();
        let mut bytes = good.clone();
        for (at, v) in &muts {
            let i = at.index(bytes.len());
            bytes[i] = *v;
        }
        std::fs::write(&path, &bytes).expect("write");
        match shmbus::journal::stat(&path) {
            Ok(st) => {
                assert!(st.records <= 12);
                assert!(st.snapshot <= st.records);
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
    // Shorter than a header, and empty.
    for len in [0, 1, 63] {
        std::fs::write(&path, &good[..len]).expect("write");
        assert!(matches!(
            shmbus::journal::stat(&path),
            Err(shmbus::journal::OpenError::Header { .. })
        ));
    }
    dir.finish();
}
