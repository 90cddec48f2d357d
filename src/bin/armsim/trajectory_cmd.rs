//! `armsim trajectory …`: trajectory files outside a run. `recover` turns the journal that a
//! recording killed before it finished left beside its target (`FILE.partial.jsonl`) into the
//! complete file, the same way a finished recording writes it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use armsim::trajectory::{journal_path, journal_target, recover_journal};

#[derive(clap::Subcommand, Debug)]
pub enum TrajectorySubcommand {
    /// Turn the journal of a recording that never finished (FILE.partial.jsonl, left by
    /// SIGKILL, a crash or a power cut) into the complete FILE, format by its extension, then
    /// remove the journal. A journal that a running armsim still writes is refused.
    Recover {
        /// The journal (FILE.partial.jsonl), or FILE itself.
        #[arg(value_name = "JOURNAL")]
        journal: PathBuf,
        /// Write this file instead of FILE (.json, .json.gz, .pkl or .pkl.gz).
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// Runs `armsim trajectory …`; prints what it wrote.
pub fn run(command: &TrajectorySubcommand) -> anyhow::Result<ExitCode> {
    match command {
        TrajectorySubcommand::Recover { journal, output } => {
            // The recording's own file name stands for its journal.
            let journal = if journal_target(journal).is_some() {
                journal.clone()
            } else {
                journal_path(journal)
            };
            let r = recover_journal(&journal, output.as_deref())
                .with_context(|| format!("cannot recover {}", journal.display()))?;
            println!(
                "recovered {} -> {}: {r}",
                journal.display(),
                r.path.display()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
