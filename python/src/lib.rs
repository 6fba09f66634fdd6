//! The Python binding of shmbus (stub).
