//! `testfs SOURCE MOUNTPOINT [OPTIONS]`: mount a slow, faulty passthrough
//! of SOURCE in the foreground until Ctrl-C, SIGTERM or an outside unmount,
//! then print the counters.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use testfs::{Fault, Mount, Options, STATS_FILE};

const USAGE: &str = "\
Usage: testfs SOURCE MOUNTPOINT [OPTIONS]

Mounts a read-only passthrough of SOURCE at MOUNTPOINT and serves it in the
foreground until Ctrl-C, SIGTERM or `umount MOUNTPOINT`; then prints the
request counters. While mounted, MOUNTPOINT/.testfs-stats shows them.

Options:
  --delay-us N          wait N microseconds before each reply [default: 0]
  --eio PATH            fail LOOKUP, GETATTR, OPENDIR and READDIR of PATH
                        (relative to SOURCE) with EIO; repeatable
  --eio-readdir PATH    fail only READDIR of PATH with EIO; repeatable
  --vanish PATH         fail LOOKUP, GETATTR, OPENDIR and READDIR of PATH
                        with ENOENT while its parent still lists it (as if
                        removed after the listing); repeatable
  --show-as PATH NAME   list PATH under NAME (up to 1024 bytes, longer than
                        local filesystems allow); repeatable
  --endless PATH        READDIR of PATH never ends: its entries come round
                        again and again (cycling offsets); repeatable
  --inode-of PATH OTHER GETATTR of PATH reports OTHER's inode number (an
                        ancestor's: a false loop); repeatable
  --threads N           serve N requests at once [default: 16]
  --ttl-ms N            let the kernel cache names and attributes N ms
                        [default: 0: every stat reaches testfs]
  -h, --help            print this help
";

struct Args {
    source: PathBuf,
    mountpoint: PathBuf,
    options: Options,
}

fn number(flag: &str, value: Option<String>) -> Result<u64, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a value"))?;
    value
        .parse()
        .map_err(|_| format!("{flag} {value:?}: not a non-negative integer"))
}

fn path(flag: &str, value: Option<String>) -> Result<PathBuf, String> {
    match value {
        Some(value) if !value.is_empty() => Ok(value.into()),
        _ => Err(format!("{flag} needs a path")),
    }
}

/// `Ok(None)` means help was asked for.
fn parse(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut options = Options::new();
    let mut positional = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--delay-us" => {
                options = options.delay(Duration::from_micros(number(&arg, args.next())?))
            }
            "--ttl-ms" => options = options.ttl(Duration::from_millis(number(&arg, args.next())?)),
            "--threads" => {
                let n = number(&arg, args.next())?;
                if n == 0 {
                    return Err("--threads must be at least 1".into());
                }
                options = options.threads(usize::try_from(n).map_err(|e| e.to_string())?);
            }
            "--eio" => options = options.fault(path(&arg, args.next())?, Fault::Eio),
            "--eio-readdir" => options = options.fault(path(&arg, args.next())?, Fault::EioReaddir),
            "--vanish" => options = options.fault(path(&arg, args.next())?, Fault::Vanish),
            "--show-as" => {
                let entry = path(&arg, args.next())?;
                let name = args.next().ok_or("--show-as needs a path and a name")?;
                options = options.show_as(entry, name);
            }
            "--endless" => options = options.fault(path(&arg, args.next())?, Fault::EndlessReaddir),
            "--inode-of" => {
                let entry = path(&arg, args.next())?;
                let other = path(&arg, args.next())?;
                options = options.inode_of(entry, other);
            }
            flag if flag.starts_with('-') && flag.len() > 1 => {
                return Err(format!("unknown option {flag:?}"))
            }
            _ if arg.is_empty() => return Err("empty path argument".into()),
            _ => positional.push(PathBuf::from(arg)),
        }
    }
    match <[PathBuf; 2]>::try_from(positional) {
        Ok([source, mountpoint]) => Ok(Some(Args {
            source,
            mountpoint,
            options,
        })),
        Err(got) => Err(format!(
            "expected SOURCE and MOUNTPOINT, got {} path argument(s)",
            got.len()
        )),
    }
}

fn run(args: Args) -> Result<(), String> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register(signal, stop.clone())
            .map_err(|e| format!("installing a signal handler: {e}"))?;
    }
    let mount =
        Mount::new(&args.source, &args.mountpoint, &args.options).map_err(|e| e.to_string())?;
    eprintln!(
        "testfs: {} mounted at {} (delay {} µs); counters in {}",
        args.source.display(),
        mount.mountpoint().display(),
        args.options.delay_value().as_micros(),
        mount.mountpoint().join(STATS_FILE).display()
    );
    // Polling keeps this simple: either a signal sets the flag, or an
    // outside unmount ends the serving threads.
    while !stop.load(Ordering::Relaxed) && mount.is_serving() {
        thread::sleep(Duration::from_millis(50));
    }
    let stats = mount.unmount().map_err(|e| e.to_string())?;
    print!("{stats}");
    Ok(())
}

fn main() -> ExitCode {
    match parse(std::env::args().skip(1)) {
        Ok(None) => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Ok(Some(args)) => match run(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("testfs: {err}");
                ExitCode::from(1)
            }
        },
        Err(err) => {
            eprintln!("testfs: {err}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}
