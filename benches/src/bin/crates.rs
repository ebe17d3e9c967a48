//! One walk of a tree by one Rust crate, the way a user of it would write
//! a size total, for hyperfine (docs/benchmarks.md, "tokio-uring-getdents
//! against `std::fs`").
//!
//! ```text
//! crates traverse|std|walkdir|jwalk|ignore|tokio-uring TREE
//! crates tokio-uring-sorted|ignore-rules|tokio-uring-ignore TREE
//! crates traverse-list|traverse-sorted|traverse-ignore TREE
//! ```
//!
//! `traverse-list` is traverse-du's listing with each entry's metadata;
//! `traverse-sorted` the same with each directory sorted by name.
//!
//! `tokio-uring-sorted` is `tokio-uring` with each directory sorted by
//! name; `ignore-rules` and `tokio-uring-ignore` count the entries that
//! `.gitignore`, `.ignore` and hidden names leave (no sizes: bytes 0), with
//! the `ignore` crate's parallel walker, with tokio-uring-getdents' ignore
//! rules and with traverse-du's listing's (`traverse-ignore`), all applying `.gitignore` outside a git repository too (the
//! Linux tarball has none) and no global excludes file.
//!
//! Prints the entries (the root included) and the sum of their apparent
//! sizes, links never followed, so that the ways can be checked against
//! each other before their times are compared. `traverse` counts a file
//! with several names once, as du does: equal on a tree without hard links.

use std::io;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [way, tree] = args.as_slice() else {
        eprintln!(
            "usage: crates traverse|std|walkdir|jwalk|ignore|tokio-uring\
             |tokio-uring-sorted|ignore-rules|tokio-uring-ignore\
             |traverse-list|traverse-sorted|traverse-ignore TREE"
        );
        return ExitCode::from(2);
    };
    let root = Path::new(tree);
    let total = match way.as_str() {
        "traverse" => traverse_walk(root),
        "traverse-list" => traverse_list(root, false),
        "traverse-sorted" => traverse_list(root, true),
        "traverse-ignore" => traverse_ignore_walk(root),
        "std" => std_walk(root),
        "walkdir" => walkdir_walk(root),
        "jwalk" => jwalk_walk(root),
        "ignore" => ignore_walk(root),
        "tokio-uring" => tokio_uring_walk(root, false),
        "tokio-uring-sorted" => tokio_uring_walk(root, true),
        "ignore-rules" => ignore_rules_walk(root),
        "tokio-uring-ignore" => tokio_uring_ignore_walk(root),
        other => {
            eprintln!("crates: unknown way {other:?}");
            return ExitCode::from(2);
        }
    };
    match total {
        Ok((entries, bytes)) => {
            println!("{entries} entries, {bytes} bytes");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("crates: {way} {}: {e}", root.display());
            ExitCode::FAILURE
        }
    }
}

/// traverse-du's library with its defaults (the `auto` engine).
fn traverse_walk(root: &Path) -> io::Result<(u64, u64)> {
    let mut failed = None;
    let summary = traverse::WalkBuilder::new()
        .build()
        .run_with(root, |event| {
            if let traverse::Event::Error(e) = event {
                failed.get_or_insert_with(|| io::Error::other(e.to_string()));
            }
        });
    if let Some(e) = failed {
        return Err(e);
    }
    let t = summary.totals;
    let bytes = u64::try_from(t.bytes).map_err(io::Error::other)?;
    Ok((t.files + t.dirs + t.symlinks + t.other, bytes))
}

/// traverse-du's listing with metadata, as a walkdir user's loop over
/// entries would be; `sorted`: each directory sorted by name.
fn traverse_list(root: &Path, sorted: bool) -> io::Result<(u64, u64)> {
    let builder = traverse::WalkBuilder::new().list(true).list_metadata(true);
    let builder = if sorted {
        builder.sort_by_file_name()
    } else {
        builder
    };
    let (mut total, mut failed) = ((0, 0), None);
    builder.build().run_with(root, |event| match event {
        traverse::Event::Entry(e) => {
            total.0 += 1;
            total.1 += e.metadata().map_or(0, traverse::Metadata::len);
        }
        traverse::Event::Error(e) => {
            failed.get_or_insert_with(|| io::Error::other(e.to_string()));
        }
    });
    failed.map_or(Ok(total), Err)
}

/// A `std::fs::read_dir` recursion on one thread.
fn std_walk(root: &Path) -> io::Result<(u64, u64)> {
    fn go(dir: &Path, total: &mut (u64, u64)) -> io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            *total = (total.0 + 1, total.1 + meta.len());
            if meta.is_dir() {
                go(&entry.path(), total)?;
            }
        }
        Ok(())
    }
    let mut total = (1, std::fs::symlink_metadata(root)?.len());
    go(root, &mut total)?;
    Ok(total)
}

fn walkdir_walk(root: &Path) -> io::Result<(u64, u64)> {
    let mut total = (0, 0);
    for entry in walkdir::WalkDir::new(root) {
        let meta = entry?.metadata()?;
        total = (total.0 + 1, total.1 + meta.len());
    }
    Ok(total)
}

/// jwalk on its rayon pool; hidden entries too (it skips them by default).
fn jwalk_walk(root: &Path) -> io::Result<(u64, u64)> {
    let mut total = (0, 0);
    for entry in jwalk::WalkDir::new(root).skip_hidden(false) {
        let meta = entry
            .map_err(io::Error::other)?
            .metadata()
            .map_err(io::Error::other)?;
        total = (total.0 + 1, total.1 + meta.len());
    }
    Ok(total)
}

/// ignore's parallel walker with every filter off (no .gitignore, hidden
/// entries included).
fn ignore_walk(root: &Path) -> io::Result<(u64, u64)> {
    let (entries, bytes) = (AtomicU64::new(0), AtomicU64::new(0));
    let failed = std::sync::Mutex::new(None);
    ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .build_parallel()
        .run(|| {
            Box::new(|entry| {
                match entry.and_then(|e| e.metadata()) {
                    Ok(meta) => {
                        entries.fetch_add(1, Ordering::Relaxed);
                        bytes.fetch_add(meta.len(), Ordering::Relaxed);
                    }
                    Err(e) => {
                        let mut failed = failed.lock().unwrap_or_else(|p| p.into_inner());
                        failed.get_or_insert(e.to_string());
                    }
                }
                ignore::WalkState::Continue
            })
        });
    match failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(io::Error::other(e)),
        None => Ok((entries.into_inner(), bytes.into_inner())),
    }
}

/// tokio-uring-getdents' walk with `statx(STATX_SIZE)`, its defaults;
/// `sorted`: each directory sorted by name.
fn tokio_uring_walk(root: &Path, sorted: bool) -> io::Result<(u64, u64)> {
    use tokio_uring_getdents::fs::{Metadata, STATX_SIZE};
    tokio_uring_getdents::start(async {
        let builder = tokio_uring_getdents::walk::WalkBuilder::new(root).statx(STATX_SIZE);
        let builder = if sorted {
            builder.sort_by_file_name()
        } else {
            builder
        };
        let mut walk = builder.build();
        let mut total = (0, 0);
        while let Some(entry) = walk.next().await {
            let size = entry?.metadata().map_or(0, Metadata::size);
            total = (total.0 + 1, total.1 + size);
        }
        Ok(total)
    })
}

/// ignore's parallel walker with its standard filters, `.gitignore`
/// applied outside a repository, no global file: entries counted.
fn ignore_rules_walk(root: &Path) -> io::Result<(u64, u64)> {
    let entries = AtomicU64::new(0);
    let failed = std::sync::Mutex::new(None);
    ignore::WalkBuilder::new(root)
        .require_git(false)
        .git_global(false)
        .build_parallel()
        .run(|| {
            Box::new(|entry| {
                match entry {
                    Ok(_) => {
                        entries.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        let mut failed = failed.lock().unwrap_or_else(|p| p.into_inner());
                        failed.get_or_insert(e.to_string());
                    }
                }
                ignore::WalkState::Continue
            })
        });
    match failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(io::Error::other(e)),
        None => Ok((entries.into_inner(), 0)),
    }
}

/// tokio-uring-getdents' walk with the same rules: entries counted.
fn tokio_uring_ignore_walk(root: &Path) -> io::Result<(u64, u64)> {
    use tokio_uring_getdents::walk::{IgnoreRules, WalkBuilder};
    tokio_uring_getdents::start(async {
        let rules = IgnoreRules::new().require_git(false).git_global(false);
        let mut walk = WalkBuilder::new(root).ignore_rules(rules).build();
        let mut entries = 0;
        while let Some(entry) = walk.next().await {
            entry?;
            entries += 1;
        }
        Ok((entries, 0))
    })
}

/// traverse-du's listing (no metadata) with the same rules: entries counted.
fn traverse_ignore_walk(root: &Path) -> io::Result<(u64, u64)> {
    let rules = traverse::IgnoreRules::new()
        .require_git(false)
        .git_global(false);
    let walk = traverse::WalkBuilder::new()
        .list(true)
        .ignore_rules(rules)
        .build();
    let (mut entries, mut failed) = (0, None);
    walk.run_with(root, |event| match event {
        traverse::Event::Entry(_) => entries += 1,
        traverse::Event::Error(e) => {
            failed.get_or_insert_with(|| io::Error::other(e.to_string()));
        }
    });
    failed.map_or(Ok((entries, 0)), Err)
}
