//! The terminal's keys, read on a thread of their own and handed over on
//! a channel of their own, so that no walk message ever queues before a
//! key; paused while a shell (`b`) owns the terminal. The reader sleeps
//! until a key comes (no polling: an idle browser is never woken), and a
//! pause wakes it with SIGWINCH, which crossterm's reader waits for
//! beside the terminal.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event};

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Reading,
    PauseAsked,
    Paused,
}

/// Whether the reader may read the terminal.
struct Gate {
    state: Mutex<State>,
    changed: Condvar,
}

/// The keys and the switch of their reader.
pub struct Input {
    pub keys: Receiver<Event>,
    gate: Arc<Gate>,
}

impl Input {
    /// Starts the reader: each event goes to `keys`, and `wake()` is sent
    /// to the loop's own channel so that a loop waiting there wakes up.
    pub fn start<M: Send + 'static>(wake: Sender<M>, wake_msg: fn() -> M) -> Input {
        let (tx, keys) = mpsc::channel();
        let gate = Arc::new(Gate {
            state: Mutex::new(State::Reading),
            changed: Condvar::new(),
        });
        let g = Arc::clone(&gate);
        // Not joined: it waits for the next key when the loop ends, and
        // the process ends with it.
        std::thread::spawn(move || loop {
            {
                let mut state = g.state.lock().unwrap_or_else(|p| p.into_inner());
                if *state == State::PauseAsked {
                    *state = State::Paused;
                    g.changed.notify_all();
                }
                while *state == State::Paused {
                    state = g.changed.wait(state).unwrap_or_else(|p| p.into_inner());
                }
            }
            // A resize, or the SIGWINCH of a pause, comes as
            // `Event::Resize`: the loop redraws.
            let Ok(ev) = event::read() else { break };
            if tx.send(ev).is_err() || wake.send(wake_msg()).is_err() {
                break;
            }
        });
        Input { keys, gate }
    }

    /// Stops reading the terminal until [`resume`](Self::resume), once the
    /// reader has stopped.
    pub fn pause(&self) {
        let mut state = self.gate.state.lock().unwrap_or_else(|p| p.into_inner());
        *state = State::PauseAsked;
        // SAFETY: kill has no memory preconditions; SIGWINCH is handled by
        // crossterm (its reader wakes), and ignored by default otherwise.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGWINCH);
        }
        // A reader that ended (the terminal gone) never answers.
        let deadline = Instant::now() + Duration::from_secs(1);
        while *state != State::Paused {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = (self.gate.changed.wait_timeout(state, left))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    pub fn resume(&self) {
        *self.gate.state.lock().unwrap_or_else(|p| p.into_inner()) = State::Reading;
        self.gate.changed.notify_all();
    }
}
