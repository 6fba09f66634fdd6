//! The C API of shmbus (stub).
