//! The quick experiments behind two defaults (see DESIGN.md):
//!
//! - `measure buffers DIR...`: time to list each DIR, and to walk the tree
//!   under it with `Dir::open_at` (64 directories in flight), for buffer
//!   sizes from 4 KiB to 1 MiB, on every backend the kernel offers;
//! - `measure fallback TREE`: how to keep `getdents64` off the runtime
//!   thread: tokio's blocking pool (`spawn_blocking` per read), one
//!   dedicated thread, or inline on the runtime thread (the baseline that
//!   blocks it), reading every directory under TREE, 1 and 64 in flight.
//!
//! Each figure is the median of 7 runs after one warm-up (warm cache):
//! wall-clock time and CPU time of the whole process.

use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use io_uring_getdents::dirent::DirentIter;
use io_uring_getdents::syscall::getdents64;
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};
use tokio_uring_getdents::fs::{BackendChoice, Dir, DirBuilder, DirEntry, FileType};

const RUNS: usize = 7;
const IN_FLIGHT: usize = 64;

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("buffers") if args.len() > 1 => buffers(&args[1..]),
        Some("fallback") if args.len() == 2 => fallback(Path::new(&args[1])),
        _ => {
            eprintln!("usage: measure buffers DIR... | measure fallback TREE");
            std::process::exit(2);
        }
    }
}

/// Median wall-clock time and median CPU time (user + system, all threads
/// of the process; less disturbed by other load on the machine).
fn median(mut f: impl FnMut() -> io::Result<usize>) -> io::Result<(Duration, Duration, usize)> {
    let count = f()?;
    let mut wall = Vec::with_capacity(RUNS);
    let mut cpu = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let (start, cpu_start) = (Instant::now(), cpu_time());
        let n = f()?;
        wall.push(start.elapsed());
        cpu.push(cpu_time() - cpu_start);
        assert_eq!(n, count, "the tree changed during the measurement");
    }
    wall.sort();
    cpu.sort();
    Ok((wall[RUNS / 2], cpu[RUNS / 2], count))
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

fn buffers(dirs: &[String]) -> io::Result<()> {
    let mut choices = vec![BackendChoice::Fallback];
    if io_uring_getdents::detect::cached().opcode().is_some() {
        choices.push(BackendChoice::Getdents);
    }
    println!("| backend | buffer | what | entries | wall ms | cpu ms |");
    println!("|---|---|---|---|---|---|");
    for dir in dirs {
        for &choice in &choices {
            for size in [4, 8, 16, 32, 64, 128, 256, 1024] {
                let builder = Dir::builder().backend(choice).buffer_size(size * 1024);
                let path = Path::new(dir);
                let (wall, cpu, n) = median(|| tokio_uring::start(list(builder, path)))?;
                println!(
                    "| {choice:?} | {size} KiB | list {dir} | {n} | {:.1} | {:.1} |",
                    ms(wall),
                    ms(cpu)
                );
                let (wall, cpu, n) = median(|| tokio_uring::start(walk(builder, path)))?;
                println!(
                    "| {choice:?} | {size} KiB | walk {dir} | {n} | {:.1} | {:.1} |",
                    ms(wall),
                    ms(cpu)
                );
            }
        }
    }
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn list(builder: DirBuilder, path: &Path) -> io::Result<usize> {
    let mut dir = builder.open(path).await?;
    let mut n = 0;
    while let Some(entry) = dir.next().await {
        entry?;
        n += 1;
    }
    Ok(n)
}

/// Every entry under `root`, at most `IN_FLIGHT` directories being read
/// at a time.
async fn walk(builder: DirBuilder, root: &Path) -> io::Result<usize> {
    let shared = Rc::new(Walk {
        permits: Arc::new(Semaphore::new(IN_FLIGHT)),
        count: RefCell::new(0),
        tasks: RefCell::new(Vec::new()),
    });
    let permit = shared
        .permits
        .clone()
        .acquire_owned()
        .await
        .expect("semaphore");
    let root = builder.open(root).await?;
    let task = tokio_uring::spawn(read_dir(shared.clone(), root, permit));
    shared.tasks.borrow_mut().push(task);
    loop {
        let task = shared.tasks.borrow_mut().pop();
        match task {
            Some(task) => task.await.expect("task")?,
            None => break,
        }
    }
    let n = *shared.count.borrow();
    Ok(n)
}

struct Walk {
    permits: Arc<Semaphore>,
    count: RefCell<usize>,
    tasks: RefCell<Vec<tokio::task::JoinHandle<io::Result<()>>>>,
}

/// Opens `name` in `parent` once a permit is free, then reads it.
async fn open_and_read(shared: Rc<Walk>, parent: Rc<Dir>, name: DirEntry) -> io::Result<()> {
    let permit = shared
        .permits
        .clone()
        .acquire_owned()
        .await
        .expect("semaphore");
    let dir = match Dir::open_at(&parent, &name).await {
        Ok(dir) => dir,
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => return Ok(()),
        Err(e) => return Err(e),
    };
    drop(parent);
    read_dir(shared, dir, permit).await
}

/// Reads `dir`, holding a permit, and queues its subdirectories.
async fn read_dir(shared: Rc<Walk>, mut dir: Dir, permit: OwnedSemaphorePermit) -> io::Result<()> {
    let mut subdirs = Vec::new();
    while let Some(entry) = dir.next().await {
        let entry = entry?;
        *shared.count.borrow_mut() += 1;
        if entry.file_type() == FileType::Directory {
            subdirs.push(entry);
        }
    }
    drop(permit);
    let dir = Rc::new(dir);
    for entry in subdirs {
        let task = tokio_uring::spawn(open_and_read(shared.clone(), dir.clone(), entry));
        shared.tasks.borrow_mut().push(task);
    }
    Ok(())
}

/// How a read of one buffer is run.
#[derive(Clone, Copy, Debug)]
enum Strategy {
    Inline,
    BlockingPool,
    DedicatedThread,
}

type Job = (
    Arc<File>,
    Vec<u8>,
    oneshot::Sender<(io::Result<(usize, bool)>, Vec<u8>)>,
);

/// As the fallback backend does: `getdents64` until the end or until the
/// buffer cannot take a maximal record (1 048 bytes, a 1 024-byte FUSE
/// name); true at the end.
fn fill(file: &File, buf: &mut [u8]) -> io::Result<(usize, bool)> {
    let mut filled = 0;
    while buf.len() - filled >= 1048 {
        match getdents64(file.as_fd(), &mut buf[filled..])? {
            0 => return Ok((filled, true)),
            n => filled += n,
        }
    }
    Ok((filled, false))
}

fn fallback(tree: &Path) -> io::Result<()> {
    let mut dirs = Vec::new();
    collect_dirs(tree, &mut dirs)?;
    println!("{} directories under {}", dirs.len(), tree.display());
    println!("| strategy | in flight | entries | wall ms | cpu ms |");
    println!("|---|---|---|---|---|");
    for strategy in [
        Strategy::Inline,
        Strategy::BlockingPool,
        Strategy::DedicatedThread,
    ] {
        for in_flight in [1, IN_FLIGHT] {
            let (wall, cpu, n) =
                median(|| tokio_uring::start(read_dirs(&dirs, strategy, in_flight)))?;
            println!(
                "| {strategy:?} | {in_flight} | {n} | {:.1} | {:.1} |",
                ms(wall),
                ms(cpu)
            );
        }
    }
    Ok(())
}

fn collect_dirs(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    out.push(dir.to_path_buf());
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            collect_dirs(&entry.path(), out)?;
        }
    }
    Ok(())
}

async fn read_dirs(dirs: &[PathBuf], strategy: Strategy, in_flight: usize) -> io::Result<usize> {
    let (jobs, worker) = match strategy {
        Strategy::DedicatedThread => {
            let (tx, rx) = mpsc::channel::<Job>();
            let worker = std::thread::spawn(move || {
                for (file, mut buf, reply) in rx {
                    let res = fill(&file, &mut buf);
                    let _ = reply.send((res, buf));
                }
            });
            (Some(tx), Some(worker))
        }
        _ => (None, None),
    };
    let permits = Rc::new(Semaphore::new(in_flight));
    let mut tasks = Vec::with_capacity(dirs.len());
    for dir in dirs {
        let permits = permits.clone();
        let file = Arc::new(File::open(dir)?);
        let jobs = jobs.clone();
        tasks.push(tokio_uring::spawn(async move {
            let _permit = permits.acquire().await.expect("semaphore");
            let mut buf = vec![0u8; 32 * 1024];
            let mut n = 0;
            loop {
                let (res, back) = match strategy {
                    Strategy::Inline => {
                        let res = fill(&file, &mut buf);
                        (res, buf)
                    }
                    Strategy::BlockingPool => {
                        let file = file.clone();
                        tokio::task::spawn_blocking(move || {
                            let res = fill(&file, &mut buf);
                            (res, buf)
                        })
                        .await
                        .expect("blocking task")
                    }
                    Strategy::DedicatedThread => {
                        let (tx, rx) = oneshot::channel();
                        let jobs = jobs.as_ref().expect("worker");
                        jobs.send((file.clone(), buf, tx)).expect("worker alive");
                        rx.await.expect("worker reply")
                    }
                };
                buf = back;
                let (filled, end) = res?;
                n += DirentIter::new(&buf[..filled]).count();
                if end {
                    return Ok::<_, io::Error>(n);
                }
            }
        }));
    }
    let mut total = 0;
    for task in tasks {
        total += task.await.expect("task")?;
    }
    drop(jobs);
    if let Some(worker) = worker {
        worker.join().expect("worker thread");
    }
    Ok(total)
}
