//! Group names to numbers (`create --group NAME`), through the C library's
//! `getgrnam_r`, so that every source the system's NSS configuration names
//! (files, LDAP, sssd) is asked, as `chgrp` would.

use std::ffi::CString;
use std::io;

/// The largest buffer a lookup is given: a group with more members than
/// fit is an error, never an endless loop of growing buffers.
const MAX_BUF: usize = 1 << 20;

/// The gid of the group named `name`; `Ok(None)` where there is none.
pub fn gid_of(name: &str) -> io::Result<Option<u32>> {
    let cname = CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the name"))?;
    let mut buf = vec![0 as libc::c_char; 1024];
    loop {
        // SAFETY: all-zero is a valid `group` (null pointers, gid 0).
        let mut grp: libc::group = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::group = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call: `cname` is a
        // NUL-terminated string, `grp` and `found` are live locals, `buf`
        // is writable for `buf.len()` bytes; the result borrows `buf`,
        // and only its gid (a copy) is kept.
        let rc = unsafe {
            libc::getgrnam_r(
                cname.as_ptr(),
                &mut grp,
                buf.as_mut_ptr(),
                buf.len(),
                &mut found,
            )
        };
        match rc {
            0 if found.is_null() => return Ok(None),
            0 => return Ok(Some(grp.gr_gid)),
            libc::ERANGE if buf.len() < MAX_BUF => buf.resize(buf.len() * 4, 0),
            // glibc says "not found" with these too, for some sources.
            libc::ENOENT | libc::ESRCH | libc::EBADF | libc::EPERM => return Ok(None),
            e => return Err(io::Error::from_raw_os_error(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::gid_of;

    #[test]
    fn root_is_group_zero_and_a_name_no_system_has_is_none() {
        assert_eq!(gid_of("root").expect("lookup"), Some(0));
        assert_eq!(gid_of("shmbus-no-such-group-F").expect("lookup"), None);
        assert!(gid_of("a\0b").is_err());
    }
}
