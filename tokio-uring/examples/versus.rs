//! The walk and an `ls -l` against plain `std::fs`, as docs/benchmarks.md
//! reports them:
//!
//! - `versus walk TREE [JOBS...]`: entries and the sum of their sizes, by
//!   a `std::fs::read_dir` recursion on one thread and by `walk::Walk`
//!   with `statx(STATX_SIZE)` inside `tokio_uring::start` (with each
//!   `concurrency` given, default 8); median of 7 warm runs after one
//!   warm-up, wall-clock and CPU time (all threads);
//! - `versus one std|walk TREE`: one run of either, printing its totals
//!   (for `hyperfine` with a cache drop before each run);
//! - `versus ls DIR`: an `ls -l` of DIR (type, mode, links, owner, size,
//!   mtime, name, link target) written to memory three ways: std, a `Dir`
//!   with `statx` and `read_link` awaited entry by entry, and a `Dir` with
//!   `statx_many` and `read_links`: std and the latter once per round for
//!   41 rounds (the runtime is started in each run, as a program does),
//!   median wall time and median ratio to std in the same round; the
//!   first as the walk is measured.

use std::fmt::Write as _;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

use tokio_uring_getdents::fs::{Dir, FileType, Metadata, STATX_BASIC_STATS, STATX_SIZE};
use tokio_uring_getdents::walk::{WalkBuilder, DEFAULT_CONCURRENCY};

const RUNS: usize = 7;

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let strs: Vec<&str> = args.iter().map(String::as_str).collect();
    match strs.as_slice() {
        ["walk", tree, rest @ ..] => {
            let tree = Path::new(tree);
            report("std::fs::read_dir recursion", || std_walk(tree))?;
            let jobs: Vec<usize> = rest.iter().filter_map(|n| n.parse().ok()).collect();
            for jobs in if jobs.is_empty() {
                vec![DEFAULT_CONCURRENCY]
            } else {
                jobs
            } {
                let way = format!("walk (statx SIZE), {jobs} jobs");
                report(&way, || uring_walk(tree, jobs))?;
            }
        }
        ["one", way, tree] => {
            let (n, bytes) = match *way {
                "std" => std_walk(Path::new(tree))?,
                "walk" => uring_walk(Path::new(tree), DEFAULT_CONCURRENCY)?,
                _ => usage(),
            };
            println!("{n} entries, {bytes} bytes");
        }
        ["ls", dir] => {
            let dir = Path::new(dir);
            let ways: [(&str, LsFn); 2] = [
                ("ls -l with std::fs", std_ls),
                ("ls -l, Dir + statx_many", |d| uring_ls(d, true)),
            ];
            interleaved(dir, &ways)?;
            // Not in the rounds: its 1 500 io-wq hops would slow the next
            // run of the others.
            report("ls -l, Dir + statx per entry", || uring_ls(dir, false))?;
        }
        _ => usage(),
    }
    Ok(())
}

fn usage() -> ! {
    eprintln!("usage: versus walk TREE [JOBS...] | versus one std|walk TREE | versus ls DIR");
    std::process::exit(2)
}

fn report(way: &str, mut f: impl FnMut() -> io::Result<(u64, u64)>) -> io::Result<()> {
    let first = f()?;
    let mut wall = Vec::with_capacity(RUNS);
    let mut cpu = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let (start, cpu_start) = (Instant::now(), cpu_time());
        let got = f()?;
        wall.push(start.elapsed());
        cpu.push(cpu_time() - cpu_start);
        assert_eq!(got.0, first.0, "the tree changed during the measurement");
    }
    wall.sort();
    cpu.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{way:<32} {:>9.1} ms wall {:>9.1} ms cpu   ({} entries, {} bytes)",
        ms(wall[RUNS / 2]),
        ms(cpu[RUNS / 2]),
        first.0,
        first.1
    );
    Ok(())
}

type LsFn = fn(&Path) -> io::Result<(u64, u64)>;

/// Rounds of [`interleaved`]: each runs every way once, so that a burst of
/// load elsewhere falls on all of them.
const LS_ROUNDS: usize = 41;

/// Each way of `ways` on `dir`, in [`LS_ROUNDS`] rounds after one warm-up:
/// the median wall time of each, and the median over the rounds of its
/// time divided by the first way's in the same round.
fn interleaved(dir: &Path, ways: &[(&str, LsFn)]) -> io::Result<()> {
    let mut times = vec![Vec::with_capacity(LS_ROUNDS); ways.len()];
    let mut firsts = Vec::new();
    for (_, way) in ways {
        firsts.push(way(dir)?);
    }
    for _ in 0..LS_ROUNDS {
        for ((_, way), times) in ways.iter().zip(&mut times) {
            let start = Instant::now();
            way(dir)?;
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    for (((way, _), mine), got) in ways.iter().zip(&times).zip(firsts) {
        let ratios = mine.iter().zip(&times[0]).map(|(m, b)| m / b).collect();
        println!(
            "{way:<32} {:>9.2} ms wall, {:.2} x the first   ({} entries, {} bytes)",
            median(mine.clone()),
            median(ratios),
            got.0,
            got.1
        );
    }
    Ok(())
}

fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the struct we pass; all-zero is a valid
    // initial value for it.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Entries below `root` (the root too) and their sizes, as the walk
/// counts them.
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

fn uring_walk(root: &Path, jobs: usize) -> io::Result<(u64, u64)> {
    tokio_uring_getdents::start(async {
        let walk = WalkBuilder::new(root).statx(STATX_SIZE).concurrency(jobs);
        let mut walk = walk.build();
        let mut total = (0, 0);
        while let Some(entry) = walk.next().await {
            let entry = entry?;
            let size = entry.metadata().map_or(0, Metadata::size);
            total = (total.0 + 1, total.1 + size);
        }
        Ok(total)
    })
}

fn line(out: &mut String, kind: char, mode: u32, nlink: u64, ids: (u32, u32), size: u64) {
    let _ = write!(
        out,
        "{kind}{:o} {nlink} {} {} {size} ",
        mode & 0o7777,
        ids.0,
        ids.1
    );
}

fn std_ls(dir: &Path) -> io::Result<(u64, u64)> {
    let mut out = String::new();
    let mut n = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        let kind = if meta.is_dir() {
            'd'
        } else if meta.is_symlink() {
            'l'
        } else {
            '-'
        };
        line(
            &mut out,
            kind,
            meta.mode(),
            meta.nlink(),
            (meta.uid(), meta.gid()),
            meta.len(),
        );
        let _ = write!(
            out,
            "{} {}",
            meta.mtime(),
            entry.file_name().to_string_lossy()
        );
        if meta.is_symlink() {
            let _ = write!(out, " -> {}", std::fs::read_link(entry.path())?.display());
        }
        out.push('\n');
        n += 1;
    }
    Ok((n, out.len() as u64))
}

fn uring_ls(path: &Path, many: bool) -> io::Result<(u64, u64)> {
    tokio_uring_getdents::start(async {
        let mut dir = Dir::open(path).await?;
        let mut entries = Vec::new();
        while let Some(entry) = dir.next().await {
            entries.push(entry?);
        }
        let stats = if many {
            dir.statx_many(entries, STATX_BASIC_STATS).await?
        } else {
            let mut stats = Vec::with_capacity(entries.len());
            for entry in entries {
                let meta = dir.statx(&entry, STATX_BASIC_STATS).await;
                stats.push((entry, meta));
            }
            stats
        };
        // With statx_many the links' targets come in one call too; entry
        // by entry, each with its own read_link below.
        let links = stats
            .iter()
            .filter(|(_, meta)| many && meta.as_ref().is_ok_and(|m| m.is_symlink()));
        let mut targets = dir
            .read_links(links.map(|(entry, _)| entry))
            .await?
            .into_iter();
        let mut out = String::new();
        let n = stats.len() as u64;
        for (entry, meta) in stats {
            let meta = meta?;
            let kind = match meta.file_type() {
                FileType::Directory => 'd',
                FileType::Symlink => 'l',
                _ => '-',
            };
            let ids = (meta.uid(), meta.gid());
            line(&mut out, kind, meta.mode(), meta.nlink(), ids, meta.size());
            let mtime = meta
                .modified()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
            let secs = mtime.map_or(0, |d| d.as_secs());
            let _ = write!(out, "{secs} {}", entry.file_name().to_string_lossy());
            if meta.is_symlink() {
                let target = match targets.next() {
                    Some(target) => target?,
                    None => dir.read_link(&entry).await?,
                };
                let _ = write!(out, " -> {}", target.display());
            }
            out.push('\n');
        }
        dir.close().await?;
        Ok((n, out.len() as u64))
    })
}
