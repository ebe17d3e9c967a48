//! Futures and `Dir`s dropped at random points: no lost or repeated
//! entries, no leaked descriptors, no crash.
//!
//! One test per binary: it counts this process's open descriptors.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::task::Poll;
use std::time::{Duration, Instant};

use common::{backends, builder, open_fds, poll_once, Rng};
use tokio_uring_getdents::fs::Dir;

const ITERATIONS: usize = 3000;

#[test]
fn drops_at_random_points() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..150 {
        let name = format!("{i}-{}", "n".repeat(i % 60));
        fs::write(tmp.path().join(name), b"").unwrap();
    }
    fs::create_dir(tmp.path().join("sub")).unwrap();
    let expected: BTreeMap<Vec<u8>, usize> = common::std_listing(tmp.path())
        .into_keys()
        .map(|name| (name, 1))
        .collect();

    for (n, choice) in backends().into_iter().enumerate() {
        let mut rng = Rng::new(0x5eed_0000 + n as u64);
        let (completed, dropped) = tokio_uring::start(async {
            let baseline = open_fds();
            let (mut completed, mut dropped) = (0, 0);
            for _ in 0..ITERATIONS {
                let buffer = 512 + rng.below(2048) as usize;
                let mut open = builder(choice).buffer_size(buffer).open(tmp.path());
                if rng.below(5) == 0 {
                    // Dropped after submission: the reaper closes the fd.
                    let _ = poll_once(&mut open);
                    continue;
                }
                let mut dir = open.await.unwrap();
                let mut seen: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
                let mut steps_left = rng.below(400);
                loop {
                    if steps_left == 0 {
                        // Very likely with a read (the read-ahead) in flight.
                        drop(dir);
                        dropped += 1;
                        break;
                    }
                    steps_left -= 1;
                    let item = match rng.below(6) {
                        0 => {
                            let mut next = Box::pin(dir.next());
                            match poll_once(&mut next) {
                                Poll::Ready(item) => item,
                                Poll::Pending => continue,
                            }
                        }
                        1 => {
                            let _ = poll_once(&mut dir.statx("sub", libc::STATX_BASIC_STATS));
                            continue;
                        }
                        2 => {
                            let _ = poll_once(&mut Dir::open_at(&dir, "sub"));
                            continue;
                        }
                        _ => dir.next().await,
                    };
                    match item {
                        Some(entry) => {
                            let name = entry.unwrap().file_name().as_encoded_bytes().to_vec();
                            *seen.entry(name).or_default() += 1;
                        }
                        None => {
                            assert_eq!(seen, expected, "{choice:?}: every entry exactly once");
                            completed += 1;
                            if rng.below(2) == 0 {
                                dir.close().await.unwrap();
                            }
                            break;
                        }
                    }
                }
            }
            // Dropped operations finish in the background; all their
            // descriptors must be closed once they have.
            let deadline = Instant::now() + Duration::from_secs(30);
            while open_fds() > baseline {
                assert!(
                    Instant::now() < deadline,
                    "{choice:?}: {} descriptors still open",
                    open_fds() - baseline
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            (completed, dropped)
        });
        eprintln!("{choice:?}: {completed} listings completed, {dropped} Dirs dropped mid-way");
        assert!(
            completed > 100 && dropped > 100,
            "{choice:?}: {completed} / {dropped}"
        );
    }
}
