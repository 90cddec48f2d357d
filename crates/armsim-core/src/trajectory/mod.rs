//! MetaSim trajectory v2 files (spec 002): typed demos, `.json`/`.json.gz`/`.pkl`/`.pkl.gz` by
//! file name, and crash-safe recording. Pure data and files: no Bevy, no physics, so the
//! formats can be tested (and used by tools) on their own.

mod de;
mod format;
pub mod pickle;
mod record;
pub mod value;

pub use format::{
    ActionFrame, BodyState, CodecError, Demo, Format, JointValues, MAX_DECOMPRESSED_BYTES,
    ShapeError, StateFrame, Trajectories, TrajectoryError, load, read_value, save, write_value,
};
pub use record::{Recorder, RecorderOptions, Recovery, journal_path, read_journal, recover};
pub use value::Value;

#[cfg(test)]
mod tests;
