use super::format::{HEADER_V2, MAGIC};
use super::*;
use crate::TypeFingerprint;

fn sample() -> Vec<u8> {
    let mut r = Recorder::new(Vec::new()).unwrap();
    let a = r.add_bus("a", RecordedKind::Bus, 8).unwrap();
    let b = r.add_bus("bus-b", RecordedKind::Bus, 3).unwrap();
    r.message(a, 0, 1, 2, &[1; 8]).unwrap();
    r.message(b, 7, 3, 4, b"xyz").unwrap();
    r.gap(a, 1, 5).unwrap();
    r.message(a, 6, 5, 6, &[2; 8]).unwrap();
    r.into_inner()
}

fn read_all(bytes: &[u8]) -> Result<Vec<Record>, String> {
    let rec = Recording::new(bytes).map_err(|e| e.to_string())?;
    rec.collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())
}

#[test]
fn what_is_written_reads_back_the_same() {
    let records = read_all(&sample()).unwrap();
    assert_eq!(records.len(), 6);
    assert_eq!(
        records[1],
        Record::Bus(BusRecord {
            id: 1,
            name: "bus-b".into(),
            kind: RecordedKind::Bus,
            msg_size: 3,
            slots: 0,
            blocks: 0,
            msg_type: Some(TypeFingerprint {
                size: 0,
                align: 0,
                name_hash: 0,
                name: String::new()
            }),
            lossless: false,
        })
    );
    assert_eq!(
        records[3],
        Record::Message(MessageRecord {
            bus: 1,
            seq: 7,
            mono_ns: 3,
            wall_ns: 4,
            payload: b"xyz".to_vec()
        })
    );
    assert_eq!(
        records[4],
        Record::Gap(GapRecord {
            bus: 0,
            first: 1,
            count: 5
        })
    );
}

#[test]
fn every_truncation_of_a_recording_reads_as_a_prefix_of_it() {
    let bytes = sample();
    let whole = read_all(&bytes).unwrap();
    // Every cut natively; under Miri every 5th (each record still cut at
    // its head, its body and its check), to keep its lane short.
    for cut in (0..bytes.len()).step_by(if cfg!(miri) { 5 } else { 1 }) {
        match Recording::new(&bytes[..cut]) {
            Err(OpenRecordingError::Truncated { found, expected }) => {
                assert_eq!(found, cut);
                assert!(expected == 16 || expected == HEADER_V2, "{expected}");
            }
            Err(e) => panic!("cut at {cut}: {e}"),
            Ok(rec) => {
                let got = rec.collect::<Result<Vec<_>, _>>().unwrap();
                assert_eq!(got[..], whole[..got.len()], "cut at {cut}");
            }
        }
    }
}

#[test]
fn a_changed_byte_in_the_middle_is_a_checksum_error_naming_its_offset() {
    let mut bytes = sample();
    // The first bus record starts at 32; its name's byte is at 32 + 8 + 56.
    bytes[HEADER_V2 + 8 + 56] ^= 1;
    let mut rec = Recording::new(&bytes[..]).unwrap();
    match rec.next() {
        Some(Err(e @ ReadError::Checksum { offset: 32, .. })) => {
            assert!(
                e.to_string().starts_with("record at offset 32: check"),
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(rec.next().is_none());
}

#[test]
fn a_nonzero_padding_byte_is_a_checksum_error_naming_its_record() {
    let mut bytes = sample();
    // The fourth record, bus b's 3-byte message: a 35-byte body and 5
    // bytes of zero padding.
    let mut at = HEADER_V2;
    for _ in 0..3 {
        let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        at += 8 + len.div_ceil(8) * 8 + 8;
    }
    let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
    assert_eq!(len % 8, 3, "a body that ends mid-word");
    bytes[at + 8 + len] = 1;
    let records: Vec<_> = Recording::new(&bytes[..]).unwrap().collect();
    assert_eq!(records.len(), 4, "three records, then the error");
    match &records[3] {
        Err(ReadError::Checksum { offset, .. }) => assert_eq!(*offset, at as u64),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_file_that_is_not_a_recording_is_refused_naming_its_magic() {
    let mut bytes = sample();
    bytes[0] = b'X';
    match Recording::new(&bytes[..]) {
        Err(e @ OpenRecordingError::BadMagic { expected, .. }) => {
            assert_eq!(expected, MAGIC);
            assert!(e.to_string().contains("expected 0x00434552424d4853"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    let mut bytes = sample();
    bytes[8] = 9;
    match Recording::new(&bytes[..]) {
        Err(
            e @ OpenRecordingError::Version {
                found: 9,
                expected: 2,
            },
        ) => {
            assert_eq!(
                e.to_string(),
                "recording version 9, this build reads 1 to 2"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_recorder_refuses_unknown_buses_wrong_sizes_and_empty_gaps_writing_nothing() {
    let mut r = Recorder::new(Vec::new()).unwrap();
    let a = r.add_bus("a", RecordedKind::Bus, 4).unwrap();
    let len = r.into_inner().len();
    let mut r = Recorder::new(Vec::new()).unwrap();
    r.add_bus("a", RecordedKind::Bus, 4).unwrap();
    assert!(matches!(
        r.message(1, 0, 0, 0, b"abcd"),
        Err(WriteError::UnknownBus { found: 1, buses: 1 })
    ));
    let e = r.message(a, 0, 0, 0, b"abc").unwrap_err();
    assert_eq!(e.to_string(), "payload is 3 bytes, bus 0 carries 4");
    assert!(matches!(
        r.gap(a, 0, 0),
        Err(WriteError::EmptyGap { bus: 0 })
    ));
    let long = "n".repeat(format::MAX_NAME + 1);
    assert!(matches!(
        r.add_bus(&long, RecordedKind::Bus, 4),
        Err(AddBusError::NameTooLong { .. })
    ));
    assert_eq!(r.into_inner().len(), len);
}

/// A small xorshift, so the test needs no crate and repeats.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn random_bytes_and_random_damage_never_panic_and_end_the_iteration() {
    let mut s = 0x1234_5678_9abc_def1u64;
    let rounds = if cfg!(miri) { 8 } else { 2000 };
    let good = sample();
    for round in 0..rounds {
        let mut bytes: Vec<u8> = if round % 2 == 0 {
            // A valid header before random bytes, so records get parsed.
            let n = (xorshift(&mut s) % 200) as usize;
            let mut b = good[..HEADER_V2].to_vec();
            b.extend((0..n).map(|_| xorshift(&mut s) as u8));
            b
        } else {
            good.clone()
        };
        // Damage a few bytes (of the valid file: past its header).
        for _ in 0..(xorshift(&mut s) % 4) {
            let i = HEADER_V2 + (xorshift(&mut s) as usize) % (bytes.len() - HEADER_V2).max(1);
            if i < bytes.len() {
                bytes[i] = xorshift(&mut s) as u8;
            }
        }
        let rec = Recording::new(&bytes[..]).unwrap();
        let mut n = 0;
        for item in rec {
            n += 1;
            assert!(n <= bytes.len(), "more records than bytes");
            if item.is_err() {
                break;
            }
        }
    }
}

#[test]
fn a_lying_length_is_refused_or_read_as_a_cut_record_without_allocating_it() {
    let mut bytes = Recorder::new(Vec::new()).unwrap().into_inner();
    bytes.extend_from_slice(&format::TYPE_MESSAGE.to_le_bytes());
    bytes.extend_from_slice(&u32::MAX.to_le_bytes());
    let mut rec = Recording::new(&bytes[..]).unwrap();
    assert!(matches!(
        rec.next(),
        Some(Err(ReadError::TooLong {
            offset: 32,
            found: u32::MAX,
            ..
        }))
    ));
    let mut bytes = Recorder::new(Vec::new()).unwrap().into_inner();
    bytes.extend_from_slice(&format::TYPE_MESSAGE.to_le_bytes());
    bytes.extend_from_slice(&(format::MAX_BODY as u32).to_le_bytes());
    assert!(Recording::new(&bytes[..]).unwrap().next().is_none());
}

/// Every kind, its geometry and type, messages of every length rule.
fn sample_all_kinds() -> Vec<u8> {
    let mut r = Recorder::new(Vec::new()).unwrap();
    let plain = r.add_bus("plain", RecordedKind::Bus, 8).unwrap();
    let many = r
        .add_bus_spec(
            &BusSpec::new("many", RecordedKind::ManyPublisher, 8)
                .slots(64)
                .msg_type(TypeFingerprint::of::<u64>())
                .lossless(true),
        )
        .unwrap();
    let pool = r
        .add_bus_spec(
            &BusSpec::new("pool", RecordedKind::Pool, 128)
                .slots(16)
                .blocks(32),
        )
        .unwrap();
    let stream = r
        .add_bus_spec(&BusSpec::new("stream", RecordedKind::Stream, 4096).slots(4096))
        .unwrap();
    let journaled = r
        .add_bus_spec(&BusSpec::new("journaled", RecordedKind::Journaled, 4))
        .unwrap();
    r.message(plain, 0, 10, 20, &[1; 8]).unwrap();
    r.message(many, 3, 11, 21, &5u64.to_le_bytes()).unwrap();
    r.message(pool, 0, 12, 22, b"").unwrap();
    r.message(pool, 1, 13, 23, &[7; 128]).unwrap();
    r.message(pool, 2, 14, 24, b"a pool block").unwrap();
    r.message(stream, 0, 15, 25, b"a record of any length")
        .unwrap();
    r.message(journaled, 9, 16, 26, b"abcd").unwrap();
    r.gap(many, 4, 2).unwrap();
    r.into_inner()
}

#[test]
fn every_kind_its_geometry_and_type_read_back_as_written() {
    let records = read_all(&sample_all_kinds()).unwrap();
    assert_eq!(records.len(), 13);
    let Record::Bus(many) = &records[1] else {
        panic!("{:?}", records[1])
    };
    assert_eq!(
        (many.kind, many.slots, many.lossless, many.msg_type.clone()),
        (
            RecordedKind::ManyPublisher,
            64,
            true,
            Some(TypeFingerprint::of::<u64>())
        )
    );
    let Record::Bus(pool) = &records[2] else {
        panic!()
    };
    assert_eq!(
        (pool.kind, pool.msg_size, pool.blocks),
        (RecordedKind::Pool, 128, 32)
    );
    let payloads: Vec<Vec<u8>> = records
        .iter()
        .filter_map(|r| match r {
            Record::Message(m) => Some(m.payload.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(payloads[2], b"");
    assert_eq!(payloads[3], vec![7; 128]);
    assert_eq!(payloads[4], b"a pool block");
    assert_eq!(payloads[5], b"a record of any length");
    assert!(matches!(
        records[12],
        Record::Gap(GapRecord {
            bus: 1,
            first: 4,
            count: 2
        })
    ));
}

#[test]
fn a_pool_message_longer_than_its_block_is_refused_writing_and_reading() {
    let mut r = Recorder::new(Vec::new()).unwrap();
    let pool = r
        .add_bus_spec(&BusSpec::new("pool", RecordedKind::Pool, 4))
        .unwrap();
    let e = r.message(pool, 0, 0, 0, b"12345").unwrap_err();
    assert!(
        matches!(
            e,
            WriteError::PayloadSize {
                found: 5,
                expected: 4,
                ..
            }
        ),
        "{e}"
    );
    // Forged: a whole, checked record one byte too long.
    let mut bytes = r.into_inner();
    let at = bytes.len() as u64;
    let mut body = vec![0u8; format::MESSAGE_FIXED];
    body.extend_from_slice(b"12345");
    format::frame(&mut bytes, format::TYPE_MESSAGE, &body, &[]);
    let got: Vec<_> = Recording::new(&bytes[..]).unwrap().collect();
    match &got[1] {
        Err(ReadError::BodyLength {
            offset,
            found: 37,
            expected: 36,
        }) => assert_eq!(*offset, at),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_bus_record_whose_name_lengths_lie_is_an_error_not_a_panic() {
    let mut r = Recorder::new(Vec::new()).unwrap();
    r.add_bus("ab", RecordedKind::Bus, 4).unwrap();
    let good = r.into_inner();
    // The bus name's length is at body offset 52; the body at 32 + 8.
    for lie in [0u32, 1, 3, 5000, u32::MAX] {
        let mut bytes = good[..HEADER_V2].to_vec();
        let mut body = good[HEADER_V2 + 8..HEADER_V2 + 8 + 58].to_vec();
        body[52..56].copy_from_slice(&lie.to_le_bytes());
        format::frame(&mut bytes, format::TYPE_BUS, &body, &[]);
        let got: Vec<_> = Recording::new(&bytes[..]).unwrap().collect();
        assert!(
            matches!(got[..], [Err(ReadError::NameLength { offset: 32, .. })]),
            "{lie}: {got:?}"
        );
    }
}

#[test]
fn a_bus_record_whose_type_name_or_bus_name_is_not_utf8_names_that_field() {
    let spec = BusSpec::new("ab", RecordedKind::Bus, 4).msg_type(TypeFingerprint {
        size: 4,
        align: 4,
        name_hash: 1,
        name: "tt".into(),
    });
    let mut r = Recorder::new(Vec::new()).unwrap();
    r.add_bus_spec(&spec).unwrap();
    let good = r.into_inner();
    // The body at 32 + 8: 56 fixed bytes, the type name, the bus name.
    let body = &good[HEADER_V2 + 8..HEADER_V2 + 8 + 60];
    for (at, field) in [(56, "message type name"), (58, "bus name")] {
        let mut body = body.to_vec();
        body[at] = 0xff;
        let mut bytes = good[..HEADER_V2].to_vec();
        format::frame(&mut bytes, format::TYPE_BUS, &body, &[]);
        let got: Vec<_> = Recording::new(&bytes[..]).unwrap().collect();
        let [Err(e)] = &got[..] else {
            panic!("{got:?}")
        };
        assert_eq!(
            e.to_string(),
            format!("record at offset 32: the {field} is not UTF-8")
        );
    }
}

/// A version 1 file, made by hand from its page (16-byte header, 16-byte
/// bus body).
fn version_1_file() -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&MAGIC.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    let mut bus = Vec::new();
    for w in [0u32, 1, 2, 0] {
        bus.extend_from_slice(&w.to_le_bytes());
    }
    bus.extend_from_slice(b"old");
    format::frame(&mut b, format::TYPE_BUS, &bus, &[]);
    let mut msg = vec![0u8; format::MESSAGE_FIXED];
    msg[8..16].copy_from_slice(&4u64.to_le_bytes());
    format::frame(&mut b, format::TYPE_MESSAGE, &msg, b"hi");
    b
}

#[test]
fn a_version_1_file_still_reads_and_its_rules_still_hold() {
    let records = read_all(&version_1_file()).unwrap();
    assert!(
        matches!(&records[0], Record::Bus(b) if b.name == "old" && b.msg_type.is_none() && b.msg_size == 2)
    );
    assert!(matches!(&records[1], Record::Message(m) if m.seq == 4 && m.payload == b"hi"));
    // A kind of version 2 in a version 1 file is unknown there.
    let mut b = version_1_file();
    b.truncate(16);
    let mut bus = Vec::new();
    for w in [0u32, 3, 2, 0] {
        bus.extend_from_slice(&w.to_le_bytes());
    }
    format::frame(&mut b, format::TYPE_BUS, &bus, &[]);
    let got: Vec<_> = Recording::new(&b[..]).unwrap().collect();
    assert!(
        matches!(
            got[..],
            [Err(ReadError::UnknownKind {
                offset: 16,
                found: 3
            })]
        ),
        "{got:?}"
    );
}

#[test]
fn every_truncation_of_every_kind_reads_as_a_prefix_and_damage_never_panics() {
    for bytes in [sample_all_kinds(), version_1_file()] {
        let whole = read_all(&bytes).unwrap();
        for cut in (0..bytes.len()).step_by(if cfg!(miri) { 7 } else { 1 }) {
            if let Ok(rec) = Recording::new(&bytes[..cut]) {
                let got = rec.collect::<Result<Vec<_>, _>>().unwrap();
                assert_eq!(got[..], whole[..got.len()], "cut at {cut}");
            }
        }
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..if cfg!(miri) { 8 } else { 3000 } {
            let mut b = bytes.clone();
            for _ in 0..1 + xorshift(&mut s) % 3 {
                let i = (xorshift(&mut s) as usize) % b.len();
                b[i] = xorshift(&mut s) as u8;
            }
            if let Ok(rec) = Recording::new(&b[..]) {
                assert!(rec.take(b.len()).count() <= b.len());
            }
        }
    }
}
