//! `--tree` on a fixed tree against the pictures a person should see
//! (colours off: stdout is a pipe).

mod testenv;

use std::fs;
use std::process::Command;

use testenv::*;

/// Ten sparse files of S bytes, S = 10 MiB - 64 KiB (so that `-h` shows
/// each as "10M" whatever the directories' own sizes add):
/// src/core 3 S, src/util S, src/main S, data 3 S, docs S. (No share
/// falls near a half cell or a half percent, where the directories' own
/// sizes could tip the rounding.)
fn tree(env: &TestEnv) {
    const S: u64 = (10 << 20) - (64 << 10);
    let files = [
        "t/src/core/a",
        "t/src/core/b",
        "t/src/core/c",
        "t/src/util/a",
        "t/src/main",
        "t/data/a",
        "t/data/b",
        "t/data/c",
        "t/docs/guide",
    ];
    for rel in files {
        let path = env.root().join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::File::create(&path).unwrap().set_len(S).unwrap();
    }
}

/// `traverse --tree ARGS t` from the tree's parent, with every engine
/// giving the same picture, which it returns.
fn picture(env: &TestEnv, args: &[&str]) -> String {
    let mut first: Option<String> = None;
    for engine in ENGINES {
        let out = Command::new(bin())
            .current_dir(env.root())
            .args(["--engine", engine, "--tree"])
            // The pictures below are drawn with apparent sizes; disk
            // usage, the default, when asked.
            .args(if args.contains(&"--disk-usage") {
                &[][..]
            } else {
                &["--apparent-size"][..]
            })
            .args(args)
            .arg("t")
            .env_remove("COLUMNS")
            .output()
            .expect("run traverse");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        match &first {
            Some(first) => assert_eq!(&text, first, "{engine}"),
            None => first = Some(text),
        }
    }
    first.unwrap()
}

#[test]
fn the_tree_at_width_40() {
    let env = TestEnv::in_memory();
    tree(&env);
    let want = "\
90M ██████████ 100% t
50M ██████░░░░  56% ├─ src
30M ██████░░░░  60% │  ├─ core
10M ██░░░░░░░░  20% │  └─ util
30M ███░░░░░░░  33% ├─ data
10M █░░░░░░░░░  11% └─ docs
";
    assert_eq!(picture(&env, &["--width", "40"]), want);
    // COLUMNS when there is no --width.
    let out = Command::new(bin())
        .current_dir(env.root())
        .args(["--tree", "--apparent-size", "t"])
        .env("COLUMNS", "40")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), want);
}

#[test]
fn the_tree_at_width_120_with_files() {
    let env = TestEnv::in_memory();
    tree(&env);
    let want = "\
90M ██████████████████████████████ 100% t
50M █████████████████░░░░░░░░░░░░░  56% ├─ src
30M ██████████████████░░░░░░░░░░░░  60% │  ├─ core
10M ██████████░░░░░░░░░░░░░░░░░░░░  33% │  │  ├─ a
10M ██████████░░░░░░░░░░░░░░░░░░░░  33% │  │  ├─ b
10M ██████████░░░░░░░░░░░░░░░░░░░░  33% │  │  └─ c
10M ██████░░░░░░░░░░░░░░░░░░░░░░░░  20% │  ├─ util
10M ██████████████████████████████ 100% │  │  └─ a
10M ██████░░░░░░░░░░░░░░░░░░░░░░░░  20% │  └─ main
30M ██████████░░░░░░░░░░░░░░░░░░░░  33% ├─ data
10M ██████████░░░░░░░░░░░░░░░░░░░░  33% │  ├─ a
10M ██████████░░░░░░░░░░░░░░░░░░░░  33% │  ├─ b
10M ██████████░░░░░░░░░░░░░░░░░░░░  33% │  └─ c
10M ███░░░░░░░░░░░░░░░░░░░░░░░░░░░  11% └─ docs
10M ██████████████████████████████ 100%    └─ guide
";
    assert_eq!(picture(&env, &["--width", "120", "-a"]), want);
}

/// `--top N` keeps the N largest, each with its parent; `-d 1` one level.
#[test]
fn top_and_depth_cut_the_tree() {
    let env = TestEnv::in_memory();
    tree(&env);
    let want = "\
90M ██████████ 100% t
50M ██████░░░░  56% ├─ src
30M ██████░░░░  60% │  └─ core
30M ███░░░░░░░  33% └─ data
";
    assert_eq!(picture(&env, &["--width", "40", "--top", "4"]), want);
    let want = "\
90M ██████████ 100% t
50M ██████░░░░  56% ├─ src
30M ███░░░░░░░  33% ├─ data
10M █░░░░░░░░░  11% └─ docs
";
    assert_eq!(picture(&env, &["--width", "40", "-d", "1"]), want);
    // Entry counts: t 15, src 8, core 4, data 4 (tied with core; util and
    // docs have 2).
    let want = "\
15 ██████████ 100% t
 8 █████░░░░░  53% ├─ src
 4 █████░░░░░  50% │  └─ core
 4 ███░░░░░░░  27% └─ data
";
    assert_eq!(
        picture(&env, &["--width", "40", "--top", "4", "--inodes"]),
        want
    );
}

/// A long name is cut to the width, never wrapped.
#[test]
fn names_are_cut_to_the_width() {
    let env = TestEnv::in_memory();
    let long = "a-directory-with-a-very-long-name-indeed";
    let dir = env.mkdir(&format!("t/{long}"));
    // "10M" whatever the directories' sizes: the name gets 40 - 20 columns.
    let file = fs::File::create(dir.join("f")).unwrap();
    file.set_len((10 << 20) - (64 << 10)).unwrap();
    let text = picture(&env, &["--width", "40"]);
    for line in text.lines() {
        assert!(line.chars().count() <= 40, "{line:?}");
    }
    assert!(text.contains(" 100% └─ a-directory-with…\n"), "{text}");
}

/// Colours on a terminal (a pseudo-terminal from `script`), none with
/// `NO_COLOR` set or through a pipe; the text is the same. Skipped where
/// util-linux's `script` is missing (the test VM).
#[test]
fn colours_on_a_terminal_unless_no_color() {
    // util-linux's script (busybox's, in the test VM, takes other options).
    let util_linux = Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("util-linux"));
    if !util_linux {
        println!("skipped: no util-linux script(1) for a pseudo-terminal");
        return;
    }
    let env = TestEnv::new();
    env.file("t/a/f", 5000);
    let on_terminal = |no_color: Option<&str>| {
        let mut cmd = Command::new("script");
        cmd.current_dir(env.root())
            .args(["-qec"])
            .arg(format!(
                "{} --tree --apparent-size --width 40 t",
                bin().display()
            ))
            .arg("/dev/null");
        match no_color {
            Some(v) => cmd.env("NO_COLOR", v),
            None => cmd.env_remove("NO_COLOR"),
        };
        let out = cmd.output().expect("script");
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap().replace("\r\n", "\n")
    };
    let plain = picture(&env, &["--width", "40"]);
    let colored = on_terminal(None);
    assert!(colored.contains("\x1b["), "{colored:?}");
    let mut stripped = String::new();
    let mut rest = colored.as_str();
    while let Some(start) = rest.find("\x1b[") {
        stripped.push_str(&rest[..start]);
        let end = rest[start..].find('m').unwrap();
        rest = &rest[start + end + 1..];
    }
    stripped.push_str(rest);
    assert_eq!(stripped, plain);
    assert_eq!(on_terminal(Some("1")), plain);
}

/// `-d` and `--top` together cut the picture; without `--tree` they are
/// refused, as before.
#[test]
fn depth_and_top_together_only_with_the_tree() {
    let env = TestEnv::in_memory();
    tree(&env);
    let want = "\
90M ██████████ 100% t
50M ██████░░░░  56% ├─ src
30M ███░░░░░░░  33% └─ data
";
    assert_eq!(
        picture(&env, &["--width", "40", "-d", "1", "--top", "3"]),
        want
    );
    let out = traverse(["-d", "1", "--top", "3", env.root().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
}

/// The root's size in the picture is du's: `du -sh --apparent-size` by
/// default, `du -sh` (disk usage) with `--disk-usage`.
#[test]
fn sizes_are_du_s_with_either_measure() {
    let env = TestEnv::new();
    env.file("t/a/f", 123_456);
    env.file("t/b/g", 7_000);
    env.file("t/h", 1);
    for (flag, du_flags) in [
        ("--apparent-size", &["-sh", "--apparent-size"][..]),
        ("--disk-usage", &["-sh"][..]),
    ] {
        let out = Command::new("du")
            .args(du_flags)
            .arg(env.root().join("t"))
            .output()
            .unwrap();
        let du = String::from_utf8(out.stdout).unwrap();
        let want = du.split('\t').next().unwrap().to_owned();
        let text = picture(&env, &["--width", "60", "--top", "1", flag]);
        let root = text.lines().next().unwrap();
        assert_eq!(
            root.split(' ').next(),
            Some(want.as_str()),
            "{flag}: {text}"
        );
        assert!(root.ends_with(" 100% t"), "{root}");
    }
}
