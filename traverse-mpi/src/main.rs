//! `traverse-mpi`: `traverse`'s count of a tree, walked by every rank of an
//! MPI job with work stealing, printed once by rank 0.

mod cli;
mod collect;
#[path = "../../traverse/src/bin/traverse/du/exclude.rs"]
mod exclude;
mod gather;
// traverse sorts its lines by the walk's `ListingOrder` (`line::du_order`);
// ranks send the lines' places as chains, sorted by `order::du_order`.
#[allow(dead_code)]
#[path = "../../traverse/src/bin/traverse/line.rs"]
mod line;
mod lines;
mod links;
mod order;
#[path = "../../traverse/src/bin/traverse/output.rs"]
mod output;
#[path = "../../traverse/src/bin/traverse/du/size.rs"]
mod size;
mod steal;
mod task;
// Lines go to mpirun, never to a terminal: du's quoting of lines on one
// (`quote_if_needed`) is not needed.
#[allow(dead_code)]
#[path = "../../traverse/src/bin/traverse/du/text.rs"]
mod text;
mod walker;
mod wire;

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use traverse::Totals;

use cli::Opts;
use links::Links;
use task::Task;
use walker::{Share, Walker};

const EXIT_ERRORS: u8 = 1;
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    // Only the main thread calls MPI; each rank's reader is a thread of its own.
    let Some((universe, _)) = mpi::initialize_with_threading(mpi::Threading::Funneled) else {
        eprintln!("traverse-mpi: MPI was initialised already");
        return ExitCode::from(EXIT_ERRORS);
    };
    let world = universe.world();
    abort_on_panic(world.rank());
    // Every rank parses the same arguments and comes to the same answer;
    // rank 0 alone says what is wrong.
    let config = match Opts::try_parse() {
        Ok(opts) => opts.into_config(),
        Err(e) if world.rank() == 0 => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { 0 });
        }
        Err(e) => return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { 0 }),
    };
    let config = match config {
        Ok(config) => config,
        Err(why) => {
            if world.rank() == 0 {
                eprintln!("traverse-mpi: {why}");
            }
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let code = run(&world, config);
    // Every rank exits with rank 0's status, so mpirun reports it.
    let mut code = [code];
    world.process_at_rank(0).broadcast_into(&mut code[..]);
    ExitCode::from(code[0])
}

/// Walks every PATH; on rank 0, prints and returns the exit status.
fn run(world: &SimpleCommunicator, config: cli::Config) -> u8 {
    let rank = world.rank();
    let mut walkers: Vec<Walker> = (0..config.readers)
        .map(|_| {
            let mut walker = Walker::new(
                config.walk.clone(),
                world.size() as u32,
                config.keep,
                config.exclude.clone(),
            );
            walker.du_messages = config.du;
            walker
        })
        .collect();
    if let (0, Some(why)) = (rank, walkers[0].walk().fallback()) {
        eprintln!("traverse-mpi: io_uring engine unavailable ({why}); using the threads engine");
    }
    let mut owned = links::Owned::default();
    let mut all = Totals::default();
    let mut total_size = 0u128;
    let mut out = std::io::stdout().lock();
    let mut failed = None;
    let mut earlier = Vec::new();
    for path in &config.paths {
        // du leaves out a PATH that matches --exclude, without a word.
        let excluded = config.exclude.as_ref().is_some_and(|x| {
            let bytes = path.as_os_str().as_bytes();
            // Its trailing slashes made one, as fts gives it.
            let end = bytes
                .iter()
                .rposition(|&b| b != b'/')
                .map_or(1, |at| at + 2);
            x.matches(&bytes[..end.min(bytes.len())])
        });
        if config.du && excluded {
            continue;
        }
        if config.du && missing(world, path) {
            // du's message, from rank 0; no line for it.
            all.errors += 1;
            continue;
        }
        if config.paths.len() > 1 && repeated(world, path, &mut earlier) {
            continue;
        }
        for walker in &mut walkers {
            walker.earlier = earlier.iter().map(|(id, _)| *id).collect();
        }
        let root = (rank == 0).then(|| Task::root(path.as_os_str().as_bytes().to_vec()));
        let mut share = Share::default();
        let mut links = Links::new(world.size() as usize, rank as usize, config.keep);
        steal::walk(world, &walkers, root, &mut share, &mut links);
        if std::env::var_os("TRAVERSE_MPI_STATS").is_some() {
            collect::say(&format!(
                "traverse-mpi stats: rank {rank}: {} tasks, {} entries, at most {} in flight of {} batches of hard links\n",
                share.tasks, share.entries, links.peak, links.batches
            ));
        }
        links.finish(world, &mut share, &mut owned);
        let Some(merged) = gather::gather(world, share) else {
            continue;
        };
        all += merged.totals;
        let text = match &config.breakdown {
            Some(b) => {
                let (text, size) = b.lines(path, merged, config.json);
                total_size += size;
                text
            }
            None if config.json => output::json(Some(path), &merged.totals).into_bytes(),
            None => output::human(Some(path), &merged.totals, false).into_bytes(),
        };
        if failed.is_none() {
            failed = out.write_all(&text).err();
        }
    }
    if rank != 0 {
        return 0;
    }
    let total = config.total || (config.paths.len() > 1 && config.breakdown.is_none());
    if total {
        let text = match (config.json, &config.breakdown) {
            (true, _) => output::json(None, &all).into_bytes(),
            (false, Some(b)) => b.total_line(total_size),
            (false, None) => output::human(None, &all, false).into_bytes(),
        };
        if failed.is_none() {
            failed = out.write_all(&text).err();
        }
    }
    if let Some(e) = failed.or_else(|| out.flush().err()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("traverse-mpi: write error: {e}");
        }
        return EXIT_ERRORS;
    }
    if all.errors > 0 {
        EXIT_ERRORS
    } else {
        0
    }
}

/// Whether `path` cannot be stat'ed, decided (and said, in du's words) by
/// rank 0: du prints no line for it.
fn missing(world: &SimpleCommunicator, path: &Path) -> bool {
    let mut missing = [0u8];
    if world.rank() == 0 {
        if let Err(e) = std::fs::symlink_metadata(path) {
            let path = text::quote(path.as_os_str().as_bytes());
            eprintln!("traverse-mpi: cannot access {path}: {}", text::strerror(&e));
            missing[0] = 1;
        }
    }
    world.process_at_rank(0).broadcast_into(&mut missing[..]);
    missing[0] == 1
}

/// Whether `path` was counted under an earlier PATH (the same directory,
/// or one below it), as `du A B` counts every directory once; decided on
/// rank 0, which also notes `path` for the next ones.
fn repeated(
    world: &SimpleCommunicator,
    path: &Path,
    earlier: &mut Vec<((u64, u64), PathBuf)>,
) -> bool {
    let id = std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_dir())
        .map(|m| (m.dev(), m.ino()));
    let canonical = std::fs::canonicalize(path).ok();
    let mut seen = [0u8];
    if world.rank() == 0 {
        let below = |(e_id, e_path): &((u64, u64), PathBuf)| {
            Some(*e_id) == id || canonical.as_ref().is_some_and(|c| c.starts_with(e_path))
        };
        seen[0] = u8::from(earlier.iter().any(below));
    }
    world.process_at_rank(0).broadcast_into(&mut seen[..]);
    if let (Some(id), Some(canonical), 0) = (id, canonical, seen[0]) {
        earlier.push((id, canonical));
    }
    seen[0] == 1
}

/// A rank that panics (a bug, or a message cut short) ends the whole job
/// at once with a message, so no rank waits for it and rank 0 never prints
/// a total without its share.
fn abort_on_panic(rank: i32) {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default(info);
        collect::say(&format!(
            "traverse-mpi: rank {rank} failed; the run is aborted and no total is printed\n"
        ));
        SimpleCommunicator::world().abort(70);
    }));
}
