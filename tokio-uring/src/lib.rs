//! Async directory streams on tokio-uring (being written).
