//! `--completions SHELL` and `--man`: generated from the options, printed
//! on stdout.

mod testenv;

use testenv::*;

#[test]
fn completions_name_the_options_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef traverse"),
        ("fish", "complete -c traverse"),
    ] {
        let out = traverse(["--completions", shell]);
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(marker), "{shell}: {text}");
        for option in ["tree", "threshold", "inodes", "disk-usage", "completions"] {
            assert!(text.contains(option), "{shell}: no {option}");
        }
        // Options for measurements are hidden, from completions too.
        for hidden in ["exit-when-scanned", "no-inode-order"] {
            assert!(!text.contains(hidden), "{shell}: {hidden}");
        }
    }
}

#[test]
fn the_man_page_documents_the_options() {
    let out = traverse(["--man"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(".ie") || text.contains(".TH traverse"),
        "{text}"
    );
    for option in [
        "\\-\\-tree",
        "\\-\\-threshold",
        "\\-\\-inodes",
        "\\-\\-total",
    ] {
        assert!(text.contains(option), "no {option}");
    }
    // The browser's keys and the exit statuses, with the help's keys.
    let keys = text.find(".SH KEYS").expect("a KEYS section");
    let status = text
        .find(".SH \"EXIT STATUS\"")
        .expect("an EXIT STATUS section");
    assert!(keys < status, "{text}");
    for key in ["\\fBQ\\fR", "\\fBspace\\fR", "\\fBq, Ctrl\\-C\\fR"] {
        assert!(text[keys..status].contains(key), "no {key}");
    }
    for code in ["0", "1", "2", "130"] {
        assert!(
            text[status..].contains(&format!(".TP\n{code}\n")),
            "no {code}"
        );
    }
}

#[test]
fn generating_takes_no_path_and_no_other_option() {
    let out = traverse(["--man", "--tree"]);
    assert_eq!(out.status.code(), Some(2));
    let out = traverse(["--completions", "nushell-or-so"]);
    assert_eq!(out.status.code(), Some(2));
}
