//! The one place the ring code gets its atomics from.
//!
//! Under `cfg(loom)` these are loom's model-checked types, so `cargo test`
//! with `RUSTFLAGS="--cfg loom"` explores the interleavings of the *real*
//! slot protocol in `bus`, not of a copy of it. Everything that touches
//! shared memory imports from here, never from `std::sync::atomic` directly
//! (process-local flags and counters, such as the journal publisher's, may).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};

#[cfg(loom)]
pub(crate) use loom::hint::spin_loop;
#[cfg(not(loom))]
pub(crate) use std::hint::spin_loop;

#[cfg(loom)]
pub(crate) use loom::thread::yield_now;
#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;

/// Asks the CPU to bring `word`'s cache line in for reading, now, without
/// waiting for it: a hint, not a memory access (it cannot fault, and in
/// the memory model it reads nothing), so it changes no ordering proof.
/// A subscriber spinning on a slot's stamp uses it on the slot's later
/// lines, so that when the stamp says "done" those lines are on their way
/// (or here) instead of being fetched one after the other. A no-op under
/// loom and Miri, and off x86_64.
#[inline(always)]
pub(crate) fn prefetch(word: &AtomicU64) {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    // SAFETY: `_mm_prefetch` is a hint that never faults and reads nothing
    // in the abstract machine; the pointer is a live reference's anyway.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            word.as_ptr().cast::<i8>(),
        );
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
    let _ = word;
}

/// Asks the CPU to bring `word`'s cache line in for writing (`prefetchw`:
/// exclusive, other copies invalidated), without waiting for it. A hint
/// like [`prefetch`]: it stores nothing and changes no ordering proof. The
/// publisher uses it on the next slot's payload lines right after a
/// publish, so that the next write finds them owned instead of waiting on
/// the store buffer for ownership of each line in turn. A no-op under
/// loom and Miri and off x86_64.
///
/// # Safety
/// The CPU has the instruction: [`prefetch_write_available`] said so
/// (asked once, when a ring is made, not per line of every publish).
#[inline(always)]
pub(crate) unsafe fn prefetch_write(word: &AtomicU64) {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    // SAFETY: `prefetchw` is a hint that never faults and neither reads nor
    // writes memory in the abstract machine; the caller checked that this
    // CPU has it.
    unsafe {
        core::arch::asm!(
            "prefetchw [{p}]",
            p = in(reg) word.as_ptr(),
            options(nostack, preserves_flags, readonly)
        );
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
    let _ = word;
}

/// Whether [`prefetch_write`] may be called: on x86_64 a CPU with
/// `prefetchw`; elsewhere, and under loom and Miri, where it is a no-op,
/// false (so nothing calls it).
pub(crate) fn prefetch_write_available() -> bool {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    return has_prefetchw();
    #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
    false
}

/// Whether this CPU has `prefetchw` (CPUID 8000_0001h ECX bit 8, PRFCHW;
/// std's feature detection does not name it). Asked once per process.
#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
fn has_prefetchw() -> bool {
    use std::sync::atomic::AtomicU8;
    // 0: not asked yet, 1: no, 2: yes. Process-local.
    static KNOWN: AtomicU8 = AtomicU8::new(0);
    match KNOWN.load(std::sync::atomic::Ordering::Relaxed) {
        0 => {
            let max = core::arch::x86_64::__cpuid(0x8000_0000).eax;
            let yes =
                max >= 0x8000_0001 && core::arch::x86_64::__cpuid(0x8000_0001).ecx & (1 << 8) != 0;
            KNOWN.store(1 + u8::from(yes), std::sync::atomic::Ordering::Relaxed);
            yes
        }
        known => known == 2,
    }
}
