//! Recording a trajectory as it happens, so that a recording stopped by Ctrl-C, SIGTERM,
//! `(killsim)` or even SIGKILL still ends up as a complete, loadable file.
//!
//! Frames go to a JSON-lines journal beside the target, `<path>.partial.jsonl`, as they are
//! pushed. [`Recorder::finish`] turns the journal into the target file in the requested format
//! and removes it; [`recover`] does the same for a journal whose recorder never finished.
//!
//! What survives what:
//! - `finish()` returns Ok: the target is complete; it was written to `<path>.tmp`, fsynced and
//!   renamed, so it is never seen half-written, and an older file at `path` stays intact until
//!   the rename. The app calls `finish` on Ctrl-C, SIGTERM and `(killsim)`.
//! - `finish()` fails (disk full, NaN in a `.json` target...): the journal is kept; `recover`.
//! - The recorder is dropped without `finish` (panic, early return): every pushed frame is in
//!   the journal (dropping flushes it); `recover`.
//! - SIGKILL, abort, OOM kill: every frame up to the last flush is in the journal — with the
//!   default `flush_every = 1`, every frame whose push returned. A line cut short by the kill is
//!   dropped by `recover`, which reports it.
//! - Power loss or kernel crash: only what was fsynced — the journal header and first
//!   `init_state` (synced by `create`), and everything before the last [`Recorder::sync`].
//!
//! A live recorder holds an exclusive advisory lock (`flock`) on its journal, which the kernel
//! drops when the process dies however it dies. [`recover`] and [`recover_journal`] refuse a
//! journal that is still locked, so a recovery (`armsim trajectory recover`, or the one at the
//! next `--record` of the same file, see [`leftover_journals`]) never takes a journal from
//! under a recording that is still running.
//!
//! Journal lines, one JSON object each: a header `{"armsim_trajectory_journal":1,"robot":..}`,
//! then `{"init_state":S}` (starts a demo), `{"action":A}`, `{"state":S}`, `{"extra":V}`.
//! JSON has no NaN or infinity, and a recording may well contain them, so non-finite floats are
//! journaled as `{"$float":"NaN"|"Infinity"|"-Infinity"}`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use super::de::{action_from_value, state_from_value};
use super::demo::{
    ActionFrame, Demo, ShapeError, StateFrame, Trajectories, action_to_value, state_to_value,
};
use super::format::{self, Format, TrajectoryError};
use super::loc::Loc;
use super::value::Value;

const MAGIC: &str = "armsim_trajectory_journal";
const VERSION: i64 = 1;
const FLOAT_TAG: &str = "$float";

/// The journal a recording of `path` writes: `<path>.partial.jsonl`.
pub fn journal_path(path: &Path) -> PathBuf {
    format::sibling(path, JOURNAL_SUFFIX)
}

/// How often the journal is handed to the kernel.
#[derive(Clone, Copy, Debug)]
pub struct RecorderOptions {
    /// Flush after this many pushed frames (0 counts as 1). A frame is one `push_action` or
    /// `push_state`. A flush is one `write` syscall of a few hundred bytes per frame, cheap next
    /// to a physics step; raise this only to trade SIGKILL safety for fewer syscalls.
    pub flush_every: u32,
}

impl Default for RecorderOptions {
    fn default() -> Self {
        RecorderOptions { flush_every: 1 }
    }
}

/// Records one robot's demos into a journal and, on [`finish`](Self::finish), into the target
/// file. See the module docs for what survives a crash.
pub struct Recorder {
    path: PathBuf,
    journal: PathBuf,
    out: BufWriter<File>,
    line: Vec<u8>,
    flush_every: u32,
    unflushed: u32,
}

impl Recorder {
    /// Starts recording `robot` into `path` (format by extension) with a first demo starting at
    /// `init_state`. Fails if a journal for `path` already exists: that is an earlier recording
    /// that never finished, and it is not overwritten — [`recover`] it or remove it first.
    pub fn create(
        path: impl AsRef<Path>,
        robot: &str,
        init_state: &StateFrame,
    ) -> Result<Recorder, TrajectoryError> {
        Self::create_with(path, robot, init_state, RecorderOptions::default())
    }

    pub fn create_with(
        path: impl AsRef<Path>,
        robot: &str,
        init_state: &StateFrame,
        options: RecorderOptions,
    ) -> Result<Recorder, TrajectoryError> {
        let path = path.as_ref().to_owned();
        Format::from_path(&path)?;
        let journal = journal_path(&path);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&journal)
            .map_err(|e| match e.kind() {
                io::ErrorKind::AlreadyExists => TrajectoryError::JournalExists {
                    journal: journal.clone(),
                },
                _ => TrajectoryError::io(&journal)(e),
            })?;
        // Best effort: a filesystem without locks only loses the guard against recovering a live
        // journal, not the recording.
        let _ = file.try_lock();
        let mut rec = Recorder {
            path,
            journal,
            out: BufWriter::with_capacity(64 * 1024, file),
            line: Vec::with_capacity(4096),
            flush_every: options.flush_every.max(1),
            unflushed: 0,
        };
        let header = Value::Dict(vec![
            (MAGIC.to_owned(), Value::Int(VERSION)),
            ("robot".to_owned(), Value::Str(robot.to_owned())),
        ]);
        rec.write_line(None, &header)?;
        rec.new_demo(init_state)?;
        rec.sync()?;
        format::sync_parent(&rec.journal);
        Ok(rec)
    }

    /// Ends the current demo and starts another at `init_state` (an episode reset).
    pub fn new_demo(&mut self, init_state: &StateFrame) -> Result<(), TrajectoryError> {
        self.write_line(Some("init_state"), &state_to_value(init_state))?;
        self.flush()
    }

    pub fn push_action(&mut self, action: &ActionFrame) -> Result<(), TrajectoryError> {
        self.write_line(Some("action"), &action_to_value(action))?;
        self.frame_written()
    }

    pub fn push_state(&mut self, state: &StateFrame) -> Result<(), TrajectoryError> {
        self.write_line(Some("state"), &state_to_value(state))?;
        self.frame_written()
    }

    /// Sets the current demo's `extra` (the last value set wins).
    pub fn set_extra(&mut self, extra: &Value) -> Result<(), TrajectoryError> {
        self.write_line(Some("extra"), extra)?;
        self.flush()
    }

    /// Hands everything pushed so far to the kernel: it then survives the process being killed.
    pub fn flush(&mut self) -> Result<(), TrajectoryError> {
        self.unflushed = 0;
        self.out.flush().map_err(TrajectoryError::io(&self.journal))
    }

    /// Flushes and fsyncs the journal: everything pushed so far then survives a power cut. Costs
    /// milliseconds on most disks; call it at checkpoints, not every frame.
    pub fn sync(&mut self) -> Result<(), TrajectoryError> {
        self.flush()?;
        self.out
            .get_ref()
            .sync_data()
            .map_err(TrajectoryError::io(&self.journal))
    }

    /// The file `finish` will write.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn journal_path(&self) -> &Path {
        &self.journal
    }

    /// Writes the target file (atomically, in its format) from the journal, then removes the
    /// journal. Building it from the journal rather than from memory means a normal finish runs
    /// exactly the code that crash recovery relies on, and memory does not grow with the
    /// recording. On error the journal is left for [`recover`].
    pub fn finish(mut self) -> Result<Recovery, TrajectoryError> {
        self.sync()?;
        let Recorder {
            path, journal, out, ..
        } = self;
        drop(out);
        recover_from(&journal, &path)
    }

    /// What SIGKILL does to a recorder, for tests in this process: the buffered lines are lost
    /// and the journal is closed (its lock released) with only what was flushed.
    #[cfg(test)]
    pub(crate) fn kill(self) {
        let (file, _lost) = self.out.into_parts();
        drop(file);
    }

    fn frame_written(&mut self) -> Result<(), TrajectoryError> {
        self.unflushed += 1;
        if self.unflushed >= self.flush_every {
            self.flush()?;
        }
        Ok(())
    }

    /// One line goes to the buffer in one piece, so that a kill can cut only the journal's last
    /// line short, never one in the middle.
    fn write_line(&mut self, key: Option<&str>, value: &Value) -> Result<(), TrajectoryError> {
        self.line.clear();
        let result = match key {
            Some(key) => serde_json::to_writer(&mut self.line, &Tagged(key, Journaled(value))),
            None => serde_json::to_writer(&mut self.line, &Journaled(value)),
        };
        // Journaled values have no non-finite floats and string keys only: this cannot fail.
        result.map_err(|e| TrajectoryError::io(&self.journal)(io::Error::other(e)))?;
        self.line.push(b'\n');
        self.out
            .write_all(&self.line)
            .map_err(TrajectoryError::io(&self.journal))
    }
}

/// What a finish or recovery wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovery {
    pub path: PathBuf,
    pub robot: String,
    pub demos: usize,
    /// Totals over all demos.
    pub actions: usize,
    pub states: usize,
    /// The journal's last line was cut short (the recorder was killed mid-write) and was dropped.
    pub dropped_partial_line: bool,
}

/// What a recovery wrote, as both the command and the next recording report it.
impl std::fmt::Display for Recovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} demo(s), {} actions, {} states{}",
            self.demos,
            self.actions,
            self.states,
            if self.dropped_partial_line {
                "; a last line cut short by the kill was dropped"
            } else {
                ""
            }
        )
    }
}

/// Turns the journal left by a recorder of `path` that never finished into a complete `path`
/// (format by extension, written atomically), then removes the journal.
pub fn recover(path: impl AsRef<Path>) -> Result<Recovery, TrajectoryError> {
    let path = path.as_ref();
    Format::from_path(path)?;
    let journal = journal_path(path);
    if !journal.exists() {
        return Err(TrajectoryError::NoJournal { journal });
    }
    let _lock = lock_for_recovery(&journal)?;
    recover_from(&journal, path)
}

/// The suffix of a journal's file name after its target's: `run.pkl` -> `run.pkl.partial.jsonl`.
pub const JOURNAL_SUFFIX: &str = ".partial.jsonl";

/// The file a journal's recorder was writing: its name without [`JOURNAL_SUFFIX`]; `None` for a
/// name that does not end in it.
pub fn journal_target(journal: &Path) -> Option<PathBuf> {
    let name = journal.file_name()?.to_str()?;
    let target = name.strip_suffix(JOURNAL_SUFFIX)?;
    (!target.is_empty()).then(|| journal.with_file_name(target))
}

/// Turns `journal` into a complete trajectory file, `to` or else the file its recorder was
/// writing ([`journal_target`]; format by extension, written atomically), then removes the
/// journal. Refuses a journal whose recorder still runs.
pub fn recover_journal(journal: &Path, to: Option<&Path>) -> Result<Recovery, TrajectoryError> {
    let target = match to {
        Some(to) => to.to_owned(),
        None => journal_target(journal).ok_or_else(|| TrajectoryError::NotAJournal {
            path: journal.to_owned(),
        })?,
    };
    Format::from_path(&target)?;
    if !journal.exists() {
        return Err(TrajectoryError::NoJournal {
            journal: journal.to_owned(),
        });
    }
    let _lock = lock_for_recovery(journal)?;
    recover_from(journal, &target)
}

/// The journals in `dir` whose recorders are gone (killed, or crashed): `*.partial.jsonl` files
/// that no live recorder holds locked, by name.
pub fn leftover_journals(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if journal_target(&path).is_some() && path.is_file() && journal_in_use(&path) == Some(false)
        {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

/// Whether a live recorder holds `journal` (its lock); `None` where that cannot be told (the
/// journal cannot be opened, or its filesystem has no locks).
fn journal_in_use(journal: &Path) -> Option<bool> {
    let file = File::open(journal).ok()?;
    // The probe's own lock, if it gets one, goes with the file when it is closed here.
    match file.try_lock() {
        Ok(()) => Some(false),
        Err(fs::TryLockError::WouldBlock) => Some(true),
        Err(fs::TryLockError::Error(_)) => None,
    }
}

/// Takes `journal`'s lock for a recovery, held until the returned file is dropped, so that no
/// other recovery takes the same journal meanwhile; refuses a journal that a live recorder (or
/// another recovery) holds. `None`: the filesystem has no locks; the recovery goes on.
fn lock_for_recovery(journal: &Path) -> Result<Option<File>, TrajectoryError> {
    let file = File::open(journal).map_err(TrajectoryError::io(journal))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(fs::TryLockError::WouldBlock) => Err(TrajectoryError::JournalInUse {
            journal: journal.to_owned(),
        }),
        Err(fs::TryLockError::Error(_)) => Ok(None),
    }
}

fn recover_from(journal: &Path, path: &Path) -> Result<Recovery, TrajectoryError> {
    let (trajectories, dropped_partial_line) = read_journal(journal)?;
    format::save(&trajectories, path)?;
    fs::remove_file(journal).map_err(TrajectoryError::io(journal))?;
    format::sync_parent(path);
    let (robot, demos) = &trajectories.robots[0];
    Ok(Recovery {
        path: path.to_owned(),
        robot: robot.clone(),
        demos: demos.len(),
        actions: demos.iter().map(|d| d.actions.len()).sum(),
        states: demos.iter().map(|d| d.states.len()).sum(),
        dropped_partial_line,
    })
}

/// Reads a journal into trajectories (one robot) without touching any file, e.g. to save it
/// under another name or format. The bool says a cut-short last line was dropped.
pub fn read_journal(journal: impl AsRef<Path>) -> Result<(Trajectories, bool), TrajectoryError> {
    let journal = journal.as_ref();
    let bytes = fs::read(journal).map_err(TrajectoryError::io(journal))?;
    let bad = |line: usize, message: String| TrajectoryError::Journal {
        journal: journal.to_owned(),
        line,
        message,
    };
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    // After the last newline: empty if the journal ends cleanly, else a line cut short.
    let mut dropped = !lines.pop().unwrap_or_default().is_empty();
    let mut robot = None;
    let mut demos: Vec<Demo> = Vec::new();
    let last = lines.len();
    for (i, raw) in lines.into_iter().enumerate() {
        let n = i + 1;
        let parsed = serde_json::from_slice::<Value>(raw);
        // A power cut can leave a last line with a newline but garbage (zeros) before it; only
        // the last line gets that benefit of the doubt.
        let mut value = match parsed {
            Ok(v) => v,
            Err(_) if n == last && robot.is_some() => {
                dropped = true;
                break;
            }
            Err(e) => return Err(bad(n, format!("not JSON: {e}"))),
        };
        unjournal(&mut value);
        if n == 1 {
            if value.get(MAGIC).and_then(|v| {
                if let Value::Int(v) = v {
                    Some(*v)
                } else {
                    None
                }
            }) != Some(VERSION)
            {
                return Err(bad(
                    n,
                    format!("not a version {VERSION} armsim trajectory journal header"),
                ));
            }
            let name = value.get("robot").and_then(Value::as_str);
            robot = Some(
                name.ok_or_else(|| bad(n, "header has no robot name".into()))?
                    .to_owned(),
            );
            continue;
        }
        let Some([(key, body)]) = value.as_dict() else {
            return Err(bad(n, "expected an object with one key".into()));
        };
        let at = Loc::root();
        let at = at.key(key);
        let shape = |e: ShapeError| bad(n, e.to_string());
        if key == "init_state" {
            demos.push(Demo {
                init_state: state_from_value(body, &at).map_err(shape)?,
                ..Demo::default()
            });
            continue;
        }
        let Some(demo) = demos.last_mut() else {
            return Err(bad(n, format!("{key} before any init_state")));
        };
        match key.as_str() {
            "action" => demo
                .actions
                .push(action_from_value(body, &at).map_err(shape)?),
            "state" => demo
                .states
                .push(state_from_value(body, &at).map_err(shape)?),
            "extra" => demo.extra = Some(body.clone()),
            _ => return Err(bad(n, format!("unknown entry {key:?}"))),
        }
    }
    let robot = robot.ok_or_else(|| bad(1, "journal has no header".into()))?;
    if demos.is_empty() {
        return Err(bad(2, "journal has no init_state".into()));
    }
    Ok((
        Trajectories {
            robots: vec![(robot, demos)],
        },
        dropped,
    ))
}

/// `{key: value}` without building a dict.
struct Tagged<'a>(&'a str, Journaled<'a>);

impl Serialize for Tagged<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry(self.0, &self.1)?;
        m.end()
    }
}

/// A value as the journal writes it: non-finite floats tagged, everything else as JSON.
struct Journaled<'a>(&'a Value);

impl Serialize for Journaled<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Float(x) if !x.is_finite() => {
                let name = if x.is_nan() {
                    "NaN"
                } else if *x > 0.0 {
                    "Infinity"
                } else {
                    "-Infinity"
                };
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry(FLOAT_TAG, name)?;
                m.end()
            }
            Value::List(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Journaled(item))?;
                }
                seq.end()
            }
            Value::Dict(entries) => {
                let mut m = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    m.serialize_entry(k, &Journaled(v))?;
                }
                m.end()
            }
            other => other.serialize(s),
        }
    }
}

/// Undoes [`Journaled`]'s float tags in place.
fn unjournal(v: &mut Value) {
    match v {
        Value::Dict(entries) => {
            if let [(k, Value::Str(name))] = entries.as_slice()
                && k == FLOAT_TAG
                && let Some(x) = tagged_float(name)
            {
                *v = Value::Float(x);
                return;
            }
            for (_, item) in entries {
                unjournal(item);
            }
        }
        Value::List(items) => items.iter_mut().for_each(unjournal),
        _ => {}
    }
}

fn tagged_float(name: &str) -> Option<f64> {
    match name {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    }
}
