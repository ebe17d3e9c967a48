//! What `--interactive` draws beside sizes and names, driven in tmux and
//! read back with `capture-pane -e`: colours, and none under `NO_COLOR`;
//! the flag column (`!` a directory that could not be read, whole or in
//! part, as `find` run by the same user reports it; `H` a hard-linked
//! file, `@` not a regular file, as `stat` says; `>` with `-x`, a directory
//! on another filesystem); the count column that
//! `c` hides and shows again, and the times `m` shows and hides. Skipped
//! where tmux is missing (the test VM).

mod browser;
mod testenv;

use std::fs;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use browser::*;
use testenv::*;

/// Colours by default (the bars green, directory names blue), also with
/// an empty `NO_COLOR` (no-color.org: only a non-empty value counts);
/// with `NO_COLOR=1` not one colour anywhere on the screen, while the
/// selection is still shown in reverse video.
#[test]
fn colours_unless_no_color_is_set() {
    let env = TestEnv::new();
    let t = env.mkdir("t");
    env.file("t/sub/f", 9000);
    env.file("t/file", 3000);
    for (run, setting) in [
        ("unset", "-u NO_COLOR"),
        ("empty", "NO_COLOR="),
        ("set", "NO_COLOR=1"),
    ] {
        let line = format!("env {setting} {} -i {}", bin().display(), t.display());
        let Some(pane) = start_line(&format!("colour-{run}"), 100, &line) else {
            return;
        };
        let screen = pane.wait("the scan's end", scanned);
        assert_eq!(rows(&screen), reference_rows_by_size(&t), "{screen}");
        let styled = pane.styled_screen();
        let lines = cells(&styled);
        let coloured: Vec<String> = (lines.iter().flatten())
            .filter(|c| c.fg.is_some() || c.bg.is_some())
            .map(|c| c.ch.to_string())
            .collect();
        let row = |name: &str| {
            (lines.iter())
                .find(|l| text(l).trim_end().ends_with(name))
                .unwrap_or_else(|| panic!("no row {name}: {styled:?}"))
        };
        // The first character of the name, and of the bar.
        let name_fg = |name: &str| {
            let l = row(name);
            let at = text(l).rfind(name).unwrap();
            l[text(l)[..at].chars().count()].fg
        };
        let bar_fg = |name: &str| row(name).iter().find(|c| c.ch == '#').unwrap().fg;
        if run == "set" {
            assert!(coloured.is_empty(), "coloured: {coloured:?}\n{styled:?}");
            assert_eq!(
                selected_name(&styled).as_deref(),
                Some("sub/"),
                "{styled:?}"
            );
        } else {
            // The palette's green and blue (2 and 4).
            assert_eq!(bar_fg("sub/"), Some(2), "{styled:?}");
            assert_eq!(bar_fg("file"), Some(2), "{styled:?}");
            assert_eq!(name_fg("sub/"), Some(4), "{styled:?}");
            assert_eq!(name_fg("file"), None, "{styled:?}");
        }
        pane.keys(&["q"]);
        pane.wait("exit status 0", |s| s.contains("EXIT=0"));
    }
}

/// The directories below `dir` that the user running [`as_unprivileged`]
/// cannot read, as `find` reports them (`LC_ALL=C`: its messages quote
/// paths with `'`).
fn unreadable_as_unprivileged(dir: &Path) -> Vec<PathBuf> {
    let out = as_unprivileged(Command::new("find").arg(dir).env("LC_ALL", "C"))
        .output()
        .expect("find");
    String::from_utf8(out.stderr)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_suffix(": Permission denied"))
        .map(|l| PathBuf::from(l.trim_start_matches("find: ").trim_matches('\'')))
        .collect()
}

/// The flag column: `!` for a directory that could not be read, itself
/// or any directory below it (here as the user `find` reports them for),
/// `H` for a file with more than one link, `@` for a symlink and a fifo,
/// nothing for the rest. Root reads every directory, so as root the
/// browser runs as `nobody` (setpriv).
#[test]
fn flags_mark_unreadable_directories_hard_links_and_special_files() {
    let env = TestEnv::new();
    env.open_to_all();
    let t = env.mkdir("t");
    env.file("t/locked/secret", 100);
    env.file("t/outer/inner/secret", 100);
    env.file("t/outer/fine", 100);
    env.file("t/open/f", 100);
    env.file("t/file", 100);
    fs::hard_link(t.join("file"), t.join("file2")).unwrap();
    symlink("file", t.join("link")).unwrap();
    let made = Command::new("mkfifo").arg(t.join("fifo")).status();
    assert!(made.is_ok_and(|s| s.success()));
    for dir in ["t", "t/locked", "t/outer", "t/outer/inner", "t/open"] {
        let path = env.root().join(dir);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    }
    for locked in ["t/locked", "t/outer/inner"] {
        let path = env.root().join(locked);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let line = if root {
        if !have("setpriv") {
            eprintln!("skipped: no setpriv to run the browser as nobody");
            return;
        }
        format!(
            "setpriv --reuid 65534 --regid 65534 --clear-groups {} -i {}",
            env.runnable_copy_of_bin().display(),
            t.display()
        )
    } else {
        format!("{} -i {}", bin().display(), t.display())
    };
    let denied = unreadable_as_unprivileged(&t);
    assert_eq!(denied.len(), 2, "{denied:?}");
    let Some(pane) = start_line("flags", 120, &line) else {
        return;
    };
    let (screen, shown) = names_and_flags(&pane);
    let mut want: Vec<(String, String)> = Vec::new();
    let mut names: Vec<PathBuf> = (fs::read_dir(&t).unwrap())
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for path in names {
        let meta = fs::symlink_metadata(&path).unwrap();
        let mut name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let flag = if meta.is_dir() {
            name.push('/');
            if denied.iter().any(|d| d.starts_with(&path)) {
                '!'
            } else {
                ' '
            }
        } else if !meta.is_file() {
            '@'
        } else if meta.nlink() > 1 {
            'H'
        } else {
            ' '
        };
        want.push((name, format!(" {flag}")));
    }
    assert_eq!(shown, want, "{screen}");
    pane.keys(&["q"]);
    pane.wait("exit status 0", |s| s.contains("EXIT=0"));
    for locked in ["t/locked", "t/outer/inner"] {
        let path = env.root().join(locked);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Once the scan ends, the rows sorted by name: the screen, and each
/// row's name with its flag column.
fn names_and_flags(pane: &Pane) -> (String, Vec<(String, String)>) {
    pane.wait("the scan's end", scanned);
    pane.keys(&["n"]);
    let screen = pane.wait("sorted by name", |s| s.contains("(sort: name)"));
    let shown = (rows(&screen).into_iter())
        .map(|r| r.name)
        .zip(flags(&screen))
        .collect();
    (screen, shown)
}

/// The rows of a screen without the count column: size and name.
fn rows_without_count(screen: &str) -> Vec<(String, String)> {
    screen
        .lines()
        .skip(1)
        .take_while(|l| l.contains('[') && l.contains('%'))
        .map(|l| {
            let (size, rest) = l.split_once('[').unwrap();
            let (_, rest) = rest.split_once(']').unwrap();
            let words: Vec<&str> = rest.split_whitespace().collect();
            assert_eq!(words.len(), 2, "a count column still: {l:?}");
            (size[2..].trim().to_owned(), words[1].to_owned())
        })
        .collect()
}

/// `c` hides the count column (the entries below each row, as `find`
/// counts them), and shows it again; `m` shows the modification times
/// (set here through std), and hides them again.
#[test]
fn c_hides_and_shows_the_count_column_m_the_times() {
    let env = TestEnv::new();
    let t = env.mkdir("t");
    for i in 0..7 {
        env.file(&format!("t/seven/f{i}"), 10);
    }
    env.file("t/two/f", 5000);
    env.file("t/file", 30_000);
    // 2020-01-02 03:04 UTC, as the browser shows times.
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_577_934_240);
    for name in ["seven", "two", "file"] {
        fs::File::open(t.join(name))
            .and_then(|f| f.set_modified(when))
            .unwrap();
    }
    let Some(pane) = start_browser("count-column", &format!("-i {}", t.display())) else {
        return;
    };
    let screen = pane.wait("the scan's end", scanned);
    let want = reference_rows_by_size(&t);
    assert_eq!(rows(&screen), want, "{screen}");
    pane.keys(&["c"]);
    let screen = pane.wait("no count column", |s| {
        s.lines().nth(1).is_some_and(|l| {
            l.split_once(']')
                .is_some_and(|(_, r)| r.split_whitespace().count() == 2)
        })
    });
    let sizes_and_names: Vec<(String, String)> = want
        .iter()
        .map(|r| (r.size.clone(), r.name.clone()))
        .collect();
    assert_eq!(rows_without_count(&screen), sizes_and_names, "{screen}");
    pane.keys(&["c"]);
    let screen = pane.wait("the count column again", |s| {
        s.lines().nth(1).is_some_and(|l| {
            l.split_once(']')
                .is_some_and(|(_, r)| r.split_whitespace().count() == 3)
        })
    });
    assert_eq!(rows(&screen), want, "{screen}");
    let time_shown = |s: &str| {
        let lines: Vec<&str> = s.lines().skip(1).take(want.len()).collect();
        lines
            .iter()
            .filter(|l| l.contains("2020-01-02 03:04"))
            .count()
    };
    assert_eq!(time_shown(&screen), 0, "{screen}");
    pane.keys(&["m"]);
    let screen = pane.wait("the times", |s| time_shown(s) == want.len());
    let names: Vec<&str> = (screen.lines().skip(1).take(want.len()))
        .map(|l| l.split_whitespace().last().unwrap())
        .collect();
    let want_names: Vec<&str> = want.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, want_names, "{screen}");
    pane.keys(&["m"]);
    let screen = pane.wait("no times", |s| time_shown(s) == 0);
    assert_eq!(rows(&screen), want, "{screen}");
    pane.keys(&["q"]);
    pane.wait("exit status 0", |s| s.contains("EXIT=0"));
}

/// Unmounts on drop, so a failed assertion leaves no mount behind.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// With `-x`, a directory on another filesystem is shown, not walked, and
/// flagged `>` (ncdu's mark for it); the directory beside it is not.
/// Root only (a tmpfs is mounted in the tree).
#[test]
fn x_flags_a_directory_on_another_filesystem() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    }
    let env = TestEnv::new();
    let t = env.mkdir("t");
    env.file("t/here/f", 100);
    let mnt = env.mkdir("t/mnt");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&mnt)
        .status();
    if !mounted.is_ok_and(|s| s.success()) {
        eprintln!("skipped: cannot mount a tmpfs here");
        return;
    }
    let _mounted = Mounted(mnt.clone());
    fs::write(mnt.join("inside"), vec![1u8; 4096]).unwrap();
    let line = format!("{} -x -i {}", bin().display(), t.display());
    let Some(pane) = start_line("otherfs", 120, &line) else {
        return;
    };
    let (screen, shown) = names_and_flags(&pane);
    // The mount point is not walked: an entry without a `/`, as ncdu
    // shows what it left out.
    let want = [("here/", "  "), ("mnt", " >")].map(|(n, f)| (n.to_owned(), f.to_owned()));
    assert_eq!(shown, want, "{screen}");
    pane.keys(&["q"]);
    pane.wait("exit status 0", |s| s.contains("EXIT=0"));
}
