//! Totals and listings compared with find and du on generated trees, for
//! every engine.

mod testenv;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use testenv::*;

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

/// Hard links in and across directories, every kind of symlink, a sparse
/// file, empty directories, a fifo and a socket.
fn mixed_tree(env: &TestEnv) -> std::path::PathBuf {
    let t = env.mkdir("mixed");
    env.file("mixed/a/one", 1000);
    env.file("mixed/a/two", 5000);
    env.file("mixed/b/c/three", 70_000);
    env.file("mixed/empty-file", 0);
    fs::hard_link(t.join("a/one"), t.join("a/one-again")).unwrap();
    fs::hard_link(t.join("a/one"), t.join("b/one-elsewhere")).unwrap();
    fs::hard_link(t.join("b/c/three"), t.join("three-up")).unwrap();
    symlink("one", t.join("a/to-file")).unwrap();
    symlink("../b", t.join("a/to-dir")).unwrap();
    symlink("nowhere", t.join("dangling")).unwrap();
    symlink("loop", t.join("loop")).unwrap();
    symlink("/", t.join("to-root")).unwrap();
    let sparse = fs::File::create(t.join("sparse")).unwrap();
    sparse.set_len(1 << 30).unwrap();
    env.mkdir("mixed/empty1");
    env.mkdir("mixed/empty2/empty3");
    mkfifo(&t.join("fifo"));
    let _sock = std::os::unix::net::UnixListener::bind(t.join("sock")).unwrap();
    t
}

#[test]
fn mixed_tree_matches_find_and_du() {
    let env = TestEnv::new();
    let t = mixed_tree(&env);
    check_all_engines(&t, &[]);
    let got = totals(&t, "threads", &[]);
    assert_eq!((got.files, got.symlinks, got.other), (8, 5, 2));
}

#[test]
fn count_links_matches_du_l() {
    let env = TestEnv::new();
    let t = mixed_tree(&env);
    check_all_engines(&t, &["--count-links"]);
    let once = totals(&t, "threads", &[]);
    let each = totals(&t, "threads", &["--count-links"]);
    assert_eq!(each.bytes - once.bytes, 2 * 1000 + 70_000);
}

#[test]
fn listing_matches_find() {
    let env = TestEnv::new();
    let t = mixed_tree(&env);
    for engine in ENGINES {
        let (ours, find) = list_both(&t, engine);
        assert_eq!(ours, find, "engine {engine}");
    }
}

#[test]
fn hard_links_across_roots_count_once_like_du() {
    let env = TestEnv::new();
    let a = env.file("a/big", 100_000);
    env.mkdir("b");
    fs::hard_link(&a, env.root().join("b/big-link")).unwrap();
    let out = traverse([
        OsStr::new("--json"),
        env.root().join("a").as_os_str(),
        env.root().join("b").as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<_> = text.lines().map(parse_json).collect();
    assert_eq!(lines.len(), 3, "{text}");
    let du_out = std::process::Command::new("du")
        .args(["-sbc"])
        .arg(env.root().join("a"))
        .arg(env.root().join("b"))
        .output()
        .unwrap();
    let du_text = String::from_utf8(du_out.stdout).unwrap();
    let du_sizes: Vec<u128> = du_text
        .lines()
        .map(|l| l.split('\t').next().unwrap().parse().unwrap())
        .collect();
    let ours: Vec<u128> = lines.iter().map(|(_, t)| t.bytes).collect();
    assert_eq!(ours, du_sizes);
    assert_eq!(lines[2].0, "null", "the total has no path");
    assert_eq!(lines[2].1.files, 2);
}

/// Five names for each of 300 files over 30 directories, like the
/// benchmarks' tree of hard links: totals as du on every engine, and the
/// default engine stats each inode about once, not each name (a further
/// name's `d_ino` says it was counted).
#[test]
fn further_names_of_a_counted_inode_are_not_stat_ed() {
    const DIRS: usize = 30;
    const FILES: usize = 300;
    let env = TestEnv::new();
    let t = env.mkdir("links");
    for d in 0..DIRS {
        env.mkdir(&format!("links/d{d}"));
    }
    for i in 0..FILES {
        let first = env.file(&format!("links/d{}/f{i}", i % DIRS), 100 + i);
        for k in 1..5 {
            let dir = (i * 7 + k * 11) % DIRS;
            fs::hard_link(&first, t.join(format!("d{dir}/f{i}.l{k}"))).unwrap();
        }
    }
    check_all_engines(&t, &[]);
    check_all_engines(&t, &["--count-links"]);
    let Some(calls) = syscall_calls("statx", None, &[t.as_os_str()]) else {
        eprintln!("strace not found: statx calls not counted");
        return;
    };
    // Without the shortcut: 1 500 names and 31 directories. Workers may
    // race to the first names of one inode, hence the margin.
    assert!(
        calls <= 2 * (FILES + DIRS + 1) as u64,
        "{calls} statx calls"
    );
    let each = syscall_calls("statx", None, &[OsStr::new("--count-links"), t.as_os_str()]).unwrap();
    assert!(
        each >= (5 * FILES) as u64,
        "--count-links: {each} statx calls"
    );
}

/// A file bind-mounted over a name that is a hard link of an inode already
/// counted is another inode, which du counts: `d_ino` names the link under
/// the mount, so a mount point's name is stat'ed, never taken from `d_ino`.
#[test]
fn a_file_mounted_over_a_further_name_is_counted_like_du() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: bind mounts need root");
        return;
    }
    let env = TestEnv::new();
    let t = env.mkdir("t");
    // x is stat'ed (and recorded) before sub/ is read.
    let x = env.file("t/x", 1000);
    env.mkdir("t/sub");
    fs::hard_link(&x, t.join("sub/y")).unwrap();
    let other = env.file("other", 5555);
    let _mount = BindMount::new(&other, &t.join("sub/y"));
    check_all_engines(&t, &[]);
    let dirs = fs::metadata(&t).unwrap().len() + fs::metadata(t.join("sub")).unwrap().len();
    assert_eq!(
        totals(&t, "auto", &[]).bytes,
        u128::from(dirs + 1000 + 5555)
    );
}

#[test]
fn hostile_names_are_counted_listed_and_escaped() {
    let env = TestEnv::new();
    let t = env.mkdir("names");
    let mut names: Vec<Vec<u8>> = vec![
        b"new\nline".to_vec(),
        b"tab\there".to_vec(),
        b"quote\"back\\slash".to_vec(),
        b"\xff\xfe not utf-8".to_vec(),
        b"\xc3\xa9t\xc3\xa9".to_vec(),
        vec![b'n'; 255],
    ];
    // Every byte but NUL and '/', in one name and as one-byte names.
    names.push(
        (1u8..=255)
            .filter(|&b| b != b'/' && b != b'.')
            .collect::<Vec<u8>>()[..200]
            .to_vec(),
    );
    names.push((1u8..=255).filter(|&b| b != b'/').skip(200).collect());
    for b in (1u8..=255).filter(|&b| b != b'/' && b != b'.') {
        names.push(vec![b]);
    }
    for (i, name) in names.iter().enumerate() {
        fs::write(bytes_path(&t, name), vec![b'x'; i]).unwrap();
    }
    let sub = bytes_path(&t, b"dir\n\xff");
    fs::create_dir(&sub).unwrap();
    fs::write(sub.join("inner"), b"1").unwrap();
    check_all_engines(&t, &[]);
    for engine in ENGINES {
        let (ours, find) = list_both(&t, engine);
        assert_eq!(ours, find, "engine {engine}");
    }
    // The root itself with a non-UTF-8 name: JSON escapes it losslessly.
    let weird_root = bytes_path(env.root(), b"root\n\xff\"");
    fs::create_dir(&weird_root).unwrap();
    let out = traverse([OsStr::new("--json"), weird_root.as_os_str()]);
    let text = String::from_utf8(out.stdout).expect("JSON is valid UTF-8");
    let (path, _) = parse_json(text.trim_end());
    let want = format!("{}root\\n\\udcff\\\"\"", testenv_json_prefix(env.root()));
    assert_eq!(path, want);
    // Human output shows it escaped, on one line.
    let out = traverse([weird_root.as_os_str()]);
    let text = String::from_utf8(out.stdout).expect("human output is valid UTF-8");
    assert!(
        text.lines().next().unwrap().ends_with("root\\n\\xff\""),
        "{text}"
    );
}

/// The JSON text of `dir` + '/', without the closing quote.
fn testenv_json_prefix(dir: &Path) -> String {
    let s = dir
        .to_str()
        .expect("temporary directories have UTF-8 names");
    format!("\"{}/", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Entries of the wide directory: 200 000, or `TEST_WIDE_DIR_ENTRIES` (the
/// test VM sets it lower: under emulation creating files dominates its run).
fn wide_entries() -> u32 {
    match std::env::var("TEST_WIDE_DIR_ENTRIES") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|e| panic!("TEST_WIDE_DIR_ENTRIES={v:?}: {e}")),
        Err(_) => 200_000,
    }
}

#[test]
fn wide_directory_of_200_000_entries() {
    let env = TestEnv::in_memory();
    let t = env.mkdir("wide");
    for i in 0..wide_entries() {
        let p = t.join(format!("f{i}"));
        if i % 1000 == 0 {
            fs::create_dir(&p).unwrap();
        } else {
            fs::File::create(&p).unwrap();
        }
    }
    check_all_engines(&t, &[]);
    // The same without the inode-order sort.
    assert_eq!(
        totals(&t, "threads", &["--no-inode-order"]),
        totals(&t, "threads", &[])
    );
}

#[test]
fn deeper_than_path_max() {
    let env = TestEnv::in_memory();
    let top = env.mkdir("deep");
    // 5 000 levels of 14-byte names: paths of 75 000 bytes (over 64 KiB),
    // built relative to each level so no call sees a long path.
    let mut dir = fs::File::open(&top).unwrap();
    for level in 0..5000 {
        let name = std::ffi::CString::new(format!("level-{level:08}")).unwrap();
        use std::os::fd::{AsRawFd, FromRawFd};
        // SAFETY: valid fd and NUL-terminated name.
        let rc = unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o755) };
        assert_eq!(rc, 0);
        if level % 500 == 0 {
            let f = std::ffi::CString::new("file").unwrap();
            // SAFETY: as above; the new fd is owned by the File below.
            let fd = unsafe {
                libc::openat(
                    dir.as_raw_fd(),
                    f.as_ptr(),
                    libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                    0o644,
                )
            };
            assert!(fd >= 0);
            // SAFETY: `fd` was just opened and is owned by nobody else.
            drop(unsafe { fs::File::from_raw_fd(fd) });
        }
        // SAFETY: as above; the new fd is owned by the File below.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        assert!(fd >= 0);
        // SAFETY: `fd` was just opened and is owned by nobody else.
        dir = unsafe { fs::File::from_raw_fd(fd) };
    }
    check_all_engines(&top, &[]);
    let got = totals(&top, "threads", &[]);
    assert_eq!((got.dirs, got.files), (5001, 10));
    // Removing it needs no long path either: tempfile's remove_dir_all
    // works relative to descriptors.
}

#[test]
fn open_file_limit_of_32() {
    let env = TestEnv::new();
    // A tree that keeps many parents waiting: 40 levels, three
    // subdirectories and a file at each.
    let mut level = env.mkdir("fds");
    for depth in 0..40 {
        for side in ["a", "b"] {
            fs::create_dir(level.join(side)).unwrap();
            fs::write(level.join(side).join("f"), vec![b'x'; depth]).unwrap();
        }
        level = level.join("c");
        fs::create_dir(&level).unwrap();
    }
    // And one directory large enough to be shared out among workers while
    // it is read (12 000 entries), with 120 subdirectories waiting on it.
    let wide = env.mkdir("fds/a/wide");
    for i in 0..12_000 {
        if i % 100 == 0 {
            fs::create_dir(wide.join(format!("d{i}"))).unwrap();
            fs::write(wide.join(format!("d{i}/f")), b"x").unwrap();
        } else {
            fs::File::create(wide.join(format!("f{i}"))).unwrap();
        }
    }
    let t = env.root().join("fds");
    let want = reference(&t, false, false);
    for engine in ENGINES {
        for jobs in ["1", "2", "8"] {
            let script =
                format!("ulimit -n 32 && exec \"$0\" --json --engine {engine} -j {jobs} \"$1\"");
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(&script)
                .arg(bin())
                .arg(&t)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{engine} -j {jobs}: {stderr}");
            let (_, got) = parse_json(String::from_utf8(out.stdout).unwrap().trim_end());
            assert_eq!(got, want, "{engine} -j {jobs}");
        }
    }
}
