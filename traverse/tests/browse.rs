//! `--interactive`, driven in tmux as a person would (send-keys,
//! capture-pane), its screens checked against du and find: the first
//! screen, moving down a level and back, sorting, deleting a file and a
//! directory, a directory swapped for a symlink refused, `q`, and the
//! first answers shown before the scan ends. Skipped where tmux is
//! missing (the test VM).

mod testenv;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use testenv::*;

/// `traverse ARGS` in a pane, in a shell that prints its exit status and
/// stays, or `None` (a note printed) where tmux is missing.
fn start_browser(name: &str, args: &str) -> Option<Pane> {
    let script = format!("{} {args}; echo EXIT=$?; sleep 60", bin().display());
    Pane::start(&format!("browse-{name}"), (120, 30), &[script.as_ref()])
}

/// A row of the listing: size as shown, entries, name (with `/` for a
/// directory).
#[derive(Debug, PartialEq, Eq)]
struct Row {
    size: String,
    count: u64,
    name: String,
}

/// The rows of a screen: the lines between the title and the first
/// empty one.
fn rows(screen: &str) -> Vec<Row> {
    screen
        .lines()
        .skip(1)
        .take_while(|l| l.contains('['))
        .map(|l| {
            let (size, rest) = l.split_once('[').unwrap();
            let (_, rest) = rest.split_once(']').unwrap();
            let mut words = rest.split_whitespace();
            Row {
                size: size.trim().to_owned(),
                count: words.next().unwrap().parse().unwrap(),
                name: words.next().unwrap().to_owned(),
            }
        })
        .collect()
}

/// The row du and find give for `path` (du -sh --apparent-size, find |
/// wc -l), named as the browser names it.
fn reference_row(path: &Path) -> Row {
    let out = Command::new("du")
        .args(["-s", "-h", "--apparent-size"])
        .arg(path)
        .output()
        .unwrap();
    let du = String::from_utf8(out.stdout).unwrap();
    let mut name = path.file_name().unwrap().to_str().unwrap().to_owned();
    if path.symlink_metadata().unwrap().is_dir() {
        name.push('/');
    } else if !path.symlink_metadata().unwrap().is_file() {
        name.push('@');
    }
    Row {
        size: du.split_whitespace().next().unwrap().to_owned(),
        count: find_count(path, &[]),
        name,
    }
}

/// The reference rows of `dir`'s entries, in name order.
fn reference_rows(dir: &Path) -> Vec<Row> {
    let mut names: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    names.iter().map(|p| reference_row(p)).collect()
}

/// The title's totals: "SIZE in N entries", checked against du and find.
fn assert_title(screen: &str, dir: &Path) {
    let want = reference_row(dir);
    let title = screen.lines().next().unwrap();
    let expect = format!("{}  {} in {} entries", dir.display(), want.size, want.count);
    assert!(
        title.starts_with(&expect),
        "want {expect:?}, screen:\n{screen}"
    );
}

fn scanned(screen: &str) -> bool {
    screen.contains("scanned in")
}

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
    let mut want = reference_rows(&t);
    let bytes = |r: &Row| du(&t.join(r.name.trim_end_matches(['/', '@'])), &["-sb"]);
    want.sort_by(|a, b| bytes(b).cmp(&bytes(a)).then_with(|| a.name.cmp(&b.name)));
    assert_eq!(rows(&screen), want, "{screen}");
    // By name, then by count.
    pane.keys(&["n"]);
    let screen = pane.wait("sort by name", |s| s.contains("(sort: name)"));
    assert_eq!(rows(&screen), reference_rows(&t), "{screen}");
    pane.keys(&["c"]);
    let screen = pane.wait("sort by count", |s| s.contains("(sort: count)"));
    let counts: Vec<u64> = rows(&screen).iter().map(|r| r.count).collect();
    assert!(counts.windows(2).all(|w| w[0] >= w[1]), "{screen}");
    assert_eq!(rows(&screen)[0].name, "many/", "{screen}");
    // Down into big (first by name), into inner, and back up twice.
    pane.keys(&["n", "Enter"]);
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

/// Selects `name` in the listing sorted by name (the rows of `dir`).
fn select(pane: &Pane, dir: &Path, name: &str) {
    pane.keys(&["n", "Home"]);
    let at = reference_rows(dir)
        .iter()
        .position(|r| r.name.trim_end_matches(['/', '@']) == name)
        .unwrap();
    for _ in 0..at {
        pane.keys(&["j"]);
    }
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
    pane.wait("the question", |s| s.contains("Delete one? (y/n)"));
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
    pane.wait("the question", |s| {
        s.contains("Delete mid and everything in it? (y/n)")
    });
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
