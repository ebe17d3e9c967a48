//! [`FileType`]: an entry's type, from `d_type`, from the `S_IFMT` bits of
//! a mode, or from `std::fs`, and back to `d_type`.

/// The type of a directory entry, from `d_type`.
///
/// # Example
///
/// ```
/// use io_uring_getdents::dirent::FileType;
/// assert_eq!(FileType::from_d_type(libc::DT_DIR), FileType::Directory);
/// assert_eq!(FileType::from_d_type(200), FileType::Unknown);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileType {
    /// `DT_FIFO`
    Fifo,
    /// `DT_CHR`
    CharDevice,
    /// `DT_DIR`
    Directory,
    /// `DT_BLK`
    BlockDevice,
    /// `DT_REG`
    Regular,
    /// `DT_LNK`
    Symlink,
    /// `DT_SOCK`
    Socket,
    /// `DT_UNKNOWN` (the filesystem does not fill `d_type`: call stat) or
    /// a value this crate does not know.
    Unknown,
}

impl FileType {
    /// Maps a raw `d_type` byte.
    pub fn from_d_type(d_type: u8) -> FileType {
        match d_type {
            libc::DT_FIFO => FileType::Fifo,
            libc::DT_CHR => FileType::CharDevice,
            libc::DT_DIR => FileType::Directory,
            libc::DT_BLK => FileType::BlockDevice,
            libc::DT_REG => FileType::Regular,
            libc::DT_LNK => FileType::Symlink,
            libc::DT_SOCK => FileType::Socket,
            _ => FileType::Unknown,
        }
    }

    /// Maps the `S_IFMT` bits of a `st_mode`/`stx_mode`.
    ///
    /// ```
    /// use io_uring_getdents::dirent::FileType;
    /// assert_eq!(FileType::from_mode(libc::S_IFREG | 0o644), FileType::Regular);
    /// ```
    pub fn from_mode(mode: u32) -> FileType {
        match mode & libc::S_IFMT {
            libc::S_IFIFO => FileType::Fifo,
            libc::S_IFCHR => FileType::CharDevice,
            libc::S_IFDIR => FileType::Directory,
            libc::S_IFBLK => FileType::BlockDevice,
            libc::S_IFREG => FileType::Regular,
            libc::S_IFLNK => FileType::Symlink,
            libc::S_IFSOCK => FileType::Socket,
            _ => FileType::Unknown,
        }
    }
}

impl FileType {
    /// The `DT_*` byte for this type (`DT_UNKNOWN` for [`FileType::Unknown`]).
    ///
    /// ```
    /// use io_uring_getdents::dirent::FileType;
    /// assert_eq!(FileType::Symlink.d_type(), libc::DT_LNK);
    /// assert_eq!(FileType::from_d_type(FileType::Fifo.d_type()), FileType::Fifo);
    /// ```
    pub fn d_type(self) -> u8 {
        match self {
            FileType::Fifo => libc::DT_FIFO,
            FileType::CharDevice => libc::DT_CHR,
            FileType::Directory => libc::DT_DIR,
            FileType::BlockDevice => libc::DT_BLK,
            FileType::Regular => libc::DT_REG,
            FileType::Symlink => libc::DT_LNK,
            FileType::Socket => libc::DT_SOCK,
            FileType::Unknown => libc::DT_UNKNOWN,
        }
    }
}

/// The type `std::fs` reports, e.g. from `DirEntry::file_type()`.
///
/// ```
/// use io_uring_getdents::dirent::FileType;
/// let meta = std::fs::symlink_metadata("/")?;
/// assert_eq!(FileType::from(meta.file_type()), FileType::Directory);
/// # Ok::<_, std::io::Error>(())
/// ```
impl From<std::fs::FileType> for FileType {
    fn from(ft: std::fs::FileType) -> FileType {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_file() {
            FileType::Regular
        } else if ft.is_dir() {
            FileType::Directory
        } else if ft.is_symlink() {
            FileType::Symlink
        } else if ft.is_fifo() {
            FileType::Fifo
        } else if ft.is_socket() {
            FileType::Socket
        } else if ft.is_char_device() {
            FileType::CharDevice
        } else if ft.is_block_device() {
            FileType::BlockDevice
        } else {
            FileType::Unknown
        }
    }
}
