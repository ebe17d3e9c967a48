//! Async directory streams on [tokio-uring](tokio_uring).
//!
//! [`fs::Dir`] lists a directory through io_uring. Where the kernel has
//! `IORING_OP_GETDENTS` (this project's kernel patch; detected and
//! verified by [`io_uring_getdents::detect`]), each read is one submission
//! chained to the previous by `d_off`. Elsewhere, that is on every released
//! kernel, the same API reads with `getdents64(2)` on tokio's blocking
//! pool, so the runtime thread never blocks. Opening (`OPENAT`), metadata
//! (`STATX`) and closing (`CLOSE`) always go through io_uring.
//!
//! ```
//! use tokio_uring_getdents::fs::Dir;
//!
//! tokio_uring::start(async {
//!     let mut dir = Dir::open(".").await?;
//!     while let Some(entry) = dir.next().await {
//!         let entry = entry?;
//!         println!("entry: {}", entry.file_name().display());
//!     }
//!     dir.close().await?;
//!     Ok::<_, std::io::Error>(())
//! })?;
//! # Ok::<_, std::io::Error>(())
//! ```
//!
//! # Which runtime
//!
//! [`fs::Dir`], [`fs::DirHandle`], [`fs::statx`] and [`walk::Walk`] need a
//! tokio-uring runtime (`tokio_uring::start`) and are `!Send`; under
//! `#[tokio::main]` they panic. From a tokio runtime (multi-thread or
//! not), use the bridge: [`walk::WalkBuilder::spawn`] runs the walk on a
//! thread with its own tokio-uring runtime and returns a `Send`
//! [`walk::WalkReceiver`] that streams the entries back:
//!
//! ```
//! use tokio_uring_getdents::walk::WalkBuilder;
//!
//! #[tokio::main]
//! async fn main() -> std::io::Result<()> {
//!     let mut walk = WalkBuilder::new(env!("CARGO_MANIFEST_DIR")).max_depth(1).spawn()?;
//!     while let Some(entry) = walk.next().await {
//!         let entry = entry?;
//!         println!("{} {:?}", entry.path().display(), entry.file_type());
//!     }
//!     Ok(())
//! }
//! ```
//!
//! A sandbox may refuse io_uring (a seccomp filter): `tokio_uring::start`
//! panics when `io_uring_setup` is refused, so a program that must run
//! there asks [`io_uring_usable`] first and takes a path without io_uring
//! on `Err`. When only `io_uring_enter` is refused, every open of this
//! crate fails at once with an error naming the call (the walk and the
//! bridge yield it as their one item), instead of waiting for a
//! completion that never comes.
//!
//! # Walking a tree
//!
//! [`walk::WalkBuilder`] walks a tree recursively: a stream of entries
//! with path, depth, type and optional `statx`, at most a given number of
//! descriptors open, pruning by filter or `skip_current_dir`, errors as
//! items naming the path.
//!
//! # Streams
//!
//! `Dir` is also a [`futures_core::Stream`] of `io::Result<DirEntry>`;
//! [`fs::Dir::handle`] gives a [`fs::DirHandle`] for `statx` and `open_at`
//! while a combinator owns the stream.
//! Children are opened relative to their parent's descriptor with
//! `O_NOFOLLOW | O_DIRECTORY` ([`fs::Dir::open_at`]), and stat'ed relative
//! to it with `AT_SYMLINK_NOFOLLOW` ([`fs::Dir::statx`]), so a walk never
//! leaves its tree and has no `PATH_MAX` limit.
//!
//! # Cancellation
//!
//! Every future of this crate may be dropped at any point:
//!
//! - Memory the kernel writes (the read buffer, `statx` results) and reads
//!   (names) lives in the operation's *stable data*, which tokio-uring keeps
//!   until the completion arrives, even after the future is gone. The
//!   fallback's buffer travels inside its blocking task instead.
//! - Each operation holds a reference to the directory descriptor, so a
//!   dropped [`fs::Dir`] closes its descriptor only once its last read has
//!   completed.
//! - A dropped [`next`](fs::Dir::next) future loses no entry: the read in
//!   flight belongs to the `Dir`, and the next call continues it.
//! - A dropped open hands its in-flight operation to a per-runtime task
//!   that closes the new descriptor when it arrives; nothing leaks.
//!
//! If the whole runtime shuts down, tokio-uring waits for every operation
//! in flight, but frees the stable data of dropped ones before their
//! completion; memory the kernel writes is kept aside (not freed) in that
//! case, until a runtime on the thread submits again. This holds per
//! runtime, also with several tokio-uring runtimes on one thread. Descriptors being
//! opened at that moment are not closed.
//! DESIGN.md in the repository explains the choices.
//!
//! # Errors
//!
//! File-system errors are `io::Error`s of the original kind whose message
//! names the path; the details are a [`PathError`] inside.
#![warn(missing_docs)]

mod error;
mod fd;
pub mod fs;
mod op;
mod pool;
mod usable;
pub mod walk;

pub use error::PathError;
pub use usable::io_uring_usable;

/// The runtime this crate runs on, re-exported so that a program needs no
/// dependency of its own on it (`tokio_uring_getdents::start`, or
/// `tokio_uring_getdents::tokio_uring::Builder` for settings).
///
/// ```
/// tokio_uring_getdents::start(async {
///     let dir = tokio_uring_getdents::fs::Dir::open("/").await?;
///     dir.close().await
/// })?;
/// # Ok::<_, std::io::Error>(())
/// ```
pub use tokio_uring;
/// `tokio_uring::start`: runs a future on a new tokio-uring runtime on
/// this thread (see [`tokio_uring`]).
///
/// ```
/// let n = tokio_uring_getdents::start(async { 1 + 1 });
/// assert_eq!(n, 2);
/// ```
pub use tokio_uring::start;
