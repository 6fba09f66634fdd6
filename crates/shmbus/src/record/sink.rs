//! [`Sink`]: where a [`Capture`](super::Capture) writes what it receives.

use super::BusSpec;
use super::error::{AddBusError, WriteError};
use super::files::FileRecorder;

/// Where a [`Capture`](super::Capture) writes: a native recording
/// ([`FileRecorder`]) or any other format that takes buses, messages and
/// gaps (the `shmbus-mcap` crate writes MCAP files). A sink reports its
/// failures with the native recorder's errors: one it could not write
/// names its file in [`WriteError::File`] (or [`WriteError::Io`]).
///
/// # Examples
/// ```
/// use shmbus::record::{AddBusError, BusSpec, RecordedKind, Sink, WriteError};
///
/// /// Counts what it is given.
/// #[derive(Debug, Default)]
/// struct Count { buses: u32, messages: u64, missed: u64 }
///
/// impl Sink for Count {
///     fn add_bus(&mut self, _spec: &BusSpec) -> Result<u32, AddBusError> {
///         self.buses += 1;
///         Ok(self.buses - 1)
///     }
///     fn message(&mut self, _bus: u32, _seq: u64, _mono: u64, _wall: u64, _payload: &[u8]) -> Result<(), WriteError> {
///         self.messages += 1;
///         Ok(())
///     }
///     fn gap(&mut self, _bus: u32, _first: u64, count: u64) -> Result<(), WriteError> {
///         self.missed += count;
///         Ok(())
///     }
///     fn flush(&mut self) -> Result<(), WriteError> {
///         Ok(())
///     }
/// }
///
/// let mut sink = Count::default();
/// let bus = sink.add_bus(&BusSpec::new("ticks", RecordedKind::Bus, 8))?;
/// sink.message(bus, 0, 1, 2, &[0; 8])?;
/// assert_eq!((sink.buses, sink.messages), (1, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Sink {
    /// Declares a bus; its id in this sink (0, 1, 2, ... in order).
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, Rotation, Sink};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-sink-add-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let mut sink = FileRecorder::create(&dir.join("r.rec"), Rotation::default())?;
    /// assert_eq!(Sink::add_bus(&mut sink, &BusSpec::new("t", RecordedKind::Bus, 8))?, 0);
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`AddBusError`] if the sink cannot hold the bus (its name, its
    /// message size, too many buses) or cannot write its declaration.
    fn add_bus(&mut self, spec: &BusSpec) -> Result<u32, AddBusError>;

    /// Writes message `seq` of bus `bus`, received at `mono_ns`
    /// (CLOCK_MONOTONIC) and `wall_ns` (the wall clock, since the epoch).
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, Rotation, Sink};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-sink-msg-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let mut sink = FileRecorder::create(&dir.join("r.rec"), Rotation::default())?;
    /// let bus = Sink::add_bus(&mut sink, &BusSpec::new("t", RecordedKind::Bus, 8))?;
    /// Sink::message(&mut sink, bus, 0, 1, 2, &[0; 8])?;
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`WriteError`]: an unknown bus, a payload of the wrong size, a
    /// failed write.
    fn message(
        &mut self,
        bus: u32,
        seq: u64,
        mono_ns: u64,
        wall_ns: u64,
        payload: &[u8],
    ) -> Result<(), WriteError>;

    /// Writes that `count` messages of bus `bus` from `first` were missed.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{BusSpec, FileRecorder, RecordedKind, Rotation, Sink};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-sink-gap-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let mut sink = FileRecorder::create(&dir.join("r.rec"), Rotation::default())?;
    /// let bus = Sink::add_bus(&mut sink, &BusSpec::new("t", RecordedKind::Bus, 8))?;
    /// Sink::gap(&mut sink, bus, 0, 3)?;
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`WriteError`]: an unknown bus, a gap of 0, a failed write.
    fn gap(&mut self, bus: u32, first: u64, count: u64) -> Result<(), WriteError>;

    /// Puts what is buffered in the file: after it returns, a reader (and
    /// a recorder killed later) has everything written so far.
    ///
    /// # Examples
    /// ```
    /// use shmbus::record::{FileRecorder, Rotation, Sink};
    ///
    /// let dir = std::env::temp_dir().join(format!("shmbus-doc-sink-flush-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let mut sink = FileRecorder::create(&dir.join("r.rec"), Rotation::default())?;
    /// Sink::flush(&mut sink)?;
    /// std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`WriteError`] naming the file if a write fails.
    fn flush(&mut self) -> Result<(), WriteError>;
}

impl Sink for FileRecorder {
    fn add_bus(&mut self, spec: &BusSpec) -> Result<u32, AddBusError> {
        FileRecorder::add_bus(self, spec)
    }

    fn message(
        &mut self,
        bus: u32,
        seq: u64,
        mono_ns: u64,
        wall_ns: u64,
        payload: &[u8],
    ) -> Result<(), WriteError> {
        FileRecorder::message(self, bus, seq, mono_ns, wall_ns, payload)
    }

    fn gap(&mut self, bus: u32, first: u64, count: u64) -> Result<(), WriteError> {
        FileRecorder::gap(self, bus, first, count)
    }

    fn flush(&mut self) -> Result<(), WriteError> {
        FileRecorder::flush(self)
    }
}
