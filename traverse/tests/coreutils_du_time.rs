//! `du --time`, `--time=WORD`, `--time-style` and `TIME_STYLE` against
//! the local GNU du, on a tree whose times are set (utimensat) to known
//! instants apart from one another; and coreutils' tests/du/bigtime.sh.
//! Lines are compared sorted where du's directory order matters (see
//! `coreutils_du.rs`).

mod testenv;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

use testenv::*;

/// Exit status, stdout, stderr.
type Out = (i32, String, String);

fn run(cmd: &mut Command) -> Out {
    let out = cmd.output().expect("run");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `du ARGS` by GNU (`gnu`) or traverse, in `dir`, with `TZ=tz` and the
/// other variables `env`.
fn du(gnu: bool, dir: &Path, tz: &str, env: &[(&str, &str)], args: &[&str]) -> Out {
    let mut cmd = if gnu {
        Command::new("du")
    } else {
        let mut c = Command::new(bin());
        c.arg("du");
        c
    };
    cmd.args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .env("TZ", tz)
        .env_remove("TIME_STYLE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(&mut cmd)
}

fn sorted((code, out, err): Out) -> (i32, Vec<String>, String) {
    // Lines end with a newline, or a NUL with -0. The hard-linked file's
    // line names whichever of `g` and `g2` du meets first in directory
    // order (traverse too; tests/du_order.rs checks which): both are read
    // as `g`, so that this test checks the times alone.
    let mut lines: Vec<String> = out
        .split_inclusive(['\n', '\0'])
        .map(|line| line.replace("/c/g2", "/c/g"))
        .collect();
    lines.sort();
    (code, lines, err)
}

/// Sets the access and modification times of `path` (not following a
/// symlink) to `atime` and `mtime`, as (seconds, nanoseconds).
fn set_times(path: &Path, atime: (i64, i64), mtime: (i64, i64)) -> std::io::Result<()> {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    let ts = |(sec, nsec): (i64, i64)| libc::timespec {
        tv_sec: sec,
        tv_nsec: nsec,
    };
    let times = [ts(atime), ts(mtime)];
    // SAFETY: `c` is NUL-terminated and `times` two timespecs, both alive
    // through the call.
    let r = unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            c.as_ptr(),
            times.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// `t/`: two levels, files, a symlink, a hard link within one directory;
/// the newest modification deep down, the newest access elsewhere.
fn tree(env: &TestEnv) {
    let r = env.root();
    env.mkdir("t/a/b");
    env.mkdir("t/c");
    env.file("t/a/b/f", 5000);
    env.file("t/a/h", 1);
    env.file("t/c/g", 10);
    std::os::unix::fs::symlink("nowhere", r.join("t/c/l")).unwrap();
    std::fs::hard_link(r.join("t/c/g"), r.join("t/c/g2")).unwrap();
    // Directories' access times ahead of their changes, so that reading
    // them (relatime) leaves them alone.
    let future = (4_000_000_000, 0);
    for (path, atime, mtime) in [
        (
            "t/a/b/f",
            (1_600_000_000, 123_456_789),
            (1_700_000_000, 987_654_321),
        ),
        ("t/a/h", (1_650_000_000, 5), (1_500_000_000, 7)),
        ("t/c/g", (1_400_000_000, 0), (1_400_000_000, 999_999_999)),
        ("t/c/l", (1_300_000_000, 0), (1_750_000_000, 1)),
        ("t/a/b", future, (1_000_000_000, 0)),
        ("t/a", future, (1_000_000_100, 0)),
        ("t/c", future, (1_000_000_200, 0)),
        ("t", future, (1_000_000_300, 0)),
    ] {
        set_times(&r.join(path), atime, mtime).unwrap();
    }
}

/// Every `--time` word and style, with -a, -s, -S, -d, -c, -L, -H,
/// file PATHs, in UTC and in a zone half an hour off (a POSIX TZ string,
/// no tzdata needed): the same lines, messages and status as GNU du.
#[test]
fn times_as_gnu_du_prints_them() {
    let env = TestEnv::new();
    tree(&env);
    let dir = env.root();
    let cases: &[&[&str]] = &[
        &["--time", "t"],
        &["--time", "-a", "t"],
        &["--time=atime", "-a", "t"],
        &["--time=access", "-s", "t"],
        &["--time=use", "-d", "1", "t"],
        &["--time=ctime", "-a", "t"],
        &["--time=status", "-s", "t"],
        &["--time=a", "-a", "t"],
        &["--time", "--time-style=full-iso", "-a", "t"],
        &["--time", "--time-style=long-iso", "-S", "t"],
        &["--time", "--time-style=iso", "-S", "-a", "t"],
        &["--time", "--time-style=f", "-S", "-d", "1", "t"],
        &[
            "--time",
            "--time-style=+%Y-%m-%d %H:%M:%S.%N %:z|%s|%3N",
            "-a",
            "t",
        ],
        &["--time", "--time-style=+", "-s", "t"],
        &["--time", "-c", "t/c", "t/a"],
        &["--time", "-sc", "t/a/b", "t/c/g", "t/c/l"],
        &["--time", "-L", "-a", "t"],
        &["--time", "-H", "-a", "t/c/l", "t/a"],
        &["--time", "-h", "-a", "t"],
        &["--time", "--inodes", "-S", "t"],
        &["--time", "-0", "-a", "t"],
        &["--time-style=full-iso", "t/a"],
    ];
    for tz in ["UTC0", "IST-5:30"] {
        // A first run of each reads every directory once before the
        // compared runs (their access times stay put from then on).
        du(true, dir, tz, &[], &["--time=atime", "t"]);
        for args in cases {
            let want = sorted(du(true, dir, tz, &[], args));
            let got = sorted(du(false, dir, tz, &[], args));
            assert_eq!(got, want, "du {args:?} with TZ={tz}");
        }
    }
}

/// Every engine keeps the same latest times (each makes its own stats).
#[test]
fn every_engine_gives_gnu_du_times() {
    let env = TestEnv::new();
    tree(&env);
    let dir = env.root();
    du(true, dir, "UTC0", &[], &["--time=atime", "t"]);
    for args in [
        &["--time=atime", "-a", "t"][..],
        &["--time", "-S", "-a", "-c", "t"],
        &["--time=ctime", "-s", "t"],
    ] {
        let want = sorted(du(true, dir, "UTC0", &[], args));
        for engine in ENGINES {
            let args = [&["--engine", engine][..], args].concat();
            let got = sorted(du(false, dir, "UTC0", &[], &args));
            assert_eq!(got, want, "du {args:?}");
        }
    }
}

/// `TIME_STYLE` as du reads it: `locale` is long-iso, `posix-` prefixes
/// go, a `+FORMAT` ends at a newline, `--time-style` wins, and a bad
/// style is refused (only with --time).
#[test]
fn time_style_variable_as_gnu_du_reads_it() {
    let env = TestEnv::new();
    tree(&env);
    let dir = env.root();
    for (style, args) in [
        ("locale", &["--time", "t"][..]),
        ("posix-full-iso", &["--time", "t"]),
        ("posix-posix-iso", &["--time", "t"]),
        ("+%s.%N\n%Y", &["--time", "t"]),
        ("full-iso", &["--time", "--time-style=iso", "t"]),
        ("bogus", &["--time", "t"]),
        ("bogus", &["t"]),
        ("", &["--time", "t"]),
    ] {
        let vars = [("TIME_STYLE", style)];
        let want = sorted(du(true, dir, "UTC0", &vars, args));
        let got = sorted(du(false, dir, "UTC0", &vars, args));
        assert_eq!(got, want, "TIME_STYLE={style:?} du {args:?}");
    }
}

/// The words du refuses, in its words: `mtime` and `birth` are not
/// among them (a bare `--time` is the modification time), nor `locale`
/// as a style; an empty one is ambiguous.
#[test]
fn refused_words_as_gnu_du_refuses_them() {
    let env = TestEnv::new();
    tree(&env);
    let dir = env.root();
    for args in [
        &["--time=mtime", "t"][..],
        &["--time=birth", "t"],
        &["--time=creation", "t"],
        &["--time=", "t"],
        &["--time", "--time-style=locale", "t"],
        &["--time", "--time-style=", "t"],
        &["--time", "--time-style=posix-iso", "t"],
    ] {
        let want = du(true, dir, "UTC0", &[], args);
        let got = du(false, dir, "UTC0", &[], args);
        assert_eq!(got, want, "du {args:?}");
        assert_eq!(got.0, 1, "du {args:?}");
    }
}

/// tests/du/bigtime.sh: a time past what `struct tm` holds is printed as
/// its seconds, with du's message, and du exits 0. Skipped where the
/// filesystem cannot keep such a time.
#[test]
fn bigtime() {
    let env = TestEnv::new();
    let future = env.file("future", 0);
    let big = i64::MAX;
    if set_times(&future, (big, 0), (big, 0)).is_err() {
        println!("skipped: this filesystem cannot set such a time");
        return;
    }
    use std::os::unix::fs::MetadataExt;
    if std::fs::metadata(&future).unwrap().mtime() != big {
        println!("skipped: this filesystem cannot keep such a time");
        return;
    }
    let (code, out, err) = du(false, env.root(), "UTC0", &[], &["--time", "future"]);
    assert_eq!(code, 0);
    assert_eq!(out.split_once('\t').unwrap().1, format!("{big}\tfuture\n"));
    assert_eq!(err, format!("du: time '{big}' is out of range\n"));
}
