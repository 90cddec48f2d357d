//! MetaSim trajectory v2 files: typed demos, `.json`/`.json.gz`/`.pkl`/`.pkl.gz` by
//! file name, and crash-safe recording. Pure data and files: no Bevy, no physics, so the
//! formats can be tested (and used by tools) on their own.

pub mod adapt;
mod de;
mod demo;
mod format;
mod loc;
pub mod pickle;
mod record;
pub mod value;

pub use demo::{ActionFrame, BodyState, Demo, JointValues, ShapeError, StateFrame, Trajectories};
pub use format::{
    CodecError, Format, MAX_DECOMPRESSED_BYTES, TrajectoryError, load, read_value, save,
    write_value,
};
pub use record::{
    JOURNAL_SUFFIX, Recorder, RecorderOptions, Recovery, journal_path, journal_target,
    leftover_journals, read_journal, recover, recover_journal,
};
pub use value::Value;

#[cfg(test)]
mod tests;
