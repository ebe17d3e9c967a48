//! `--interactive`'s moves and orders, driven in tmux: the selection
//! (the row in reverse video, read with `capture-pane -e`) after arrows,
//! PgUp and PgDn; every key of the key table that goes into a directory
//! or up from it; each sort key, and the same key again reversing its
//! order, checked against du, find and stat. Skipped where tmux is
//! missing (the test VM).

mod browser;
mod testenv;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use browser::*;
use testenv::*;

/// The name of the selected row once the screen shows it: `want`, or a
/// failure showing what was selected.
fn assert_selected(pane: &Pane, what: &str, want: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let styled = pane.styled_screen();
        let got = selected_name(&styled);
        if got.as_deref() == Some(want) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: selected {got:?}, want {want:?}\n{}",
            pane.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// PgDn and PgUp move the selection by the rows on screen (a page),
/// stopping at the first and last rows; Down and Up by one. The page is
/// counted off the first screen, the names are read_dir's.
#[test]
fn page_keys_move_the_selection_by_a_screen() {
    let env = TestEnv::new();
    let t = env.mkdir("t");
    for i in 0..100 {
        env.file(&format!("t/f{i:03}"), 10);
    }
    let Some(pane) = start_browser("pages", &format!("-i {}", t.display())) else {
        return;
    };
    pane.wait("the scan's end", scanned);
    pane.keys(&["n"]);
    let screen = pane.wait("sorted by name", |s| s.contains("(sort: name)"));
    let names: Vec<String> = reference_rows(&t).into_iter().map(|r| r.name).collect();
    let page = rows(&screen).len();
    assert!(page > 5 && page < 50, "{screen}");
    let last = names.len() - 1;
    let mut at = 0;
    assert_selected(&pane, "the start", &names[at]);
    for (key, to) in [
        ("NPage", page),
        ("NPage", 2 * page),
        ("PPage", page),
        ("Down", page + 1),
        ("Down", page + 2),
        ("Up", page + 1),
        ("PPage", 1),
        ("PPage", 0),
        ("PPage", 0),
        ("End", last),
        ("PPage", last - page),
        ("NPage", last),
        ("NPage", last),
        ("Home", 0),
        ("Up", 0),
    ] {
        pane.keys(&[key]);
        assert_selected(&pane, &format!("{key} from row {at}"), &names[to]);
        at = to;
    }
    pane.keys(&["q"]);
    pane.wait("exit status 0", |s| s.contains("EXIT=0"));
}

/// Enter, Right and `l` go into the selected directory; Backspace, Left,
/// `h` and `<` go up: each shows the directory's rows as du and find see
/// them.
#[test]
fn every_key_into_a_directory_and_up() {
    let env = TestEnv::new();
    let t = env.mkdir("t");
    env.file("t/sub/a", 3000);
    env.file("t/sub/b", 10);
    env.file("t/top", 100);
    let sub = t.join("sub");
    let Some(pane) = start_browser("in-out", &format!("-i {}", t.display())) else {
        return;
    };
    pane.wait("the scan's end", scanned);
    let in_sub = |s: &str| s.starts_with(&format!("{} ", sub.display()));
    let at_root = |s: &str| s.starts_with(&format!("{}  ", t.display()));
    for (into, up) in [
        ("Enter", "BSpace"),
        ("Right", "Left"),
        ("l", "h"),
        ("l", "<"),
    ] {
        select(&pane, &t, "sub");
        pane.keys(&[into]);
        let screen = pane.wait(&format!("sub after {into}"), in_sub);
        assert_title(&screen, &sub);
        assert_eq!(rows(&screen), reference_rows(&sub), "{into}: {screen}");
        pane.keys(&[up]);
        let screen = pane.wait(&format!("the root after {up}"), at_root);
        assert_title(&screen, &t);
    }
    pane.keys(&["q"]);
    pane.wait("exit status 0", |s| s.contains("EXIT=0"));
}

/// The names of a screen's rows, whichever columns are shown.
fn names(screen: &str) -> Vec<String> {
    screen
        .lines()
        .skip(1)
        .take_while(|l| l.contains('[') && l.contains('%'))
        .map(|l| l.split_whitespace().last().unwrap().to_owned())
        .collect()
}

/// The names in `dir` ordered by `key` (largest, most, newest first),
/// ties by name.
fn ordered(dir: &Path, key: impl Fn(&Path) -> u64) -> Vec<String> {
    let mut rows: Vec<(u64, String)> = reference_rows(dir)
        .into_iter()
        .map(|r| (key(&dir.join(r.name.trim_end_matches('/'))), r.name))
        .collect();
    rows.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    rows.into_iter().map(|r| r.1).collect()
}

/// `s`, `n`, `C`, `M`: rows by disk usage (du), name, entries (find),
/// modification time (stat), each checked against those; the same key
/// again gives the reverse order, and again the order itself. Size is the
/// first order, so the first `s` reverses it.
#[test]
fn each_sort_key_and_the_same_key_again_reversing() {
    let env = TestEnv::new();
    let t = env.mkdir("t");
    // Sizes, counts, times and names each in a different order.
    env.file("t/b-big", 200_000);
    for i in 0..6 {
        env.file(&format!("t/a-many/f{i}"), 10);
    }
    env.file("t/d-mid/f", 40_000);
    env.file("t/d-mid/g", 10);
    env.file("t/c-small", 10);
    env.file("t/e-tie", 10);
    for (name, secs) in [
        ("b-big", 1_500_000_000),
        ("a-many", 1_400_000_000),
        ("d-mid", 1_600_000_000),
        ("c-small", 1_700_000_000),
        ("e-tie", 1_700_000_000),
    ] {
        fs::File::open(t.join(name))
            .and_then(|f| f.set_modified(UNIX_EPOCH + Duration::from_secs(secs)))
            .unwrap();
    }
    let Some(pane) = start_browser("sorts", &format!("-i {}", t.display())) else {
        return;
    };
    let screen = pane.wait("the scan's end", scanned);
    let by_size = ordered(&t, |p| du(p, &["-sB1"]));
    let by_name: Vec<String> = reference_rows(&t).into_iter().map(|r| r.name).collect();
    let by_count = ordered(&t, |p| find_count(p, &[]));
    let by_mtime = ordered(&t, |p| fs::symlink_metadata(p).unwrap().mtime() as u64);
    assert!(screen.contains("(sort: size)"), "{screen}");
    assert_eq!(names(&screen), by_size, "{screen}");
    for (key, order, want) in [
        ("s", "size", by_size),
        ("n", "name", by_name),
        ("C", "count", by_count),
        ("M", "mtime", by_mtime),
    ] {
        let reversed: Vec<String> = want.iter().rev().cloned().collect();
        let presses = if key == "s" {
            [(&reversed, true), (&want, false)]
        } else {
            [(&want, false), (&reversed, true)]
        };
        for (want, reverse) in presses {
            pane.keys(&[key]);
            let title = format!("(sort: {order}{})", if reverse { ", reversed" } else { "" });
            let screen = pane.wait(&title, |s| s.contains(&title));
            assert_eq!(&names(&screen), want, "{key}: {screen}");
        }
    }
    pane.keys(&["q"]);
    pane.wait("exit status 0", |s| s.contains("EXIT=0"));
}
