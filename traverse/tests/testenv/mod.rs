//! Test harness: temporary trees, the traverse binary, and the reference
//! tools (find, du) to compare with.

#![allow(dead_code)] // each test file uses part of the harness

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Every engine the CLI offers; each must give the same totals. The
/// package's tests build traverse with its reference engines; a build
/// without them (its packed sources) tests the others.
#[cfg(feature = "reference-engines")]
pub const ENGINES: &[&str] = &["auto", "threads", "std", "tokio", "uring"];
/// Every engine the CLI offers; each must give the same totals.
#[cfg(not(feature = "reference-engines"))]
pub const ENGINES: &[&str] = &["auto", "threads", "uring"];

/// Totals as traverse prints them in JSON.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub other: u64,
    /// 128 bits, as traverse sums them (sparse files can pass 2^64).
    pub bytes: u128,
    pub disk_bytes: u128,
    pub errors: u64,
}

/// A temporary directory holding test trees.
pub struct TestEnv {
    dir: tempfile::TempDir,
}

impl TestEnv {
    pub fn new() -> TestEnv {
        TestEnv {
            dir: tempfile::Builder::new()
                .prefix("traverse-test")
                .tempdir()
                .expect("temporary directory"),
        }
    }

    /// For large trees: on `/dev/shm` (tmpfs) when there is one, where
    /// creating files is several times faster than on a disk.
    pub fn in_memory() -> TestEnv {
        let shm = Path::new("/dev/shm");
        if !shm.is_dir() {
            return TestEnv::new();
        }
        TestEnv {
            dir: tempfile::Builder::new()
                .prefix("traverse-test")
                .tempdir_in(shm)
                .expect("temporary directory"),
        }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `rel` below the root, created as a directory with its parents.
    pub fn mkdir(&self, rel: &str) -> PathBuf {
        let p = self.root().join(rel);
        fs::create_dir_all(&p).expect("mkdir");
        p
    }

    /// A file of `len` bytes at `rel`.
    pub fn file(&self, rel: &str, len: usize) -> PathBuf {
        let p = self.root().join(rel);
        fs::create_dir_all(p.parent().unwrap()).expect("mkdir");
        fs::write(&p, vec![b'x'; len]).expect("write");
        p
    }

    /// Makes the tree readable by everyone (for runs as another user).
    pub fn open_to_all(&self) {
        fs::set_permissions(self.root(), fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// A copy of the binary under test in the tree, which another user can
    /// surely run, once it can be run. While the copy is written, a child
    /// that another test thread forks holds the written descriptor until
    /// it execs, and running the copy then fails with ETXTBSY ("Text file
    /// busy"); it waits for those children. No descriptor is open for
    /// writing once a run succeeded, and none can be again.
    pub fn runnable_copy_of_bin(&self) -> PathBuf {
        let exe = self.root().join("traverse");
        fs::copy(bin(), &exe).unwrap();
        fs::set_permissions(&exe, fs::Permissions::from_mode(0o755)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match Command::new(&exe).arg("--version").output() {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => panic!("{}: {e}", exe.display()),
                Ok(_) => return exe,
            }
        }
    }
}

/// The binary under test: cargo's build, or the program named by
/// `TRAVERSE_TEST_EXE` (a wrapper that runs it under valgrind, say; see
/// "Memory checks" in the README).
pub fn bin() -> PathBuf {
    std::env::var_os("TRAVERSE_TEST_EXE").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_traverse")),
        PathBuf::from,
    )
}

/// Runs traverse with `args`.
pub fn traverse<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Command::new(bin())
        .args(args)
        .output()
        .expect("run traverse")
}

/// Runs `cmd` as `nobody` when we are root (root reads everything), else as
/// ourselves.
pub fn as_unprivileged(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        cmd.uid(65534).gid(65534);
    }
    cmd
}

/// Creates `n` sparse files `f0`, `f1`... of 2^63-1 bytes (the largest
/// size tmpfs allows) in `dir`; false, with a message, where the
/// filesystem refuses them.
pub fn sparse_max_files(dir: &Path, n: usize) -> bool {
    for i in 0..n {
        let f = fs::File::create(dir.join(format!("f{i}"))).unwrap();
        if f.set_len(i64::MAX as u64).is_err() {
            println!("skipped: this filesystem refuses files of 2^63-1 bytes");
            return false;
        }
    }
    true
}

/// Parses one line of `--json` output: the path (raw JSON text) and the
/// totals.
pub fn parse_json(line: &str) -> (String, Totals) {
    assert!(
        line.starts_with("{\"path\":") && line.ends_with('}'),
        "{line}"
    );
    let key = |k: &str| -> u128 {
        let pat = format!(",\"{k}\":");
        let at = line
            .rfind(&pat)
            .unwrap_or_else(|| panic!("no {k} in {line}"))
            + pat.len();
        let digits: String = line[at..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("bad {k} in {line}"))
    };
    let files_at = line.rfind(",\"files\":").expect("files key");
    let path = line["{\"path\":".len()..files_at].to_owned();
    let keys: Vec<&str> = [
        "path",
        "files",
        "dirs",
        "symlinks",
        "other",
        "bytes",
        "disk_bytes",
        "errors",
    ]
    .into_iter()
    .collect();
    let after_path = &line[files_at..];
    let found: Vec<&str> = after_path
        .split(',')
        .filter(|kv| !kv.is_empty())
        .filter_map(|kv| kv.split(':').next())
        .map(|k| k.trim_matches(|c| c == '"' || c == '{'))
        .collect();
    assert_eq!(found, keys[1..], "exactly the documented keys: {line}");
    (
        path,
        Totals {
            files: count(key("files")),
            dirs: count(key("dirs")),
            symlinks: count(key("symlinks")),
            other: count(key("other")),
            bytes: key("bytes"),
            disk_bytes: key("disk_bytes"),
            errors: count(key("errors")),
        },
    )
}

/// A count from the JSON output (64 bits).
fn count(n: u128) -> u64 {
    u64::try_from(n).expect("counts fit in 64 bits")
}

/// The totals of `path` with `engine` and extra options; checks the exit
/// status is 0.
pub fn totals(path: &Path, engine: &str, extra: &[&str]) -> Totals {
    let mut args: Vec<&OsStr> = vec![
        OsStr::new("--json"),
        OsStr::new("--engine"),
        OsStr::new(engine),
    ];
    args.extend(extra.iter().map(OsStr::new));
    args.push(path.as_os_str());
    let out = traverse(&args);
    let stdout = String::from_utf8(out.stdout).expect("JSON output is UTF-8");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "engine {engine}: {stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    parse_json(lines[0]).1
}

/// `find ARGS | wc -l`-like count of NUL-separated output.
pub fn find_count(path: &Path, args: &[&str]) -> u64 {
    let out = Command::new("find")
        .arg(path)
        .args(args)
        .arg("-print0")
        .output()
        .expect("run find");
    assert!(
        out.status.success(),
        "find: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout.iter().filter(|&&b| b == 0).count() as u64
}

/// The number `du ARGS PATH` prints.
/// du's output (exit status, stdout, stderr) for `args` in `dir`, from
/// GNU du or from traverse with `engine`.
pub fn du_output(engine: Option<&str>, dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = match engine {
        None => Command::new("du"),
        Some(engine) => {
            let mut c = Command::new(bin());
            c.args(["du", "--engine", engine]);
            c
        }
    };
    let out = cmd
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn du(path: &Path, args: &[&str]) -> u64 {
    let out = Command::new("du")
        .args(args)
        .arg(path)
        .output()
        .expect("run du");
    assert!(
        out.status.success(),
        "du: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("du output: {text}"))
}

/// What find and du say about `path` (with `-x` semantics when asked).
pub fn reference(path: &Path, count_links: bool, one_fs: bool) -> Totals {
    let mut find_extra: Vec<&str> = Vec::new();
    let mut du_extra: Vec<&str> = vec!["-s"];
    if one_fs {
        find_extra.push("-xdev");
        du_extra.push("-x");
    }
    if count_links {
        du_extra.push("-l");
    }
    let find_type = |t: &str| {
        let mut a = find_extra.clone();
        a.extend(["-type", t]);
        find_count(path, &a)
    };
    let all = find_count(path, &find_extra);
    let (files, dirs, symlinks) = (find_type("f"), find_type("d"), find_type("l"));
    let mut b = du_extra.clone();
    b.push("-b");
    let mut b1 = du_extra.clone();
    b1.push("-B1");
    Totals {
        files,
        dirs,
        symlinks,
        other: all - files - dirs - symlinks,
        bytes: du(path, &b).into(),
        disk_bytes: du(path, &b1).into(),
        errors: 0,
    }
}

/// Checks every engine against find and du on `path`.
pub fn check_all_engines(path: &Path, extra: &[&str]) {
    let count_links = extra.contains(&"--count-links");
    let one_fs = extra.contains(&"-x");
    let want = reference(path, count_links, one_fs);
    for engine in ENGINES {
        let got = totals(path, engine, extra);
        assert_eq!(got, want, "engine {engine} {extra:?} on {}", path.display());
    }
}

/// Paths printed by `traverse --list -0` and by `find -print0`, sorted.
pub fn list_both(path: &Path, engine: &str) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let out = traverse([
        OsStr::new("--list"),
        OsStr::new("-0"),
        OsStr::new("--engine"),
        OsStr::new(engine),
        path.as_os_str(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let split = |bytes: &[u8]| {
        let mut v: Vec<Vec<u8>> = bytes
            .split(|&b| b == 0)
            .filter(|s| !s.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        v.sort();
        v
    };
    let find = Command::new("find")
        .arg(path)
        .arg("-print0")
        .output()
        .expect("find");
    (split(&out.stdout), split(&find.stdout))
}

/// A path from bytes.
pub fn bytes_path(base: &Path, name: &[u8]) -> PathBuf {
    base.join(OsStr::from_bytes(name))
}

/// `src` through testfs with `options`, mounted on a new directory `mnt`
/// of `env`, or `None` (a note printed) where FUSE cannot be used.
pub fn mount_testfs(env: &TestEnv, src: &Path, options: &testfs::Options) -> Option<testfs::Mount> {
    if let Some(why) = testfs::cannot_mount() {
        println!("skipped: {why}");
        return None;
    }
    let mnt = env.mkdir("mnt");
    Some(testfs::Mount::new(src, &mnt, options).unwrap())
}

/// Whether the kernel must have GETDENTS, where a test would otherwise
/// skip what needs it: `IO_URING_GETDENTS_REQUIRE=1`, which the test VM
/// sets (the patched kernel, on an emulated CPU).
pub fn getdents_required() -> bool {
    std::env::var("IO_URING_GETDENTS_REQUIRE").as_deref() == Ok("1")
}

/// A bind mount (root only), unmounted on drop, also when the test fails.
pub struct BindMount(std::ffi::CString);

impl BindMount {
    /// Mounts `source` on `target` (`mount --bind`); panics on failure.
    pub fn new(source: &Path, target: &Path) -> BindMount {
        let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
        let (source, target) = (c(source), c(target));
        // SAFETY: the paths and the type are NUL-terminated and outlive the
        // call; the data may be null. A bind mount ignores the type, but
        // valgrind checks it as a string, so it is "none" (as mount(8)).
        let ret = unsafe {
            libc::mount(
                source.as_ptr(),
                target.as_ptr(),
                c"none".as_ptr(),
                libc::MS_BIND,
                std::ptr::null(),
            )
        };
        assert_eq!(ret, 0, "mount --bind: {}", std::io::Error::last_os_error());
        BindMount(target)
    }
}

impl Drop for BindMount {
    fn drop(&mut self) {
        // SAFETY: the path is NUL-terminated and outlives the call.
        unsafe { libc::umount2(self.0.as_ptr(), libc::MNT_DETACH) };
    }
}

/// Makes `cmd`'s process install the seccomp `filter` before it runs
/// (after `PR_SET_NO_NEW_PRIVS`, so no privilege is needed).
pub fn with_seccomp_filter(
    cmd: &mut Command,
    filter: impl AsRef<[libc::sock_filter]> + Send + Sync + 'static,
) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec and only
    // makes two prctl system calls; `filter` is moved into the closure and
    // lives until the call returns.
    unsafe {
        cmd.pre_exec(move || {
            let filter = filter.as_ref();
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A seccomp filter for `cmd` that fails the system call `nr` with `errno`
/// and allows every other one.
pub fn deny_syscall(cmd: &mut Command, nr: libc::c_long, errno: i32) -> &mut Command {
    let filter = [
        // The system call number (offset 0 of `struct seccomp_data`).
        bpf_stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
        bpf_jump_if(nr as u32, 1),
        bpf_stmt(
            libc::BPF_RET | libc::BPF_K,
            libc::SECCOMP_RET_ERRNO | errno as u32,
        ),
        bpf_stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
    ];
    with_seccomp_filter(cmd, filter);
    cmd
}

/// A BPF instruction that does not jump (a load or a return).
pub fn bpf_stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

/// A BPF test of the accumulator against `k`: equal, the next instruction;
/// else `skip_if_not` instructions further.
pub fn bpf_jump_if(k: u32, skip_if_not: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt: 0,
        jf: skip_if_not,
        k,
    }
}

/// How many times `traverse ARGS` made the system call `name`, counted by
/// `strace -f -c`, under `ulimit -n LIMIT` when given; `None` when strace
/// is not installed (the test VM has none; `.ci/run` installs it). The walk
/// stops only at the counted call (`--seccomp-bpf`), not at every one,
/// which would make each directory read look like a cold cache's.
pub fn syscall_calls(name: &str, open_limit: Option<u32>, args: &[&OsStr]) -> Option<u64> {
    let (calls, out) = syscall_calls_of_any_run(name, open_limit, args)?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(calls)
}

/// As [`syscall_calls`], for a run that may fail: the count, and the run's
/// output and status.
pub fn syscall_calls_of_any_run(
    name: &str,
    open_limit: Option<u32>,
    args: &[&OsStr],
) -> Option<(u64, Output)> {
    let env = TestEnv::new();
    let report = env.root().join("strace.txt");
    let limit = open_limit.map_or(String::new(), |n| format!("ulimit -n {n} && "));
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{limit}exec strace -f -c --seccomp-bpf -e trace={name} -o \"$0\" \"$@\""
        ))
        .arg(&report)
        .arg(bin())
        .args(args)
        .output()
        .unwrap();
    if out.status.code() == Some(127) {
        return None;
    }
    let text = fs::read_to_string(&report).unwrap();
    let row = text
        .lines()
        .find(|l| l.split_whitespace().last() == Some(name))
        .unwrap_or_else(|| panic!("no {name} row in:\n{text}"));
    Some((row.split_whitespace().nth(3).unwrap().parse().unwrap(), out))
}

/// Whether `program` runs here; the test VM has neither ncdu, gdu nor
/// tmux (`.ci/run` installs them on the host).
pub fn installed(program: &str) -> bool {
    let found = Command::new(program).arg("--version").output().is_ok();
    if !found {
        println!("skipped: {program} is not installed here (the test VM has none)");
    }
    found
}

/// A command in a tmux pane on a server of its own (-L: tests in parallel,
/// and a server exiting with its last session, cannot get in the way),
/// killed when dropped.
pub struct Pane {
    server: String,
}

impl Pane {
    /// Runs `command` (its words, or one shell line) in a pane of
    /// `width` × `height`, or `None` (a note printed) where tmux is
    /// missing.
    pub fn start(name: &str, (width, height): (u16, u16), command: &[&OsStr]) -> Option<Pane> {
        if !installed("tmux") {
            return None;
        }
        let server = format!("traverse-{name}-{}", std::process::id());
        let out = Command::new("tmux")
            .args(["-L", &server, "new-session", "-d", "-s", &server])
            .args(["-x", &width.to_string(), "-y", &height.to_string()])
            .args(command)
            .output()
            .expect("tmux");
        assert!(out.status.success(), "tmux: {out:?}");
        Some(Pane { server })
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.server])
            .args(args)
            .output()
            .expect("tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Types `keys`, one at a time.
    pub fn keys(&self, keys: &[&str]) {
        for key in keys {
            self.tmux(&["send-keys", "-t", &self.server, key]);
            // One key, one redraw: the next screen is the key's.
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What the pane shows now.
    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", &self.server])
    }

    /// What the pane shows now, with the escape sequences of its colours
    /// and attributes (`capture-pane -e`).
    pub fn styled_screen(&self) -> String {
        self.tmux(&["capture-pane", "-e", "-p", "-t", &self.server])
    }

    /// The screen once `ok` holds of it (20 s at most, then a failure
    /// showing the last screen).
    pub fn wait(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        self.wait_within(what, Duration::from_secs(20), ok)
    }

    /// As [`Pane::wait`], for `limit` at most.
    pub fn wait_within(&self, what: &str, limit: Duration, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            assert!(Instant::now() < deadline, "{what} never came:\n{screen}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

/// Whether the local du counts apparent sizes of directories (coreutils
/// before 9.2, as Debian 12's 9.1), where traverse follows today's rule:
/// regular files and symlinks only.
pub fn du_counts_directory_sizes() -> bool {
    let out = Command::new("du")
        .arg("--version")
        .output()
        .expect("du --version");
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text
        .lines()
        .next()
        .and_then(|l| l.rsplit(' ').next())
        .unwrap_or_default();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) < (9, 2)
}

/// The `st_size` of every directory in the tree at `path` (`path`
/// included, symlinks not followed): what coreutils before 9.2 adds to a
/// directory's apparent size and later versions do not.
pub fn directory_sizes(path: &Path) -> u64 {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return 0;
    }
    let below: u64 = fs::read_dir(path)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| directory_sizes(&e.path()))
                .sum()
        })
        .unwrap_or(0);
    meta.len() + below
}

/// du's lines of apparent sizes in bytes (`du -b ...` output) under
/// today's rule: each directory's line without its directories' sizes,
/// where the local du still counts them. `dir` is where du ran.
pub fn apparent_as_today(dir: &Path, du_output: &str) -> String {
    if !du_counts_directory_sizes() {
        return du_output.to_owned();
    }
    du_output
        .lines()
        .map(|line| {
            let (size, name) = line.split_once('\t').expect("SIZE<TAB>PATH");
            let size: u64 = size.parse().expect("a size in bytes");
            let path = dir.join(name);
            let fixed = if name == "total" && !path.exists() {
                size
            } else {
                size - directory_sizes(&path)
            };
            format!("{fixed}\t{name}\n")
        })
        .collect()
}
