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
}

#[test]
fn generating_takes_no_path_and_no_other_option() {
    let out = traverse(["--man", "--tree"]);
    assert_eq!(out.status.code(), Some(2));
    let out = traverse(["--completions", "nushell-or-so"]);
    assert_eq!(out.status.code(), Some(2));
}
