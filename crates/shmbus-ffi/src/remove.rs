//! Removing a bus or a stream by name, whatever its kind.

use std::ffi::c_char;

use crate::args::c_str;
use crate::entry::{entry, fail};
use crate::status::Status;

/// Removes the bus or stream `name` (a bare name lives in /dev/shm), and
/// its side files. Processes that have it open keep their mapping.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (no such bus, not a bus, a bad
/// name, ...).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_remove(name: *const c_char) -> Status {
    entry(|| {
        // SAFETY: NULL or NUL-terminated, by the contract.
        let name = unsafe { c_str(name, "name") }?;
        shmbus_core::remove(name).map_err(|e| fail(&format!("removing {name:?}"), e))?;
        Ok(Status::SHMBUS_OK)
    })
}
