//! `--interactive`, driven in tmux as a person would (send-keys,
//! capture-pane), its screens checked against du and find: the first
//! screen, moving down a level and back, sorting, deleting a file and a
//! directory, a directory swapped for a symlink refused, `q`, and the
//! first answers shown before the scan ends. Skipped where tmux is
//! missing (the test VM).

mod browser;
mod testenv;

use std::fs;
use std::os::unix::fs::symlink;
use std::process::Command;
use std::time::Duration;

use browser::*;
use testenv::*;

/// A tree with files of different sizes at two levels, a symlink, an
/// empty directory.
fn tree(env: &TestEnv) -> std::path::PathBuf {
    let t = env.mkdir("t");
    env.file("t/big/one", 300_000);
    env.file("t/big/inner/two", 100_000);
    env.file("t/big/inner/three", 10);
    env.file("t/mid/f", 50_000);
    env.file("t/mid/g", 20);
    env.file("t/top", 7000);
    env.mkdir("t/empty");
    for i in 0..5 {
        env.file(&format!("t/many/f{i}"), 10);
    }
    symlink("top", t.join("link")).unwrap();
    t
}

#[test]
fn first_screen_moving_and_sorting_match_du() {
    let env = TestEnv::new();
    let t = tree(&env);
    let Some(pane) = start_browser("move", &format!("-i {}", t.display())) else {
        return;
    };
    let screen = pane.wait("the scan's end", scanned);
    assert_title(&screen, &t);
    // Sorted by size, largest first: the reference rows in that order.
    assert_eq!(rows(&screen), reference_rows_by_size(&t), "{screen}");
    // By name, then by count.
    pane.keys(&["n"]);
    let screen = pane.wait("sort by name", |s| s.contains("(sort: name)"));
    assert_eq!(rows(&screen), reference_rows(&t), "{screen}");
    pane.keys(&["C"]);
    let screen = pane.wait("sort by count", |s| s.contains("(sort: count)"));
    let counts: Vec<u64> = rows(&screen).iter().map(|r| r.count).collect();
    assert!(counts.windows(2).all(|w| w[0] >= w[1]), "{screen}");
    assert_eq!(rows(&screen)[0].name, "many/", "{screen}");
    // Down into big (first by name), into inner, and back up twice.
    pane.keys(&["n", "Home", "Enter"]);
    let screen = pane.wait("big", |s| s.starts_with(&format!("{}/big ", t.display())));
    assert_title(&screen, &t.join("big"));
    assert_eq!(rows(&screen), reference_rows(&t.join("big")), "{screen}");
    // A file is not entered: the next Enter, on inner/, goes in.
    pane.keys(&["j", "Enter", "k", "Enter"]);
    let screen = pane.wait("inner", |s| {
        s.starts_with(&format!("{}/big/inner ", t.display()))
    });
    assert_eq!(
        rows(&screen),
        reference_rows(&t.join("big/inner")),
        "{screen}"
    );
    pane.keys(&["BSpace", "Left"]);
    let screen = pane.wait("the root again", |s| {
        s.starts_with(&format!("{}  ", t.display()))
    });
    assert_eq!(rows(&screen), reference_rows(&t), "{screen}");
    pane.keys(&["q"]);
    pane.wait("exit status 0", |s| s.contains("EXIT=0"));
}

#[test]
fn deleting_a_file_and_a_directory_updates_disk_and_totals() {
    let env = TestEnv::new();
    let t = tree(&env);
    let Some(pane) = start_browser("delete", &format!("-i {}", t.display())) else {
        return;
    };
    pane.wait("the scan's end", scanned);
    // A file in a subdirectory: the directory's and the root's totals drop.
    select(&pane, &t, "big");
    pane.keys(&["Enter"]);
    pane.wait("big", |s| s.starts_with(&format!("{}/big ", t.display())));
    select(&pane, &t.join("big"), "one");
    pane.keys(&["d"]);
    let one = reference_row(&t.join("big/one"));
    let question = format!(
        "Delete {}/big/one: {} in 1 entries? (y/n)",
        t.display(),
        one.size
    );
    pane.wait("the question", |s| s.contains(&question));
    pane.keys(&["y"]);
    let screen = pane.wait("the file deleted", |s| s.contains("deleted one"));
    assert!(!t.join("big/one").exists());
    assert_title(&screen, &t.join("big"));
    assert_eq!(rows(&screen), reference_rows(&t.join("big")), "{screen}");
    // A directory, from the root: "n" keeps it.
    pane.keys(&["BSpace"]);
    let screen = pane.wait("the root", |s| s.starts_with(&format!("{}  ", t.display())));
    assert_title(&screen, &t);
    select(&pane, &t, "mid");
    pane.keys(&["d", "n"]);
    pane.wait("kept", |s| s.contains("not deleted"));
    assert!(t.join("mid/f").exists());
    pane.keys(&["d"]);
    let mid = reference_row(&t.join("mid"));
    let question = format!(
        "Delete {}/mid/ and everything in it: {} in {} entries? (y/n)",
        t.display(),
        mid.size,
        mid.count
    );
    pane.wait("the question", |s| s.contains(&question));
    pane.keys(&["y"]);
    let screen = pane.wait("the directory deleted", |s| s.contains("deleted mid"));
    assert!(!t.join("mid").exists());
    assert_title(&screen, &t);
    assert_eq!(rows(&screen), reference_rows(&t), "{screen}");
    pane.keys(&["q"]);
    pane.wait("exit status 0", |s| s.contains("EXIT=0"));
}

#[test]
fn a_directory_swapped_for_a_symlink_is_not_deleted() {
    let env = TestEnv::new();
    let t = tree(&env);
    env.file("t/victim/keep", 10);
    env.file("outside/precious", 10);
    let outside = env.root().join("outside");
    let Some(pane) = start_browser("swap", &format!("-i {}", t.display())) else {
        return;
    };
    pane.wait("the scan's end", scanned);
    // The target itself: victim becomes a symlink to a directory outside.
    select(&pane, &t, "victim");
    fs::rename(t.join("victim"), env.root().join("victim-moved")).unwrap();
    symlink(&outside, t.join("victim")).unwrap();
    pane.keys(&["d", "y"]);
    let screen = pane.wait("the refusal", |s| s.contains("not deleted"));
    assert!(screen.contains("victim: no longer a directory"), "{screen}");
    assert!(outside.join("precious").exists());
    assert!(env.root().join("victim-moved/keep").exists());
    // A level above the target: big becomes a symlink to outside, which
    // holds an "inner" too.
    env.file("outside/inner/two", 10);
    select(&pane, &t, "big");
    pane.keys(&["Enter"]);
    pane.wait("big", |s| s.starts_with(&format!("{}/big ", t.display())));
    fs::rename(t.join("big"), env.root().join("big-moved")).unwrap();
    symlink(&outside, t.join("big")).unwrap();
    pane.keys(&["d", "y"]);
    let screen = pane.wait("the refusal", |s| s.contains("not deleted"));
    assert!(screen.contains("big: no longer a directory"), "{screen}");
    assert!(outside.join("inner/two").exists());
    assert!(env.root().join("big-moved/inner/two").exists());
    // The totals are as they were.
    fs::remove_file(t.join("big")).unwrap();
    fs::rename(env.root().join("big-moved"), t.join("big")).unwrap();
    assert_title(&pane.screen(), &t.join("big"));
    pane.keys(&["q"]);
    pane.wait("exit status 0", |s| s.contains("EXIT=0"));
}

/// On a slow mount (FUSE, 3 ms a request), directories of the first
/// level show with their final totals while the scan still runs.
#[test]
fn first_answers_show_before_the_scan_ends() {
    let env = TestEnv::new();
    let src = env.mkdir("src");
    for d in 0..20 {
        for f in 0..20 {
            env.file(&format!("src/d{d:02}/f{f}"), f);
        }
    }
    let options = testfs::Options::new().delay(Duration::from_millis(3));
    let Some(mount) = mount_testfs(&env, &src, &options) else {
        return;
    };
    let Some(pane) = start_browser(
        "early",
        &format!("-i -j 1 {}", mount.mountpoint().display()),
    ) else {
        return;
    };
    let screen = pane.wait("a final directory during the scan", |s| {
        s.contains("scanning:") && !rows(s).is_empty() || scanned(s)
    });
    assert!(
        screen.contains("scanning:"),
        "the scan ended first:
{screen}"
    );
    for row in rows(&screen) {
        assert_eq!(
            row,
            reference_row(&src.join(row.name.trim_end_matches('/')))
        );
    }
    pane.keys(&["q"]);
    pane.wait("exit status 0", |s| s.contains("EXIT=0"));
}

/// `s` without its whitespace: a status line wrapped over several screen
/// lines compares whole.
fn squash(s: &str) -> String {
    s.split_whitespace().collect()
}

/// The root is opened once, and the walk runs from that descriptor, the
/// one deletions start from. An attacker who owns a symlink in PATH
/// points it at a tree of their own as soon as the browser has opened
/// the directory (inotify says when): the screen still shows the
/// directory that deletions act on.
#[test]
fn a_symlink_in_path_swapped_after_the_open_changes_nothing() {
    use std::io::{BufRead, BufReader};
    if !installed("python3") {
        eprintln!("skipped: no python3 (the attacker's inotify)");
        return;
    }
    let env = TestEnv::new();
    env.open_to_all();
    let victim = env.mkdir("victim");
    env.file("victim/important/keep", 1000);
    env.file("victim/other", 10);
    let att = env.mkdir("att");
    env.file("att/tree/decoy/f", 10);
    for p in ["att", "att/tree", "att/tree/decoy", "att/tree/decoy/f"] {
        std::os::unix::fs::chown(env.root().join(p), Some(65534), Some(65534)).unwrap();
    }
    symlink(&victim, att.join("x")).unwrap();
    let script = "import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init()
if fd < 0 or libc.inotify_add_watch(fd, sys.argv[1].encode(), 0x20) < 0:
    sys.exit('inotify: ' + os.strerror(ctypes.get_errno()))
print('ready', flush=True)
os.read(fd, 4096)
os.symlink(sys.argv[2], sys.argv[3] + '.new')
os.rename(sys.argv[3] + '.new', sys.argv[3])
print('swapped', flush=True)
";
    let mut attacker = as_unprivileged(Command::new("python3").args(["-c", script]))
        .arg(&victim)
        .arg(att.join("tree"))
        .arg(att.join("x"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = BufReader::new(attacker.stdout.take().unwrap());
    let mut line = String::new();
    said.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    let Some(pane) = start_browser("swap-root", &format!("-i {}/x/", att.display())) else {
        let _ = attacker.kill();
        let _ = attacker.wait();
        return;
    };
    line.clear();
    said.read_line(&mut line).unwrap();
    let status = attacker.wait().unwrap();
    assert_eq!(line, "swapped\n");
    assert!(status.success());
    pane.wait("the scan's end", scanned);
    pane.keys(&["n"]);
    let screen = pane.wait("sorted by name", |s| s.contains("(sort: name)"));
    assert_eq!(rows(&screen), reference_rows(&victim), "{screen}");
    // The row deleted is the one shown, in the directory shown.
    select(&pane, &victim, "other");
    pane.keys(&["d", "y"]);
    pane.wait("the file deleted", |s| s.contains("deleted other"));
    assert!(!victim.join("other").exists());
    assert!(att.join("tree/decoy/f").exists());
    pane.keys(&["q"]);
    pane.wait("exit status 0", |s| s.contains("EXIT=0"));
}

/// Undoes `chattr +i` on drop, so the test's tree can be removed.
struct Immutable(std::path::PathBuf);

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

/// Deleting a directory never enters another mount below it (a bind
/// mount of a directory outside the tree, on the same device), goes on
/// past an error (an immutable file) as `rm -rf` does, says what it
/// deleted and what it left with the errors in full, and shows the sizes
/// of a rescan.
#[test]
fn a_delete_leaves_mounts_alone_and_goes_on_past_errors() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: a bind mount needs root");
        return;
    }
    let env = TestEnv::new();
    let t = tree(&env);
    env.file("outside/precious", 10);
    env.file("t/d/a/f1", 100);
    env.file("t/d/a/f2", 100);
    env.mkdir("t/d/m");
    let stuck = env.file("t/d/z/stuck", 10);
    env.file("t/d/zz", 10);
    let _bind = BindMount::new(&env.root().join("outside"), &t.join("d/m"));
    let ok = Command::new("chattr").arg("+i").arg(&stuck).status();
    if !ok.is_ok_and(|s| s.success()) {
        eprintln!("skipped: chattr +i fails here");
        return;
    }
    let _undo = Immutable(stuck.clone());
    let Some(pane) = start_browser("leave", &format!("-i {}", t.display())) else {
        return;
    };
    pane.wait("the scan's end", scanned);
    select(&pane, &t, "d");
    pane.keys(&["d", "y"]);
    let screen = pane.wait("the outcome", |s| s.contains("entries left"));
    assert!(env.root().join("outside/precious").exists());
    assert!(stuck.exists());
    assert!(!t.join("d/a").exists() && !t.join("d/zz").exists());
    // a, f1, f2, zz deleted; z, stuck, m and d left; the errors in full
    // (in the order the directory lists them).
    let text = squash(&screen);
    assert!(text.contains(&squash("d: deleted 4 entries,")), "{screen}");
    assert!(
        text.contains(&squash("4 entries left, 2 errors:")),
        "{screen}"
    );
    for error in [
        format!("{}/d/z/stuck: Operation not permitted", t.display()),
        format!(
            "{}/d/m: another mount: not entered, left as it is",
            t.display()
        ),
    ] {
        assert!(text.contains(&squash(&error)), "{error}\n{screen}");
    }
    // The sizes shown are those of a rescan (sorted by name still: "n"
    // again would reverse the order).
    let screen = pane.wait("sorted by name", |s| s.contains("(sort: name)"));
    assert_eq!(rows(&screen), reference_rows(&t), "{screen}");
    assert_title(&screen, &t);
    pane.keys(&["q"]);
    pane.wait("exit status 0", |s| s.contains("EXIT=0"));
}

/// A chain of 1 500 directories, deleted by a browser limited to 1 024
/// descriptors (`prlimit`): the delete holds a bounded number of them
/// whatever the depth.
#[test]
fn a_chain_deeper_than_the_descriptor_limit_is_deleted_whole() {
    if !installed("prlimit") {
        eprintln!("skipped: no prlimit");
        return;
    }
    let env = TestEnv::new();
    let t = env.mkdir("t");
    let mut deep = t.join("c");
    for _ in 1..1500 {
        deep.push("d");
    }
    fs::create_dir_all(&deep).unwrap();
    fs::write(deep.join("f"), b"x").unwrap();
    env.file("t/keep", 10);
    let script = format!(
        "prlimit --nofile=1024:1024 {} -i {}; echo EXIT=$?; sleep 60",
        bin().display(),
        t.display()
    );
    let Some(pane) = Pane::start("browse-chain", (120, 30), &[script.as_ref()]) else {
        return;
    };
    pane.wait("the scan's end", scanned);
    select(&pane, &t, "c");
    pane.keys(&["d", "y"]);
    let screen = pane.wait("the outcome", |s| s.contains("deleted c"));
    assert!(squash(&screen).contains("deletedc:1501entries"), "{screen}");
    assert!(!t.join("c").exists());
    assert_eq!(rows(&screen), reference_rows(&t), "{screen}");
    pane.keys(&["q"]);
    pane.wait("exit status 0", |s| s.contains("EXIT=0"));
}

/// Zero-width and bidirectional characters show escaped, as control
/// characters do: `cache` and `cache<U+200B>` look different in the list
/// and in the question, which names the full path, size and entry count.
#[test]
fn invisible_characters_in_names_are_shown_escaped() {
    let env = TestEnv::new();
    let t = env.mkdir("t");
    env.file("t/cache/f", 10);
    env.file("t/cache\u{200b}/f", 2000);
    env.file("t/a\u{202e}txt.exe", 10);
    let Some(pane) = start_browser("invisible", &format!("-i {}", t.display())) else {
        return;
    };
    pane.wait("the scan's end", scanned);
    pane.keys(&["n"]);
    let screen = pane.wait("sorted by name", |s| s.contains("(sort: name)"));
    let names: Vec<_> = rows(&screen).into_iter().map(|r| r.name).collect();
    assert_eq!(
        names,
        ["a\\xe2\\x80\\xaetxt.exe", "cache/", "cache\\xe2\\x80\\x8b/"],
        "{screen}"
    );
    pane.keys(&["End", "d"]);
    let row = reference_row(&t.join("cache\u{200b}"));
    let question = format!(
        "Delete {}/cache\\xe2\\x80\\x8b/ and everything in it: {} in {} entries? (y/n)",
        t.display(),
        row.size,
        row.count
    );
    pane.wait("the question", |s| squash(s).contains(&squash(&question)));
    pane.keys(&["n", "q"]);
    pane.wait("exit status 0", |s| s.contains("EXIT=0"));
}
