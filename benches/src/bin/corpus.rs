//! Builds the benchmark trees, the same bytes on every run.
//!
//! ```text
//! corpus <linux|wide|deep|hardlinks|all> [DIR]      (DIR: /var/tmp/traverse-corpus)
//! ```
//!
//! Each tree `DIR/<name>` gets a marker `DIR/<name>.done` (outside the tree,
//! so it never shows up in a total) holding the hash of the recipe and a
//! content hash of what was written. A tree whose marker matches the recipe
//! is reused; otherwise it is deleted and made again.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use traverse_benches::{Fnv64, SplitMix64};

/// Bumped when a recipe changes in a way the parameters below do not show.
const GENERATOR_VERSION: u64 = 1;
const SEED: u64 = 0x7261_7665_7273_6531;
const DEFAULT_DIR: &str = "/var/tmp/traverse-corpus";
const LINUX_TARBALL: &str = "/usr/src/linux-source-6.12.tar.xz";
const TREES: [&str; 4] = ["linux", "wide", "deep", "hardlinks"];

/// What a generated tree contains; the marker stores these next to the hash.
#[derive(Default)]
struct Summary {
    files: u64,
    dirs: u64,
    links: u64,
    bytes: u64,
    content: Fnv64,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (which, dir) = match args.as_slice() {
        [w] => (w.as_str(), PathBuf::from(DEFAULT_DIR)),
        [w, d] => (w.as_str(), PathBuf::from(d)),
        _ => {
            eprintln!(
                "usage: corpus <linux|wide|deep|hardlinks|all> [DIR]  (default DIR {DEFAULT_DIR})"
            );
            return ExitCode::from(2);
        }
    };
    let names: Vec<&str> = match which {
        "all" => TREES.to_vec(),
        t if TREES.contains(&t) => vec![t],
        other => {
            eprintln!("corpus: unknown tree '{other}'; expected one of {TREES:?} or all");
            return ExitCode::from(2);
        }
    };
    for name in names {
        if let Err(e) = ensure(&dir, name) {
            eprintln!("corpus: {name} in {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// The recipe's identity: everything that decides the tree's content.
fn recipe_hash(name: &str) -> io::Result<u64> {
    let mut h = Fnv64::new();
    h.write(name.as_bytes());
    h.write_u64(GENERATOR_VERSION);
    h.write_u64(SEED);
    if name == "linux" {
        // The tarball is the recipe; its size and mtime identify the package
        // version without reading 150 MB on every call.
        let meta = fs::metadata(LINUX_TARBALL).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("{LINUX_TARBALL}: {e} (apt-get install linux-source-6.12)"),
            )
        })?;
        h.write_u64(meta.len());
        h.write_u64(std::os::unix::fs::MetadataExt::mtime(&meta) as u64);
    }
    Ok(h.finish())
}

fn ensure(dir: &Path, name: &str) -> io::Result<()> {
    fs::create_dir_all(dir).map_err(|e| with_path(e, dir))?;
    let tree = dir.join(name);
    let marker = dir.join(format!("{name}.done"));
    let recipe = format!("recipe {:016x}", recipe_hash(name)?);
    if let Ok(text) = fs::read_to_string(&marker) {
        if text.lines().next() == Some(recipe.as_str()) && tree.is_dir() {
            println!(
                "{name}: reusing {} ({})",
                tree.display(),
                text.lines().nth(1).unwrap_or("")
            );
            return Ok(());
        }
    }
    // A stale or half-made tree: the marker goes first so a crash below can
    // never leave a marker that vouches for a partial tree.
    let _ = fs::remove_file(&marker);
    if tree.exists() {
        println!("{name}: removing stale {}", tree.display());
        fs::remove_dir_all(&tree).map_err(|e| with_path(e, &tree))?;
    }
    println!("{name}: generating {}", tree.display());
    let started = std::time::Instant::now();
    let s = match name {
        "linux" => linux(dir, &tree)?,
        "wide" => wide(&tree)?,
        "deep" => deep(&tree)?,
        "hardlinks" => hardlinks(&tree)?,
        _ => unreachable!("names are checked in main"),
    };
    let line = format!(
        "files={} dirs={} symlinks={} bytes={} content={:016x}",
        s.files,
        s.dirs,
        s.links,
        s.bytes,
        s.content.finish()
    );
    // Data reaches the disk before the marker claims the tree is complete.
    sync_all();
    fs::write(&marker, format!("{recipe}\n{line}\n")).map_err(|e| with_path(e, &marker))?;
    println!("{name}: {line} in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

fn with_path(e: io::Error, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn sync_all() {
    // SAFETY: sync(2) takes no arguments and touches no memory of ours.
    unsafe { libc::sync() };
}

/// Writes one file of `len` random bytes and folds it into the summary.
fn random_file(
    path: &Path,
    len: usize,
    rng: &mut SplitMix64,
    buf: &mut Vec<u8>,
    s: &mut Summary,
) -> io::Result<()> {
    buf.resize(len, 0);
    rng.fill(buf);
    fs::write(path, &buf[..]).map_err(|e| with_path(e, path))?;
    s.content
        .write(path.file_name().map_or(&[][..], |n| n.as_encoded_bytes()));
    s.content.write_u64(len as u64);
    // Hashing every byte would double the generation time; the generator is
    // deterministic, so the first 64 bytes pin the random stream's position.
    s.content.write(&buf[..len.min(64)]);
    s.files += 1;
    s.bytes += len as u64;
    Ok(())
}

/// Debian's linux-source-6.12, extracted as is.
fn linux(dir: &Path, tree: &Path) -> io::Result<Summary> {
    let tmp = dir.join("linux.extracting");
    if tmp.exists() {
        fs::remove_dir_all(&tmp).map_err(|e| with_path(e, &tmp))?;
    }
    fs::create_dir_all(&tmp).map_err(|e| with_path(e, &tmp))?;
    let status = Command::new("tar")
        .args(["-xJf", LINUX_TARBALL, "-C"])
        .arg(&tmp)
        .status()
        .map_err(|e| io::Error::new(e.kind(), format!("running tar: {e}")))?;
    if !status.success() {
        return Err(io::Error::other(format!(
            "tar -xJf {LINUX_TARBALL} failed: {status}"
        )));
    }
    let top = fs::read_dir(&tmp)
        .map_err(|e| with_path(e, &tmp))?
        .next()
        .ok_or_else(|| io::Error::other(format!("{LINUX_TARBALL} is empty")))??
        .path();
    fs::rename(&top, tree).map_err(|e| with_path(e, &top))?;
    fs::remove_dir(&tmp).map_err(|e| with_path(e, &tmp))?;
    let mut s = Summary::default();
    count(tree, &mut s)?;
    Ok(s)
}

/// Counts what an extracted tree holds (names and sizes go into the hash,
/// in sorted order so the hash does not depend on directory order).
fn count(path: &Path, s: &mut Summary) -> io::Result<()> {
    let mut entries: Vec<_> = fs::read_dir(path)
        .map_err(|e| with_path(e, path))?
        .collect::<io::Result<_>>()
        .map_err(|e| with_path(e, path))?;
    entries.sort_by_key(|e| e.file_name());
    s.dirs += 1;
    for e in entries {
        let meta = e.metadata().map_err(|err| with_path(err, &e.path()))?;
        s.content.write(e.file_name().as_encoded_bytes());
        s.content.write_u64(meta.len());
        if meta.is_dir() {
            count(&e.path(), s)?;
        } else if meta.is_symlink() {
            s.links += 1;
        } else {
            s.files += 1;
            s.bytes += meta.len();
        }
    }
    Ok(())
}

/// One directory, 200 000 files of 1 024..=4 096 random bytes.
fn wide(tree: &Path) -> io::Result<Summary> {
    let mut rng = SplitMix64::new(SEED ^ 1);
    let mut s = Summary::default();
    fs::create_dir(tree).map_err(|e| with_path(e, tree))?;
    s.dirs = 1;
    let mut buf = Vec::new();
    for i in 0..200_000u64 {
        let len = rng.range(1024, 4096) as usize;
        let name = format!("f{i:06}-{:08x}", rng.next_u64() as u32);
        random_file(&tree.join(name), len, &mut rng, &mut buf, &mut s)?;
        progress("wide", i + 1, 200_000);
    }
    Ok(s)
}

/// 50 000 directories in a random recursive tree (each new directory picks
/// its parent uniformly among those made before it: mean depth about
/// ln 50 000), 500 000 files of 2 048..=4 096 bytes spread uniformly.
fn deep(tree: &Path) -> io::Result<Summary> {
    const DIRS: usize = 50_000;
    const FILES: u64 = 500_000;
    let mut rng = SplitMix64::new(SEED ^ 2);
    let mut s = Summary::default();
    let mut paths: Vec<PathBuf> = Vec::with_capacity(DIRS);
    fs::create_dir(tree).map_err(|e| with_path(e, tree))?;
    paths.push(tree.to_path_buf());
    for i in 1..DIRS {
        let parent = rng.below(i as u64) as usize;
        let path = paths[parent].join(format!("d{i}"));
        fs::create_dir(&path).map_err(|e| with_path(e, &path))?;
        s.content.write(path.as_os_str().as_encoded_bytes());
        paths.push(path);
    }
    s.dirs = DIRS as u64;
    let mut buf = Vec::new();
    for i in 0..FILES {
        let d = rng.below(DIRS as u64) as usize;
        let len = rng.range(2048, 4096) as usize;
        random_file(
            &paths[d].join(format!("f{i}.dat")),
            len,
            &mut rng,
            &mut buf,
            &mut s,
        )?;
        progress("deep", i + 1, FILES);
    }
    Ok(s)
}

/// 200 directories, 20 000 files, each linked four more times into random
/// directories (100 000 names, 20 000 inodes), plus 1 000 symlinks: a tool
/// that counts a hard-linked file more than once reports a total about five
/// times too high.
fn hardlinks(tree: &Path) -> io::Result<Summary> {
    const DIRS: u64 = 200;
    const FILES: u64 = 20_000;
    let mut rng = SplitMix64::new(SEED ^ 3);
    let mut s = Summary::default();
    fs::create_dir(tree).map_err(|e| with_path(e, tree))?;
    let dirs: Vec<PathBuf> = (0..DIRS)
        .map(|i| tree.join(format!("g{}/d{i}", i % 10)))
        .collect();
    for d in &dirs {
        fs::create_dir_all(d).map_err(|e| with_path(e, d))?;
    }
    s.dirs = 1 + 10 + DIRS;
    let mut buf = Vec::new();
    for i in 0..FILES {
        let home = &dirs[rng.below(DIRS) as usize];
        let original = home.join(format!("f{i}"));
        random_file(
            &original,
            rng.range(1024, 8192) as usize,
            &mut rng,
            &mut buf,
            &mut s,
        )?;
        for k in 0..4 {
            let link = dirs[rng.below(DIRS) as usize].join(format!("f{i}.l{k}"));
            fs::hard_link(&original, &link).map_err(|e| with_path(e, &link))?;
            s.content.write(link.as_os_str().as_encoded_bytes());
        }
        progress("hardlinks", i + 1, FILES);
    }
    for i in 0..1000u64 {
        let from = &dirs[rng.below(DIRS) as usize];
        let target = format!(
            "../../g{}/d{}/f{}",
            rng.below(10),
            rng.below(DIRS),
            rng.below(FILES)
        );
        let link = from.join(format!("s{i}"));
        symlink(&target, &link).map_err(|e| with_path(e, &link))?;
        s.content.write(target.as_bytes());
        s.links += 1;
    }
    Ok(s)
}

fn progress(name: &str, done: u64, total: u64) {
    if done.is_multiple_of(total / 10) {
        print!("{name}: {}%\r", done * 100 / total);
        let _ = io::stdout().flush();
    }
}
