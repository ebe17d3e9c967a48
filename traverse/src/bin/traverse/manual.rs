//! `--completions SHELL` and `--man`: the shell completions and the man
//! page, generated from the same clap definition as the options, so they
//! never drift from them.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::CommandFactory;

use crate::cli::{Generate, Opts};

/// Prints `what` on stdout: status 0, or 1 with a message when stdout
/// cannot be written (quietly for a closed pipe).
pub fn print(what: Generate) -> ExitCode {
    let mut out = Vec::new();
    let mut command = Opts::command();
    let made = match what {
        Generate::Completions(shell) => {
            clap_complete::generate(shell, &mut command, "traverse", &mut out);
            Ok(())
        }
        Generate::Man => clap_mangen::Man::new(command).render(&mut out),
    };
    let written = made.and_then(|()| {
        let mut stdout = io::stdout().lock();
        stdout.write_all(&out)?;
        stdout.flush()
    });
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if e.kind() != io::ErrorKind::BrokenPipe {
                eprintln!("traverse: write error: {e}");
            }
            ExitCode::from(1)
        }
    }
}
