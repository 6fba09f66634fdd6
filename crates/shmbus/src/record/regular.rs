//! Opening a recording's files to read them: parts and indexes are regular
//! files, and whatever else stands at their names is refused at once.

use std::fs::File;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Opens a part or an index to read it: a regular file only (a FIFO put
/// in a part's place would hang the open and every read).
pub(crate) fn open_regular(path: &Path) -> io::Result<File> {
    // Miri's open takes no O_NONBLOCK (and makes no FIFO).
    let nonblock = if cfg!(miri) { 0 } else { libc::O_NONBLOCK };
    let file = File::options()
        .read(true)
        .custom_flags(nonblock)
        .open(path)?;
    if !file.metadata()?.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}
