use super::format::{HEADER_LEN, MAGIC};
use super::*;

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
            msg_size: 3
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
                assert_eq!((found, expected), (cut, HEADER_LEN));
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
    // The first bus record starts at 16; its name's byte is at 16 + 8 + 16.
    bytes[HEADER_LEN + 8 + 16] ^= 1;
    let mut rec = Recording::new(&bytes[..]).unwrap();
    match rec.next() {
        Some(Err(e @ ReadError::Checksum { offset: 16, .. })) => {
            assert!(
                e.to_string().starts_with("record at offset 16: check"),
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(rec.next().is_none());
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
                expected: 1,
            },
        ) => {
            assert_eq!(e.to_string(), "recording version 9, this build reads 1");
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
            let mut b = good[..HEADER_LEN].to_vec();
            b.extend((0..n).map(|_| xorshift(&mut s) as u8));
            b
        } else {
            good.clone()
        };
        // Damage a few bytes (of the valid file: past its header).
        for _ in 0..(xorshift(&mut s) % 4) {
            let i = HEADER_LEN + (xorshift(&mut s) as usize) % (bytes.len() - HEADER_LEN).max(1);
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
            offset: 16,
            found: u32::MAX,
            ..
        }))
    ));
    let mut bytes = Recorder::new(Vec::new()).unwrap().into_inner();
    bytes.extend_from_slice(&format::TYPE_MESSAGE.to_le_bytes());
    bytes.extend_from_slice(&(format::MAX_BODY as u32).to_le_bytes());
    assert!(Recording::new(&bytes[..]).unwrap().next().is_none());
}
