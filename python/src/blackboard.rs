//! The blackboard (the core's `blackboard`): the latest value of each key,
//! one writer, any number of readers. One class, `Blackboard`: `create`
//! and `attach` give a writer that also reads, `open` a reader. Keys and
//! values are bytes of the table's sizes, or with `key_dtype` / `dtype`
//! NumPy scalars and records of those sizes (`shmbus._support` converts,
//! so NumPy is imported only then). `Blackboard.entry(key)` gives a
//! `BlackboardEntry`: the key resolved once (the core's `EntryReader`,
//! and on a writable board its `EntryWriter`), for a loop that reads or
//! writes the same keys over and over.

use std::sync::{Mutex, MutexGuard};

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyType};
use shmbus::{
    OpenOptions,
    blackboard::{self, EntryReader, EntryWriter, GetError, Reader, Writer},
};

use crate::aio::Receiving;
use crate::errors;
use crate::handle::{Handle, handle_methods};
use crate::{Until, owned_bytes, support, wait_in_slices};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBlackboard>()?;
    m.add_class::<PyBlackboardEntry>()
}

/// A writer (absent for a handle from `open`) and a reader of one table.
pub(crate) struct Board {
    writer: Option<Writer<[u8], [u8]>>,
    reader: Reader<[u8], [u8]>,
}

/// A blackboard: the latest value of each key, read in O(1).
#[pyclass(module = "shmbus", name = "Blackboard", frozen)]
pub struct PyBlackboard {
    inner: Handle<Board>,
    key_dtype: Option<Py<PyAny>>,
    dtype: Option<Py<PyAny>>,
}

/// `dtype` as a NumPy dtype checked against the table's `size` bytes
/// (`TypeMismatchError` if its itemsize differs), or `None`.
fn checked(
    py: Python<'_>,
    dtype: Option<&Bound<'_, PyAny>>,
    size: usize,
) -> PyResult<Option<Py<PyAny>>> {
    dtype
        .map(|d| Ok(support(py, "check_dtype")?.call1((d, size))?.unbind()))
        .transpose()
}

/// The itemsize of `dtype` (NumPy imported for it), for `create`.
fn itemsize(py: Python<'_>, dtype: &Bound<'_, PyAny>) -> PyResult<u32> {
    support(py, "numpy")?
        .call0()?
        .call_method1("dtype", (dtype,))?
        .getattr("itemsize")?
        .extract()
}

impl PyBlackboard {
    fn new(
        py: Python<'_>,
        board: Board,
        key_dtype: Option<&Bound<'_, PyAny>>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let key_dtype = checked(py, key_dtype, board.reader.key_size())?;
        let dtype = checked(py, dtype, board.reader.value_size())?;
        Ok(PyBlackboard {
            inner: Handle::new(board, "the blackboard is closed"),
            key_dtype,
            dtype,
        })
    }

    /// A key or value as the table's bytes.
    fn encode(
        &self,
        py: Python<'_>,
        obj: &Bound<'_, PyAny>,
        dtype: &Option<Py<PyAny>>,
        size: usize,
        field: &str,
    ) -> PyResult<Vec<u8>> {
        let bytes = support(py, "field_bytes")?.call1((obj, dtype.as_ref(), size, field))?;
        owned_bytes(&bytes)
    }

    /// The table's bytes as the caller's: bytes, or a NumPy scalar.
    fn decode(
        &self,
        py: Python<'_>,
        bytes: &[u8],
        dtype: &Option<Py<PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let b = PyBytes::new(py, bytes);
        match dtype {
            None => Ok(b.into_any().unbind()),
            Some(d) => Ok(support(py, "field_value")?.call1((b, d))?.unbind()),
        }
    }

    /// A (key, value or None, version) tuple of an entry.
    fn item(
        &self,
        py: Python<'_>,
        key: &[u8],
        value: Option<&[u8]>,
        version: u64,
    ) -> PyResult<Py<PyAny>> {
        let key = self.decode(py, key, &self.key_dtype)?;
        let value = match value {
            Some(v) => self.decode(py, v, &self.dtype)?,
            None => py.None(),
        };
        (key, value, version).into_py_any(py)
    }

    /// The entries of `entries` (all, or changed since), as a list.
    fn view(&self, py: Python<'_>, since: Option<u64>) -> PyResult<Py<PyList>> {
        let items = self.inner.with(py, |board, _| {
            let entries = match since {
                Some(v) => board.reader.changed_since(v),
                None => board.reader.entries(),
            };
            entries
                .collect::<Result<Vec<_>, GetError>>()
                .map_err(|e| errors::board_get(py, e))
        })?;
        let list = PyList::empty(py);
        for item in items {
            list.append(self.item(py, &item.key, item.value.as_deref(), item.version)?)?;
        }
        Ok(list.unbind())
    }
}

#[pymethods]
impl PyBlackboard {
    /// Creates the blackboard `name` for at most `keys` keys, this handle
    /// its one writer. Key and value sizes in bytes (`key_size`,
    /// `value_size`), or the itemsizes of `key_dtype` and `dtype`;
    /// `key_type` / `value_type` are schema names the table records.
    #[classmethod]
    #[pyo3(signature = (name, *, keys, key_size = None, value_size = None, key_dtype = None, dtype = None, key_type = None, value_type = None, type_align = 1, mode = 0o600))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        keys: u64,
        key_size: Option<u32>,
        value_size: Option<u32>,
        key_dtype: Option<&Bound<'_, PyAny>>,
        dtype: Option<&Bound<'_, PyAny>>,
        key_type: Option<&str>,
        value_type: Option<&str>,
        type_align: u32,
        mode: u32,
    ) -> PyResult<Self> {
        let size =
            |given: Option<u32>, dtype: Option<&Bound<'_, PyAny>>, what: &str| match (given, dtype)
            {
                (Some(s), _) => Ok(s),
                (None, Some(d)) => itemsize(py, d),
                (None, None) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "a blackboard needs its {what} size: give {what}_size or a {what} dtype"
                ))),
            };
        let mut opts = blackboard::Options::new(keys)
            .key_size(size(key_size, key_dtype, "key")?)
            .value_size(size(value_size, dtype, "value")?)
            .mode(mode);
        if let Some(t) = key_type {
            opts = opts.key_type(t, type_align);
        }
        if let Some(t) = value_type {
            opts = opts.value_type(t, type_align);
        }
        let writer =
            Writer::<[u8], [u8]>::create(name, &opts).map_err(|e| errors::create(py, e))?;
        let reader = Reader::<[u8], [u8]>::open(name, &OpenOptions::default())
            .map_err(|e| errors::open(py, e))?;
        Self::new(
            py,
            Board {
                writer: Some(writer),
                reader,
            },
            key_dtype,
            dtype,
        )
    }

    /// Becomes the writer of the existing blackboard `name` (its writer
    /// gone: `RoleTakenError` while one lives).
    #[classmethod]
    #[pyo3(signature = (name, *, key_dtype = None, dtype = None))]
    fn attach(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        key_dtype: Option<&Bound<'_, PyAny>>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let writer = Writer::<[u8], [u8]>::attach(name, &OpenOptions::default())
            .map_err(|e| errors::attach(py, e))?;
        let reader = Reader::<[u8], [u8]>::open(name, &OpenOptions::default())
            .map_err(|e| errors::open(py, e))?;
        Self::new(
            py,
            Board {
                writer: Some(writer),
                reader,
            },
            key_dtype,
            dtype,
        )
    }

    /// Opens the blackboard `name` to read. With `key_dtype` / `dtype`,
    /// keys and values are NumPy scalars of them (`TypeMismatchError` if
    /// an itemsize is not the table's size).
    #[classmethod]
    #[pyo3(signature = (name, *, key_dtype = None, dtype = None))]
    fn open(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        key_dtype: Option<&Bound<'_, PyAny>>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let reader = Reader::<[u8], [u8]>::open(name, &OpenOptions::default())
            .map_err(|e| errors::open(py, e))?;
        Self::new(
            py,
            Board {
                writer: None,
                reader,
            },
            key_dtype,
            dtype,
        )
    }

    /// Sets `key` to `value`; returns the write's version.
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<u64> {
        let (key_size, value_size) = self
            .inner
            .with(py, |b, _| Ok((b.reader.key_size(), b.reader.value_size())))?;
        let key = self.encode(py, key, &self.key_dtype, key_size, "key")?;
        let value = self.encode(py, value, &self.dtype, value_size, "value")?;
        self.inner.with(py, |board, _| {
            let writer = board.writer.as_mut().ok_or_else(|| errors::read_only(py))?;
            writer
                .put_bytes(&key, &value)
                .map_err(|e| errors::board_put(py, e))
        })
    }

    /// Removes `key`; returns the removal's version, or None if the key
    /// was not there.
    fn remove(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<u64>> {
        let key_size = self.inner.with(py, |b, _| Ok(b.reader.key_size()))?;
        let key = self.encode(py, key, &self.key_dtype, key_size, "key")?;
        self.inner.with(py, |board, _| {
            let writer = board.writer.as_mut().ok_or_else(|| errors::read_only(py))?;
            writer
                .remove_bytes(&key)
                .map_err(|e| errors::board_remove(py, e))
        })
    }

    /// `(value, version)` of `key`, or None if it is not in the table.
    fn get(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<(Py<PyAny>, u64)>> {
        let key_size = self.inner.with(py, |b, _| Ok(b.reader.key_size()))?;
        let key = self.encode(py, key, &self.key_dtype, key_size, "key")?;
        let found = self.inner.with(py, |board, _| {
            board
                .reader
                .get_bytes(&key)
                .map(|f| f.map(|(v, version)| (v.to_vec(), version)))
                .map_err(|e| errors::board_get(py, e))
        })?;
        found
            .map(|(v, version)| Ok((self.decode(py, &v, &self.dtype)?, version)))
            .transpose()
    }

    /// Every live key: a list of `(key, value, version)`, in table order.
    fn items(&self, py: Python<'_>) -> PyResult<Py<PyList>> {
        self.view(py, None)
    }

    /// The entries written after version `since`: `(key, value, version)`,
    /// value None for a removed key.
    fn changed_since(&self, py: Python<'_>, since: u64) -> PyResult<Py<PyList>> {
        self.view(py, Some(since))
    }

    /// Waits (the GIL released) until the table's version passes `since`:
    /// the new version, or None at `timeout` (seconds; None: forever).
    #[pyo3(signature = (since, timeout = None))]
    fn wait(&self, py: Python<'_>, since: u64, timeout: Option<f64>) -> PyResult<Option<u64>> {
        let until = Until::from_timeout(timeout)?;
        self.inner.with(py, |board, cancel| {
            wait_in_slices(py, until, cancel, |wait| {
                board.reader.wait_changed(since, wait)
            })
        })
    }

    /// Waits (the GIL released) until `key`'s entry has a version past
    /// `since`: `(value, version)` (value None if it was removed), or None
    /// at `timeout`.
    #[pyo3(signature = (key, since, timeout = None))]
    fn wait_key(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        since: u64,
        timeout: Option<f64>,
    ) -> PyResult<Option<(Py<PyAny>, u64)>> {
        let until = Until::from_timeout(timeout)?;
        let key_size = self.inner.with(py, |b, _| Ok(b.reader.key_size()))?;
        let key = self.encode(py, key, &self.key_dtype, key_size, "key")?;
        let found = self.inner.with(py, |board, cancel| {
            let found = wait_in_slices(py, until, cancel, |wait| {
                board.reader.wait_key(&key, since, wait).transpose()
            })?;
            found.transpose().map_err(|e| errors::board_get(py, e))
        })?;
        found
            .map(|f| {
                let value = match f.value {
                    Some(v) => self.decode(py, &v, &self.dtype)?,
                    None => py.None(),
                };
                Ok((value, f.version))
            })
            .transpose()
    }

    /// The table's version: the last version written (0 before any).
    #[getter]
    fn version(&self, py: Python<'_>) -> PyResult<u64> {
        self.inner.with(py, |b, _| Ok(b.reader.version()))
    }

    /// Keys the table holds.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.inner.with(py, |b, _| Ok(b.reader.keys() as usize))
    }

    /// `(key, value, version)` of every live key (a list's iterator).
    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(self.items(py)?.bind(py).try_iter()?.into_any().unbind())
    }

    #[getter]
    fn capacity(&self, py: Python<'_>) -> PyResult<u64> {
        self.inner.with(py, |b, _| Ok(b.reader.capacity()))
    }

    #[getter]
    fn key_size(&self, py: Python<'_>) -> PyResult<usize> {
        self.inner.with(py, |b, _| Ok(b.reader.key_size()))
    }

    #[getter]
    fn value_size(&self, py: Python<'_>) -> PyResult<usize> {
        self.inner.with(py, |b, _| Ok(b.reader.value_size()))
    }

    /// Whether this handle writes (from `create` or `attach`).
    #[getter]
    fn writable(&self, py: Python<'_>) -> PyResult<bool> {
        self.inner.with(py, |b, _| Ok(b.writer.is_some()))
    }

    /// A handle on `key`, resolved once: its `get()` (and on a writable
    /// board its `put(value)` and `remove()`) goes where the key was last
    /// found, with no hash and no probe, and finds the key again when it
    /// moves. The key need not be in the table yet.
    fn entry(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>) -> PyResult<PyBlackboardEntry> {
        let py = slf.py();
        let this = slf.get();
        let (key_size, value_size) = this
            .inner
            .with(py, |b, _| Ok((b.reader.key_size(), b.reader.value_size())))?;
        let key = this.encode(py, key, &this.key_dtype, key_size, "key")?;
        let (reader, writer) = this.inner.with(py, |board, _| {
            let reader = board.reader.entry(&key);
            let writer = board.writer.as_ref().map(|w| w.entry(&key)).transpose();
            Ok((reader, writer))
        })?;
        let reader = reader.map_err(|e| errors::board_entry(py, e))?;
        let writer = writer.map_err(|e| errors::board_entry(py, e))?;
        Ok(PyBlackboardEntry {
            board: slf.clone().unbind(),
            key,
            value_size,
            reader: Mutex::new(reader),
            writer: Mutex::new(writer),
        })
    }
}

handle_methods!(
    PyBlackboard.inner,
    /// Closes the handle (a writer's role is free for another to attach).
    fn close
);

/// The async wait is a receive whose "message" is the table's version
/// once it passes the version the wait started from: that version is the
/// reader's `seen` (a `Select` member is ready when the version passes
/// it), set at the start of each turn, so the waiter thread's wake-up and
/// the look agree on what is awaited. Python has no other use of `seen`.
impl Receiving for PyBlackboard {
    type State = Board;
    fn handle(&self) -> &Handle<Board> {
        &self.inner
    }
    fn try_next(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.inner
            .with(py, |b, _| {
                let v = b.reader.version();
                Ok((v > b.reader.seen()).then_some(v))
            })?
            .map(|v| v.into_py_any(py))
            .transpose()
    }
    fn member(state: &Board) -> &dyn shmbus::select::Selectable {
        &state.reader
    }
}

#[pymethods]
impl PyBlackboard {
    /// One turn of `wait_async(since)` (`shmbus._support`): `(True,
    /// version)`, or `(False, an _Armed)`.
    fn _wait_or_arm(
        &self,
        py: Python<'_>,
        since: u64,
        bell: PyRef<'_, crate::aio::Bell>,
        token: u64,
    ) -> PyResult<(bool, Py<PyAny>)> {
        self.inner.with(py, |b, _| {
            b.reader.mark_seen(since);
            Ok(())
        })?;
        crate::aio::recv_or_arm(self, py, &bell, token)
    }

    /// `await board.wait_async(since)`: waits, without blocking the event
    /// loop (the waiter thread, as `recv_async`), until the table's
    /// version passes `since`; the new version. Cancel-safe (it reads
    /// nothing). With no live writer it waits until one writes.
    fn wait_async<'py>(slf: &Bound<'py, Self>, since: u64) -> PyResult<Bound<'py, PyAny>> {
        crate::support(slf.py(), "board_wait_async")?.call1((slf, since))
    }

    /// `await board.wait_key_async(key, since)`: waits as `wait_async`
    /// until `key`'s entry has a version past `since`: `(value, version)`
    /// (value None if it was removed).
    fn wait_key_async<'py>(
        slf: &Bound<'py, Self>,
        key: &Bound<'py, PyAny>,
        since: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::support(slf.py(), "board_wait_key_async")?.call1((slf, key, since))
    }
}

/// A handle on one key of a blackboard (`Blackboard.entry(key)`): `get()`
/// reads the key where it was last found, `put(value)` and `remove()`
/// write it through the board's writer. It follows its key when it is
/// removed and put again elsewhere, and never reads or writes another key.
#[pyclass(module = "shmbus", name = "BlackboardEntry", frozen)]
pub struct PyBlackboardEntry {
    /// The board: its writer puts, its `dtype` decodes, and once it is
    /// closed so is every call here.
    board: Py<PyBlackboard>,
    /// The key, as the table's bytes.
    key: Vec<u8>,
    /// The table's value size, what a put's value is encoded to.
    value_size: usize,
    /// Its own share of the table: a get takes no lock of the board's.
    reader: Mutex<EntryReader<[u8], [u8]>>,
    /// `None` on a board opened to read.
    writer: Mutex<Option<EntryWriter<[u8], [u8]>>>,
}

/// Only Rust runs while one is held (errors become exceptions after it
/// is released), so its holder never needs the GIL that a thread waiting
/// here holds: the wait is that of one get or put.
fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[pymethods]
impl PyBlackboardEntry {
    /// `(value, version)` of the key, or None if it is not in the table
    /// now (as `Blackboard.get`).
    fn get(&self, py: Python<'_>) -> PyResult<Option<(Py<PyAny>, u64)>> {
        let board = self.board.get();
        board.inner.check_open(py)?;
        let found = locked(&self.reader)
            .get_bytes()
            .map(|f| f.map(|(v, version)| (v.to_vec(), version)));
        found
            .map_err(|e| errors::board_get(py, e))?
            .map(|(v, version)| Ok((board.decode(py, &v, &board.dtype)?, version)))
            .transpose()
    }

    /// Sets the key to `value` through the board's writer; returns the
    /// write's version (as `Blackboard.put`).
    fn put(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<u64> {
        let board = self.board.get();
        board.inner.check_open(py)?;
        let value = board.encode(py, value, &board.dtype, self.value_size, "value")?;
        board.inner.with(py, |b, _| {
            let writer = b.writer.as_mut().ok_or_else(|| errors::read_only(py))?;
            let put = locked(&self.writer)
                .as_mut()
                .map(|entry| writer.put_entry_bytes(entry, &value));
            put.ok_or_else(|| errors::read_only(py))?
                .map_err(|e| errors::board_put(py, e))
        })
    }

    /// Removes the key through the board's writer; returns the removal's
    /// version, or None if the key was not there (as `Blackboard.remove`).
    /// The entry stays: a later `put` puts the key back.
    fn remove(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        self.board.get().inner.with(py, |b, _| {
            let writer = b.writer.as_mut().ok_or_else(|| errors::read_only(py))?;
            let removed = locked(&self.writer)
                .as_mut()
                .map(|entry| writer.remove_entry(entry));
            removed
                .ok_or_else(|| errors::read_only(py))?
                .map_err(|e| errors::board_remove(py, e))
        })
    }

    /// The key (a NumPy scalar with the board's `key_dtype`).
    #[getter]
    fn key(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let board = self.board.get();
        board.decode(py, &self.key, &board.key_dtype)
    }

    /// The board the entry was made by.
    #[getter]
    fn board(&self, py: Python<'_>) -> Py<PyBlackboard> {
        self.board.clone_ref(py)
    }
}
