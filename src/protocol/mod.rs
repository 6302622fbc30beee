//! Wire formats <-> typed values: pure functions, no I/O; never imports `store`, `query`, `batch` or `server`.

pub mod batch;
