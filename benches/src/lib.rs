//! Benchmark support (being written).
