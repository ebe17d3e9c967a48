//! [`ParseError`]: what was wrong with a buffer of records (either format),
//! and where.

use std::fmt;

/// What was wrong with a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// Fewer bytes left than a record header.
    TruncatedHeader,
    /// `d_reclen` smaller than the smallest record (this includes 0, which
    /// would otherwise loop forever).
    RecordTooShort,
    /// `d_reclen` runs past the end of the buffer.
    RecordPastEnd,
    /// `d_reclen` is not a multiple of 8.
    Misaligned,
    /// No NUL byte inside the record's name field.
    UnterminatedName,
    /// The name is empty or contains `/`.
    InvalidName,
    /// A readdirplus record whose `d_reclen` is not its name's end (rounded
    /// up to 8) plus the [`TAIL_LEN`](crate::plus::TAIL_LEN) bytes of status
    /// and `statx` that follow it.
    PlusTailMisplaced,
    /// A readdirplus record's status is not 0 or `-errno` (1 to 4095), its
    /// reserved word is not 0, or a failed entry's `statx` is not zeroed.
    PlusInvalidStatus,
}

/// A corrupt record, with the byte offset at which it starts.
///
/// ```
/// use io_uring_getdents::dirent::{DirentIter, ParseErrorKind};
/// let err = DirentIter::new(&[0u8; 30]).next().unwrap().unwrap_err();
/// assert_eq!(err.kind(), ParseErrorKind::RecordTooShort);
/// assert_eq!(err.position(), 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError {
    kind: ParseErrorKind,
    position: usize,
}

impl ParseError {
    pub(crate) fn new(kind: ParseErrorKind, position: usize) -> ParseError {
        ParseError { kind, position }
    }

    /// What was wrong.
    pub fn kind(&self) -> ParseErrorKind {
        self.kind
    }

    /// Offset in the buffer of the record that failed.
    pub fn position(&self) -> usize {
        self.position
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ParseErrorKind::TruncatedHeader => "truncated record header",
            ParseErrorKind::RecordTooShort => "record length below the minimum",
            ParseErrorKind::RecordPastEnd => "record length past the end of the buffer",
            ParseErrorKind::Misaligned => "record length not a multiple of 8",
            ParseErrorKind::UnterminatedName => "name without a terminating NUL",
            ParseErrorKind::InvalidName => "empty name or name containing '/'",
            ParseErrorKind::PlusTailMisplaced => {
                "readdirplus record length not the padded name plus the statx tail"
            }
            ParseErrorKind::PlusInvalidStatus => {
                "readdirplus status not 0 or -errno, or bytes that must be zero are not"
            }
        };
        write!(
            f,
            "corrupt linux_dirent64 buffer at byte {}: {what}",
            self.position
        )
    }
}

impl std::error::Error for ParseError {}

impl From<ParseError> for std::io::Error {
    fn from(err: ParseError) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, err)
    }
}
