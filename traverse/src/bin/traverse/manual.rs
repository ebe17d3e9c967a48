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
    let command = Opts::command();
    let made = match what {
        Generate::Completions(shell) => {
            clap_complete::generate(shell, &mut visible(&command), "traverse", &mut out);
            Ok(())
        }
        Generate::Man => man_page(clap_mangen::Man::new(command), &mut out),
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

/// The command without its hidden options (for measurements): clap's
/// completions would offer them.
fn visible(command: &clap::Command) -> clap::Command {
    let shown = command.get_arguments().filter(|a| !a.is_hide_set());
    clap::Command::new("traverse")
        .version(env!("CARGO_PKG_VERSION"))
        .disable_help_flag(true)
        .args(shown.cloned())
}

/// The man page: clap's sections, with KEYS (the browser's) and EXIT
/// STATUS before VERSION.
fn man_page(man: clap_mangen::Man, out: &mut Vec<u8>) -> io::Result<()> {
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    man.render_extra_section(out)?;
    out.extend_from_slice(
        b".SH KEYS\nIn the browser (\\-i PATH, or \\-f FILE for a saved scan):\n",
    );
    for (keys, what) in crate::browse::KEYS {
        out.extend_from_slice(format!(".TP\n\\fB{}\\fR\n{}\n", roff(keys), roff(what)).as_bytes());
    }
    out.extend_from_slice(
        b".SH \"EXIT STATUS\"\n\
          .TP\n0\nEvery entry was read (or the browser was quit).\n\
          .TP\n1\nSome entry could not be read (reported on stderr, the walk went on), \
          stdout could not be written, or PATH cannot be browsed.\n\
          .TP\n2\nBad usage (or \\-i without a terminal).\n\
          .TP\n130\nInterrupted by Ctrl\\-C (SIGINT): the totals printed are partial.\n",
    );
    man.render_version_section(out)
}

/// `text` for roff: backslashes and dashes escaped, no line starting
/// with a dot.
fn roff(text: &str) -> String {
    let text = text.replace('\\', "\\e").replace('-', "\\-");
    match text.strip_prefix('.') {
        Some(rest) => format!("\\&.{rest}"),
        None => text,
    }
}
