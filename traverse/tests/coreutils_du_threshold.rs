//! GNU coreutils' tests/du/threshold.sh as a Rust test of `traverse du`:
//! `-t SIZE` at every edge of a small tree's sizes, with and without -a
//! and -S, and its refusals in du's words (see `coreutils_du.rs`).

mod testenv;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use testenv::*;

fn tdu(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin())
        .arg("du")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Disk usage of `path` in bytes.
fn disk(path: &Path) -> u64 {
    fs::symlink_metadata(path).unwrap().blocks() * 512
}

#[test]
fn threshold() {
    let env = TestEnv::new();
    let t = env.root();
    env.mkdir("a/b");
    env.mkdir("a/c");
    for n in 0..4 {
        fs::write(t.join(format!("a/b/{n}")), " ".repeat(n)).unwrap();
    }
    let [ba, bb, bc, b0, b1, b2, b3] =
        ["a", "a/b", "a/c", "a/b/0", "a/b/1", "a/b/2", "a/b/3"].map(|p| disk(&t.join(p)));
    if b0 != 0 || b1 <= 4 || ba <= 4 || bc <= 4 {
        println!("skipped: this filesystem's block sizes are not what the script needs");
        return;
    }
    assert_eq!((b1, b2), (b2, b3));
    let bb0123 = bb + b0 + b1 + b2 + b3;
    let bab0123 = ba + bc + bb0123;

    for (args, option, value) in [
        (&["--threshold=SIZE", "a"][..], "--threshold", "SIZE"),
        (&["-t", "SIZE", "a"], "-t", "SIZE"),
        (&["--threshold=-0", "a"], "--threshold", "-0"),
        (&["-t", "-0", "a"], "--threshold", "-0"),
        (&["-t-0", "a"], "--threshold", "-0"),
        (&["--threshold=", "a"], "--threshold", ""),
    ] {
        let (code, out, err) = tdu(t, args);
        assert_eq!((code, out.as_str()), (1, ""), "{args:?}");
        assert_eq!(
            err,
            format!("du: invalid {option} argument '{value}'\n"),
            "{args:?}"
        );
    }
    let (code, _, err) = tdu(t, &["--threshold"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("du: option") && err.contains("requires an argument"),
        "{err}"
    );
    assert!(
        err.ends_with("Try 'du --help' for more information.\n"),
        "{err}"
    );

    // The names printed with -t s and -t -s, for "", -a, -S, -a -S.
    let all = "a a/b a/b/0 a/b/1 a/b/2 a/b/3 a/c";
    let cases: [(u64, [&str; 4], [&str; 4]); 9] = [
        (
            bab0123 + 1,
            ["", "", "", ""],
            ["a a/b a/c", all, "a a/b a/c", all],
        ),
        (
            bab0123,
            ["a", "a", "", ""],
            ["a a/b a/c", all, "a a/b a/c", all],
        ),
        (
            bab0123 - 1,
            ["a", "a", "", ""],
            [
                "a/b a/c",
                "a/b a/b/0 a/b/1 a/b/2 a/b/3 a/c",
                "a a/b a/c",
                all,
            ],
        ),
        (
            bb0123 + 1,
            ["a", "a", "", ""],
            [
                "a/b a/c",
                "a/b a/b/0 a/b/1 a/b/2 a/b/3 a/c",
                "a a/b a/c",
                all,
            ],
        ),
        (
            bb0123,
            ["a a/b", "a a/b", "a/b", "a/b"],
            [
                "a/b a/c",
                "a/b a/b/0 a/b/1 a/b/2 a/b/3 a/c",
                "a a/b a/c",
                all,
            ],
        ),
        (
            bb0123 - 1,
            ["a a/b", "a a/b", "a/b", "a/b"],
            [
                "a/c",
                "a/b/0 a/b/1 a/b/2 a/b/3 a/c",
                "a a/c",
                "a a/b/0 a/b/1 a/b/2 a/b/3 a/c",
            ],
        ),
        (
            b3 + 1,
            ["a a/b", "a a/b", "a/b", "a/b"],
            [
                "a/c",
                "a/b/0 a/b/1 a/b/2 a/b/3 a/c",
                "a a/c",
                "a a/b/0 a/b/1 a/b/2 a/b/3 a/c",
            ],
        ),
        (
            b3,
            [
                "a a/b a/c",
                "a a/b a/b/1 a/b/2 a/b/3 a/c",
                "a a/b a/c",
                "a a/b a/b/1 a/b/2 a/b/3 a/c",
            ],
            [
                "a/c",
                "a/b/0 a/b/1 a/b/2 a/b/3 a/c",
                "a a/c",
                "a a/b/0 a/b/1 a/b/2 a/b/3 a/c",
            ],
        ),
        (b0, ["a a/b a/c", all, "a a/b a/c", all], ["", "", "", ""]),
    ];
    let flags: [&[&str]; 4] = [&[], &["-a"], &["-S"], &["-a", "-S"]];
    for (s, above, below) in cases {
        for (sign, wants) in [("", above), ("-", below)] {
            if s == 0 && sign == "-" {
                continue;
            }
            for (flags, want) in flags.iter().zip(wants) {
                let th = format!("--th={sign}{s}");
                let args = [&["-B1"][..], flags, &[&th, "a"]].concat();
                let (code, out, err) = tdu(t, &args);
                assert_eq!((code, err.as_str()), (0, ""), "{args:?}");
                let mut names: Vec<&str> =
                    out.lines().map(|l| l.split_once('\t').unwrap().1).collect();
                names.sort();
                assert_eq!(names.join(" "), want, "{args:?}");
            }
        }
    }
}
