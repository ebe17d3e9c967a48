//! GNU coreutils' tests of du, second part (see `coreutils_du.rs` for the
//! first, and for the scripts left out and why). Scripts that upstream
//! runs only as a user other than root (`skip_if_root_`) run here as
//! `nobody` when the tests run as root.

mod testenv;

use std::fs;
use std::io::Write;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use testenv::*;

/// A run's exit status, stdout and stderr.
#[derive(Debug, PartialEq)]
struct Out {
    code: i32,
    out: String,
    err: String,
}

fn run(cmd: &mut Command) -> Out {
    let out = cmd.output().expect("run");
    Out {
        code: out.status.code().unwrap_or(-1),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn tdu(dir: &Path, args: &[&str]) -> Out {
    run(Command::new(bin()).arg("du").args(args).current_dir(dir))
}

/// `traverse du ARGS` with `input` on stdin.
fn tdu_in(dir: &Path, args: &[&str], input: &[u8]) -> Out {
    let mut child = Command::new(bin())
        .arg("du")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // du may end before it reads (a usage error): a closed pipe then.
    let _ = child.stdin.take().unwrap().write_all(input);
    let out = child.wait_with_output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn gnu(dir: &Path, args: &[&str]) -> Out {
    run(Command::new("du")
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C"))
}

fn names(out: &str) -> Vec<String> {
    out.lines()
        .map(|l| l.split_once('\t').map_or(l, |(_, name)| name).to_owned())
        .collect()
}

fn sorted(mut lines: Vec<String>) -> Vec<String> {
    lines.sort();
    lines
}

/// The binary under test where `nobody` can run it, and a directory of
/// the tree everyone may enter.
fn unprivileged_setup(env: &TestEnv) -> PathBuf {
    env.open_to_all();
    env.runnable_copy_of_bin()
}

/// `exe du ARGS` in `dir`, as nobody when we are root.
fn tdu_unprivileged(exe: &Path, dir: &Path, args: &[&str]) -> Out {
    run(as_unprivileged(
        Command::new(exe).arg("du").args(args).current_dir(dir),
    ))
}

/// From inacc-dest.sh: an unreadable directory among readable ones is
/// reported as du reports it, its line still printed, status 1.
#[test]
fn inacc_dest() {
    let env = TestEnv::new();
    let exe = unprivileged_setup(&env);
    let f = env.mkdir("f");
    for d in ["a", "b", "c", "d", "e"] {
        env.mkdir(&format!("f/{d}"));
    }
    fs::write(f.join("c/j"), b"").unwrap();
    for d in ["", "/a", "/b", "/c", "/d", "/e"] {
        let mode = if d == "/c" { 0o644 } else { 0o755 };
        fs::set_permissions(
            format!("{}{d}", f.display()),
            fs::Permissions::from_mode(mode),
        )
        .unwrap();
    }
    let out = tdu_unprivileged(&exe, &f, &[]);
    assert_eq!(out.code, 1, "{out:?}");
    let mut got = names(&out.out);
    got.push(
        out.err
            .replace("/c/j': ", "/c': ")
            .replace("cannot access", "cannot read directory"),
    );
    assert_eq!(
        sorted(got),
        [
            ".",
            "./a",
            "./b",
            "./c",
            "./d",
            "./e",
            "du: cannot read directory './c': Permission denied\n"
        ]
    );
}

/// From inacc-dir.sh: an unreadable subdirectory changes no line.
#[test]
fn inacc_dir() {
    let env = TestEnv::new();
    let exe = unprivileged_setup(&env);
    env.mkdir("a/sub");
    for d in ["a", "a/sub"] {
        fs::set_permissions(env.root().join(d), fs::Permissions::from_mode(0o755)).unwrap();
    }
    for args in [&["-s", "a"][..], &["-k", "a"]] {
        let before = tdu_unprivileged(&exe, env.root(), args);
        fs::set_permissions(env.root().join("a/sub"), fs::Permissions::from_mode(0o000)).unwrap();
        let after = tdu_unprivileged(&exe, env.root(), args);
        fs::set_permissions(env.root().join("a/sub"), fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!((before.code, after.code), (0, 1), "{args:?}");
        assert_eq!(before.out, after.out, "{args:?}");
    }
}

/// From inodes.sh: --inodes with hard links, -l, -s, -S, -a, -c, -h,
/// --si, -B, -t, and the warning with -b.
#[test]
fn inodes() {
    let env = TestEnv::new();
    let t = env.root();
    let d = env.mkdir("d");
    let check = |args: &[&str], want: &str| {
        let out = tdu(t, &[&["--inodes"][..], args, &["d"]].concat());
        assert_eq!((out.out.as_str(), out.err.as_str()), (want, ""), "{args:?}");
    };
    check(&[], "1\td\n");
    fs::write(d.join("f"), b"").unwrap();
    check(&[], "2\td\n");
    fs::hard_link(d.join("f"), d.join("h")).unwrap();
    check(&[], "2\td\n");
    check(&["-l"], "3\td\n");
    fs::create_dir(d.join("d")).unwrap();
    check(&["-s"], "3\td\n");
    check(&["-S"], "1\td/d\n2\td\n");
    check(&[], "1\td/d\n3\td\n");
    let all = tdu(t, &["--inodes", "-a", "d"])
        .out
        .replace("d/h\n", "d/f\n");
    assert_eq!(
        sorted(all.lines().map(str::to_owned).collect()),
        ["1\td/d", "1\td/f", "3\td"]
    );
    let all_links = tdu(t, &["--inodes", "-al", "d"]).out;
    assert_eq!(
        sorted(all_links.lines().map(str::to_owned).collect()),
        ["1\td/d", "1\td/f", "1\td/h", "4\td"]
    );
    check(&["-c"], "1\td/d\n3\td\n3\ttotal\n");
    fs::write(d.join("d/f"), b"").unwrap();
    check(&[], "2\td/d\n4\td\n");
    fs::remove_dir_all(&d).unwrap();
    fs::create_dir(&d).unwrap();
    for i in 1..=1023 {
        fs::write(d.join(format!("file{i}")), b"").unwrap();
    }
    check(&["-h"], "1.0K\td\n");
    check(&["--si"], "1.1k\td\n");
    check(&["-B10"], "1024\td\n");
    check(&["--threshold=1000"], "1024\td\n");
    check(&["--threshold=-1000"], "");
    for flag in ["-b", "--apparent-size"] {
        let out = tdu(t, &["--inodes", flag, "d"]);
        assert!(out.err.contains(" ineffective "), "{flag}: {out:?}");
        assert_eq!(out, gnu(t, &["--inodes", flag, "d"]), "{flag}");
    }
    for args in [&["-h"][..], &["--si"], &["-B10"], &["-c"]] {
        let args = [&["--inodes"][..], args, &["d"]].concat();
        assert_eq!(tdu(t, &args), gnu(t, &args), "{args:?}");
    }
    let help = run(Command::new(bin()).args(["du", "--help"]));
    assert!(help.out.contains("--inodes"));
}

/// From max-depth.sh: -d and --max-depth, and a negative depth refused
/// in du's words with status 1.
#[test]
fn max_depth() {
    let env = TestEnv::new();
    let t = env.root();
    env.mkdir("a/b/c/d/e");
    assert_eq!(
        names(&tdu(t, &["--max-depth=2", "a"]).out),
        ["a/b/c", "a/b", "a"]
    );
    assert_eq!(names(&tdu(t, &["-d", "1", "a"]).out), ["a/b", "a"]);
    let out = tdu(t, &["-d", "-1", "a"]);
    let want = "du: invalid maximum depth '-1'\nTry 'du --help' for more information.\n";
    assert_eq!(
        (out.code, out.out.as_str(), out.err.as_str()),
        (1, "", want)
    );
    assert_eq!(out, gnu(t, &["-d", "-1", "a"]));
}

/// From no-deref.sh: a symlink PATH is counted as itself.
#[test]
fn no_deref() {
    let env = TestEnv::new();
    let t = env.root();
    env.mkdir("dir/a/b");
    symlink("dir", t.join("slink")).unwrap();
    assert_eq!(names(&tdu(t, &["slink"]).out), ["slink"]);
    assert_eq!(tdu(t, &["slink"]), gnu(t, &["slink"]));
}

/// From no-x.sh: a directory that may be read but not searched.
#[test]
fn no_x() {
    let env = TestEnv::new();
    let exe = unprivileged_setup(&env);
    env.mkdir("d/no-x/y");
    fs::set_permissions(env.root().join("d"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(env.root().join("d/no-x"), fs::Permissions::from_mode(0o644)).unwrap();
    let out = tdu_unprivileged(&exe, env.root(), &["d"]);
    assert_eq!(out.code, 1);
    let err = out
        .err
        .replace("du: cannot access ", "du: ")
        .replace("du: cannot read directory ", "du: ")
        .replace("d/no-x/y", "d/no-x");
    assert_eq!(err, "du: 'd/no-x': Permission denied\n");
}

/// From slash.sh: with everything below `/` excluded, `/` alone.
#[test]
fn slash() {
    let out = tdu(Path::new("/"), &["--exclude=[^/]*", "-x", "/"]);
    assert_eq!(names(&out.out), ["/"]);
}

/// From trailing-slash.sh: `link/` walks the target under `link/`; -L
/// under `link`.
#[test]
fn trailing_slash() {
    let env = TestEnv::new();
    let t = env.root();
    env.mkdir("dir/1/2");
    symlink("dir", t.join("slink")).unwrap();
    assert_eq!(
        names(&tdu(t, &["slink/"]).out),
        ["slink/1/2", "slink/1", "slink/"]
    );
    assert_eq!(
        names(&tdu(t, &["-L", "slink"]).out),
        ["slink/1/2", "slink/1", "slink"]
    );
}

/// From two-args.sh and restore-wd.sh: several PATHs, `.` and `..`
/// among them.
#[test]
fn two_args() {
    let env = TestEnv::new();
    let sub = env.mkdir("sub");
    env.mkdir("sub/t/1");
    env.mkdir("sub/t/2");
    for args in [&["t/1", "t/2"][..], &[".", "t"], &["..", "t"]] {
        let out = tdu(&sub, args);
        assert_eq!(out.code, 0, "{args:?}");
        assert_eq!(
            sorted(names(&out.out)),
            sorted(names(&gnu(&sub, args).out)),
            "{args:?}"
        );
    }
}

/// From fd-leak.sh: 1296 file PATHs at once.
#[test]
fn fd_leak() {
    let env = TestEnv::new();
    let chars: Vec<char> = ('a'..='z').chain('0'..='9').collect();
    let mut files = Vec::new();
    for i in &chars {
        for j in &chars {
            let name = format!("{i}{j}");
            fs::write(env.root().join(&name), b"").unwrap();
            files.push(name);
        }
    }
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    let out = tdu(env.root(), &args);
    assert_eq!((out.code, out.out.lines().count()), (0, 1296));
}

/// From 8gb.sh: a sparse file of 8 GiB, by apparent size.
#[test]
fn eight_gb() {
    let env = TestEnv::new();
    let f = fs::File::create(env.root().join("big")).unwrap();
    f.set_len(8 << 30).unwrap();
    assert_eq!(tdu(env.root(), &["-ab", "big"]).out, "8589934592\tbig\n");
}

/// From one-file-system.sh, the part without a second filesystem: -x
/// changes nothing on one, for directories and for a file PATH.
#[test]
fn one_file_system() {
    let env = TestEnv::new();
    let t = env.root();
    env.mkdir("b/c");
    env.mkdir("y/z");
    fs::write(t.join("f"), b"").unwrap();
    assert_eq!(
        names(&tdu(t, &["-ax", "b", "y"]).out),
        ["b/c", "b", "y/z", "y"]
    );
    for opt in ["-x", "-xs"] {
        assert_eq!(names(&tdu(t, &[opt, "f"]).out), ["f"]);
    }
}

/// From bind-mount-dir-cycle.sh and -v2: a directory bind-mounted below
/// itself (the PATH, or an ancestor of it) is counted once, with no
/// message and status 0, as du does.
#[test]
fn bind_mount_dir_cycle() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: bind mounts need root");
        return;
    }
    let env = TestEnv::new();
    let t = env.root();
    env.mkdir("a/b");
    let _mount = BindMount::new(&t.join("a"), &t.join("a/b"));
    let out = tdu(t, &["a"]);
    assert_eq!(
        (out.code, names(&out.out), out.err.as_str()),
        (0, vec!["a".to_owned()], "")
    );
    assert_eq!(out.out, gnu(t, &["a"]).out);

    let env = TestEnv::new();
    let t = env.root();
    env.mkdir("a/b/c");
    let _mount = BindMount::new(&t.join("a"), &t.join("a/b/c"));
    let out = tdu(t, &["a/b"]);
    assert_eq!(
        (out.code, names(&out.out), out.err.as_str()),
        (0, vec!["a/b/c".to_owned(), "a/b".to_owned()], "")
    );
    assert_eq!(out.out, gnu(t, &["a/b"]).out);
}

/// From long-sloop.sh: a chain of 400 links through directories, more
/// than the kernel resolves in one name, is an error naming it.
#[test]
fn long_sloop() {
    let env = TestEnv::new();
    let t = env.root();
    for i in 1..=400 {
        fs::create_dir(t.join(i.to_string())).unwrap();
        symlink(format!("../{}", i + 1), t.join(format!("{i}/s"))).unwrap();
    }
    fs::write(t.join("401"), b"foo\n").unwrap();
    let out = tdu(t, &["-L", "1"]);
    assert_eq!(out.code, 1);
    let err: Vec<&str> = out.err.lines().collect();
    assert_eq!(err.len(), 1, "{}", out.err);
    assert!(
        err[0].starts_with("du: cannot access '1/s/s/s/"),
        "{}",
        err[0]
    );
    assert!(
        err[0].ends_with("': Too many levels of symbolic links"),
        "{}",
        err[0]
    );
}

/// From files0-from.pl and files0-from-dir.sh: names from a file or
/// stdin, and each refusal in du's words.
#[test]
fn files0_from() {
    let env = TestEnv::new();
    let t = env.root();
    fs::write(t.join("g"), b"").unwrap();
    let zero = |out: Out| Out {
        out: out
            .out
            .lines()
            .map(|l| format!("0\t{}\n", l.split_once('\t').unwrap().1))
            .collect(),
        ..out
    };
    // (arguments, stdin, status, stdout, stderr)
    type Case<'a> = (&'a [&'a str], &'a [u8], i32, &'a str, &'a str);
    let cases: &[Case] = &[
        (&["--files0-from=-", "no-such"], b"a", 1, "", "du: extra operand 'no-such'\nfile operands cannot be combined with --files0-from\nTry 'du --help' for more information.\n"),
        (&["--files0-from=missing"], b"", 1, "", "du: cannot open 'missing' for reading: No such file or directory\n"),
        (&["--files0-from=-"], b"missing\0missing\0", 1, "", "du: cannot access 'missing': No such file or directory\ndu: cannot access 'missing': No such file or directory\n"),
        (&["--files0-from=-"], b"g\0g\0", 0, "0\tg\n", ""),
        (&["-l", "--files0-from=-"], b"g\0g\0", 0, "0\tg\n0\tg\n", ""),
        (&["--files0-from=-"], b"-", 1, "", "du: when reading file names from standard input, no file name of '-' allowed\n"),
        (&["--files0-from=/dev/null"], b"", 0, "", ""),
        (&["--files0-from=-"], b"\0", 1, "", "du: -:1: invalid zero-length file name\n"),
        (&["--files0-from=-"], b"\0\0", 1, "", "du: -:1: invalid zero-length file name\ndu: -:2: invalid zero-length file name\n"),
        (&["--files0-from=-"], b"g", 0, "0\tg\n", ""),
        (&["--files0-from=-"], b"g\0g", 0, "0\tg\n", ""),
        (&["--files0-from=-"], b"\0g\0", 1, "0\tg\n", "du: -:1: invalid zero-length file name\n"),
    ];
    for &(args, input, code, out, err) in cases {
        let got = zero(tdu_in(t, args, input));
        let want = Out {
            code,
            out: out.to_owned(),
            err: err.to_owned(),
        };
        assert_eq!(got, want, "{args:?} {input:?}");
    }
    fs::write(t.join("empty"), b"").unwrap();
    assert_eq!(
        tdu(t, &["--files0-from=empty"]),
        Out {
            code: 0,
            out: String::new(),
            err: String::new()
        }
    );
    fs::create_dir(t.join("dir")).unwrap();
    let out = tdu(t, &["--files0-from=dir"]);
    assert_eq!(out.code, 1);
    assert!(out.err.starts_with("du: dir:"), "{}", out.err);
}
