//! Prints whether the running kernel has IORING_OP_GETDENTS and its
//! readdirplus mode, and why not.
//!
//! ```text
//! cargo run -p io-uring-getdents --example detect
//! ```

fn main() {
    println!("{}", io_uring_getdents::detect::cached());
    println!("{}", io_uring_getdents::detect::plus_cached());
}
