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
