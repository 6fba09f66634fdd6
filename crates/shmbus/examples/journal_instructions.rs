//! Publishes `N` 16-byte keyed messages on a 1024-slot bus with no
//! subscriber, for counting the publishing thread's instructions per
//! message under callgrind, by cause: `ring` (the plain bus), `stage` (the
//! journal's append alone: the record's stores and its check), `journaled`
//! (both, as `publish` does). The journal's file is preallocated for the
//! run, so growth stays off the count (it is the grower thread's, and the
//! kernel's). Run it with two `N` and take the difference, which cancels
//! the start-up:
//! `valgrind --tool=callgrind --separate-threads=yes target/release/examples/journal_instructions journaled 1000000 DIR`.

use shmbus::journal::{self, Keyed};
use shmbus::{BusOptions, Publisher};

#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Kv {
    key: u64,
    val: u64,
}

impl shmbus::Message for Kv {
    const NAME: &'static str = "example.Kv";
}

impl Keyed for Kv {
    fn key(&self) -> u64 {
        self.key
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("journaled", String::as_str);
    let n: u64 = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let dir = std::path::PathBuf::from(args.get(3).map_or("/tmp", String::as_str));
    let name = format!("/dev/shm/shmbus-jinstr-{}", std::process::id());
    let opts = BusOptions::new(1024);
    match mode {
        "ring" => {
            let mut p = Publisher::<Kv>::create(&name, &opts)?;
            for i in 0..n {
                p.publish(std::hint::black_box(&Kv {
                    key: i % 1000,
                    val: i,
                }));
            }
        }
        "stage" | "journaled" => {
            let file = dir.join(format!("jinstr-{}.journal", std::process::id()));
            let j = journal::Options::new(&file)
                .preallocate_bytes(usize::try_from((n + 1024) * 32)? + (1 << 20));
            let mut p = journal::Publisher::<Kv>::create(&name, &opts, &j)?;
            for i in 0..n {
                let m = Kv {
                    key: i % 1000,
                    val: i,
                };
                if mode == "stage" {
                    p.stage(std::hint::black_box(&m))?;
                } else {
                    p.publish(std::hint::black_box(&m))?;
                }
            }
            drop(p);
            let _ = std::fs::remove_file(&file);
        }
        other => return Err(format!("mode {other}: ring, stage or journaled").into()),
    }
    shmbus::remove(&name)?;
    Ok(())
}
