use std::io::{ErrorKind, Write};
use std::process::ExitCode;

use clap::Parser;
use ratesim::InputError;

fn main() -> ExitCode {
    // Before rayon or anything else starts a thread.
    ratesim::cache::tune_malloc();
    let cli = ratesim::cli::Cli::parse();
    match ratesim::app::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // `ratesim … | head`: a closed stdout is the reader's choice, not a failure.
            let broken_pipe = err.chain().any(|e| {
                e.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == ErrorKind::BrokenPipe)
            });
            if broken_pipe {
                return ExitCode::SUCCESS;
            }
            // A closed or full stderr must not turn bad input into a panic
            // (exit 101): the exit status still tells what happened.
            let _ = writeln!(std::io::stderr(), "error: {err:#}");
            if err.chain().any(|e| e.is::<InputError>()) {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
