//! Directories that vanish or fail while the ranks walk them (testfs, a
//! FUSE passthrough that makes chosen paths fail), against traverse.

mod common;

use common::*;

#[test]
fn vanishing_and_failing_directories_are_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    tree(&src.join("x"), 80, 400);
    for d in ["gone", "bad", "unreadable", "x/gone", "y/z/bad"] {
        file(&src.join(d).join("f"), 100);
        file(&src.join(d).join("sub/g"), 200);
    }
    // Listed by their parents, then gone (ENOENT) or failing (EIO).
    let args = [
        "--vanish",
        "gone",
        "--vanish",
        "x/gone",
        "--eio",
        "bad",
        "--eio",
        "y/z/bad",
        "--eio-readdir",
        "unreadable",
    ];
    let mnt = dir.path().join("mnt");
    let Some(_fs) = TestFs::mount(&src, &mnt, &args) else {
        return;
    };
    let m = mnt.to_str().unwrap();
    same_as_traverse(&[m], false);
    same_as_traverse(&["-d", "1", "--json", m], false);
    same_as_traverse(&["--top", "4", m], false);
}
