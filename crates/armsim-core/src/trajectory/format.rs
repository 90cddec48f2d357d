//! MetaSim trajectory v2 as typed Rust, and loading/saving it as `.json`, `.json.gz`, `.pkl` or
//! `.pkl.gz` chosen by file name, so recordings and replays work with MetaSim's own files.
//!
//! The shape (spec 002, DESIGN §6): `{robot: [{init_state, actions: [{dof_pos_target: {joint:
//! v}}], states: [{name: {pos, rot (w x y z), dof_pos: {joint: v}}}], extra?}]}`. `actions` and
//! `states` need not have the same length (MetaSim records states at a decimation). Keys this
//! module gives no type to are kept in `other` fields and written back, so a load/save cycle
//! does not lose what MetaSim or a later version adds.

use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use thiserror::Error;

use super::de::from_value_at;
use super::pickle::{self, PickleError};
use super::value::Value;

/// Joint name → value, in the order the file (or the recorder) gave them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JointValues(pub Vec<(String, f64)>);

impl JointValues {
    pub fn get(&self, joint: &str) -> Option<f64> {
        self.0
            .iter()
            .find(|(name, _)| name == joint)
            .map(|&(_, v)| v)
    }

    /// Sets `joint`, keeping its place if it is already present.
    pub fn set(&mut self, joint: &str, value: f64) {
        match self.0.iter_mut().find(|(name, _)| name == joint) {
            Some(entry) => entry.1 = value,
            None => self.0.push((joint.to_owned(), value)),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.0.iter().map(|(name, v)| (name.as_str(), *v))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The entries sorted by joint name: MetaSim's order for vector (tensor) actions.
    pub fn alphabetical(&self) -> Vec<(&str, f64)> {
        let mut out: Vec<_> = self.iter().collect();
        out.sort_by(|a, b| a.0.cmp(b.0));
        out
    }
}

impl<S: Into<String>> FromIterator<(S, f64)> for JointValues {
    fn from_iter<I: IntoIterator<Item = (S, f64)>>(iter: I) -> Self {
        JointValues(iter.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

/// One object's or robot's state in a frame. `rot` is a quaternion w first, as MetaSim writes it.
#[derive(Clone, Debug, PartialEq)]
pub struct BodyState {
    pub pos: [f64; 3],
    pub rot: [f64; 4],
    pub vel: Option<[f64; 3]>,
    pub ang_vel: Option<[f64; 3]>,
    pub dof_pos: Option<JointValues>,
    pub dof_vel: Option<JointValues>,
    /// Keys without a type here (e.g. `dof_pos_target`), written back unchanged.
    pub other: Vec<(String, Value)>,
}

impl BodyState {
    /// A body at `pos` with orientation `rot` (w x y z) and nothing else.
    pub fn new(pos: [f64; 3], rot: [f64; 4]) -> Self {
        BodyState {
            pos,
            rot,
            vel: None,
            ang_vel: None,
            dof_pos: None,
            dof_vel: None,
            other: Vec::new(),
        }
    }
}

/// Every body's state at one instant, by name in a stable order. `init_state` has this shape too.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StateFrame(pub Vec<(String, BodyState)>);

impl StateFrame {
    pub fn get(&self, name: &str) -> Option<&BodyState> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, b)| b)
    }

    /// Sets `name`'s state, keeping its place if it is already present.
    pub fn set(&mut self, name: &str, body: BodyState) {
        match self.0.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 = body,
            None => self.0.push((name.to_owned(), body)),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &BodyState)> {
        self.0.iter().map(|(n, b)| (n.as_str(), b))
    }
}

/// One control step's command: joint position targets (MetaSim's basic action).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActionFrame {
    pub dof_pos_target: JointValues,
    pub other: Vec<(String, Value)>,
}

impl ActionFrame {
    pub fn new(dof_pos_target: JointValues) -> Self {
        ActionFrame {
            dof_pos_target,
            other: Vec::new(),
        }
    }
}

/// One recorded episode of one robot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Demo {
    pub init_state: StateFrame,
    pub actions: Vec<ActionFrame>,
    pub states: Vec<StateFrame>,
    /// MetaSim's free-form `extra`, present iff the file had the key.
    pub extra: Option<Value>,
    pub other: Vec<(String, Value)>,
}

/// A whole trajectory file: demos grouped by robot name, in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trajectories {
    pub robots: Vec<(String, Vec<Demo>)>,
}

impl Trajectories {
    pub fn demos(&self, robot: &str) -> Option<&[Demo]> {
        self.robots
            .iter()
            .find(|(n, _)| n == robot)
            .map(|(_, d)| d.as_slice())
    }

    /// Appends `demo` to `robot`'s list, creating it at the end if it is new.
    pub fn push_demo(&mut self, robot: &str, demo: Demo) {
        match self.robots.iter_mut().find(|(n, _)| n == robot) {
            Some((_, demos)) => demos.push(demo),
            None => self.robots.push((robot.to_owned(), vec![demo])),
        }
    }

    /// The file's value tree. Typed keys come first in a fixed order, then `other` keys.
    pub fn to_value(&self) -> Value {
        Value::Dict(
            self.robots
                .iter()
                .map(|(robot, demos)| {
                    (
                        robot.clone(),
                        Value::List(demos.iter().map(demo_to_value).collect()),
                    )
                })
                .collect(),
        )
    }

    /// Reads the typed shape out of a file's value tree; an error names the path of the first
    /// problem.
    pub fn from_value(value: &Value) -> Result<Self, ShapeError> {
        from_value_at(value, &Loc::root())
    }
}

/// Why a value tree is not a v2 trajectory.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ShapeError {
    #[error("{robot} demo {demo}: {field} is required")]
    Missing {
        robot: String,
        demo: usize,
        field: &'static str,
    },
    /// `path` is JSONPath-like: `$.arm6[0].states[12].cube_red.rot`.
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

/// The file formats, chosen by file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    JsonGz,
    Pickle,
    PickleGz,
}

const SUPPORTED: &str = ".json, .json.gz, .pkl, .pkl.gz";

/// Gzip input is refused past this many decompressed bytes, so that a small crafted file cannot
/// exhaust memory.
pub const MAX_DECOMPRESSED_BYTES: u64 = 4 << 30;

impl Format {
    /// The format named by `path`'s extension (case-insensitive).
    pub fn from_path(path: &Path) -> Result<Format, TrajectoryError> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        // Longest suffixes first: ".json.gz" also ends in ".gz".
        [
            (".json.gz", Format::JsonGz),
            (".pkl.gz", Format::PickleGz),
            (".json", Format::Json),
            (".pkl", Format::Pickle),
        ]
        .into_iter()
        .find(|(ext, _)| name.len() > ext.len() && name.ends_with(ext))
        .map(|(_, f)| f)
        .ok_or_else(|| TrajectoryError::UnsupportedExtension {
            path: path.to_owned(),
        })
    }

    pub fn extension(self) -> &'static str {
        match self {
            Format::Json => ".json",
            Format::JsonGz => ".json.gz",
            Format::Pickle => ".pkl",
            Format::PickleGz => ".pkl.gz",
        }
    }

    fn gzip(self) -> bool {
        matches!(self, Format::JsonGz | Format::PickleGz)
    }

    /// Decodes a whole file's bytes.
    pub fn decode(self, bytes: &[u8]) -> Result<Value, CodecError> {
        let mut plain = Vec::new();
        let bytes = if self.gzip() {
            MultiGzDecoder::new(bytes)
                .take(MAX_DECOMPRESSED_BYTES + 1)
                .read_to_end(&mut plain)
                .map_err(CodecError::Gzip)?;
            if plain.len() as u64 > MAX_DECOMPRESSED_BYTES {
                return Err(CodecError::TooLarge {
                    limit: MAX_DECOMPRESSED_BYTES,
                });
            }
            &plain
        } else {
            bytes
        };
        match self {
            Format::Json | Format::JsonGz => {
                serde_json::from_slice(bytes).map_err(CodecError::Json)
            }
            Format::Pickle | Format::PickleGz => {
                pickle::from_bytes(bytes).map_err(CodecError::Pickle)
            }
        }
    }

    /// Encodes `value` into `out`. JSON cannot hold NaN or infinities; those are refused with
    /// the path of the first one rather than written as something else.
    pub fn encode(self, value: &Value, out: impl Write) -> Result<(), CodecError> {
        if matches!(self, Format::Json | Format::JsonGz)
            && let Some((path, x)) = first_non_finite(value, &Loc::root())
        {
            return Err(CodecError::NotJson { path, value: x });
        }
        if self.gzip() {
            // Level 1: about 5x faster than the default level for 10-15% larger files, which
            // suits saving at the end of a recording.
            let mut gz = GzEncoder::new(out, Compression::fast());
            self.encode_plain(value, &mut gz)?;
            gz.finish()
                .map_err(CodecError::Io)?
                .flush()
                .map_err(CodecError::Io)
        } else {
            self.encode_plain(value, out)
        }
    }

    fn encode_plain(self, value: &Value, out: impl Write) -> Result<(), CodecError> {
        match self {
            // serde_json writes token by token; a gzip encoder compresses on every write, so
            // the tokens are gathered first (the pickle writer already writes whole frames).
            Format::Json | Format::JsonGz => {
                let mut out = BufWriter::with_capacity(64 * 1024, out);
                serde_json::to_writer(&mut out, value).map_err(CodecError::Json)?;
                out.flush().map_err(CodecError::Io)
            }
            Format::Pickle | Format::PickleGz => pickle::write(value, out).map_err(CodecError::Io),
        }
    }
}

/// Why bytes did not decode, or a value did not encode, in a given format.
#[derive(Debug, Error)]
pub enum CodecError {
    #[error("invalid JSON: {0}")]
    Json(#[source] serde_json::Error),
    #[error(transparent)]
    Pickle(#[from] PickleError),
    #[error("invalid gzip data: {0}")]
    Gzip(#[source] io::Error),
    #[error("gzip data decompresses to more than {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("{path} is {value}, which JSON cannot hold; save as .pkl or .pkl.gz to keep it")]
    NotJson { path: String, value: f64 },
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Everything that can go wrong loading, saving or recording a trajectory file. Each variant
/// names the file.
#[derive(Debug, Error)]
pub enum TrajectoryError {
    #[error("{}: unsupported trajectory file name; expected one of {SUPPORTED}", .path.display())]
    UnsupportedExtension { path: PathBuf },
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: {source}", .path.display())]
    Codec {
        path: PathBuf,
        #[source]
        source: CodecError,
    },
    #[error("{}: {source}", .path.display())]
    Shape {
        path: PathBuf,
        #[source]
        source: ShapeError,
    },
    #[error("{}: a recording journal already exists; recover it with trajectory::recover or remove it", .journal.display())]
    JournalExists { journal: PathBuf },
    #[error("{}: no recording journal to recover", .journal.display())]
    NoJournal { journal: PathBuf },
    #[error("{}: line {line}: {message}", .journal.display())]
    Journal {
        journal: PathBuf,
        line: usize,
        message: String,
    },
}

impl TrajectoryError {
    pub(super) fn io(path: &Path) -> impl FnOnce(io::Error) -> TrajectoryError + '_ {
        move |source| TrajectoryError::Io {
            path: path.to_owned(),
            source,
        }
    }

    fn codec(path: &Path) -> impl FnOnce(CodecError) -> TrajectoryError + '_ {
        move |source| match source {
            CodecError::Io(source) => TrajectoryError::Io {
                path: path.to_owned(),
                source,
            },
            source => TrajectoryError::Codec {
                path: path.to_owned(),
                source,
            },
        }
    }
}

/// Loads a trajectory file in the format its name says.
pub fn load(path: impl AsRef<Path>) -> Result<Trajectories, TrajectoryError> {
    let path = path.as_ref();
    let value = read_value(path)?;
    Trajectories::from_value(&value).map_err(|source| TrajectoryError::Shape {
        path: path.to_owned(),
        source,
    })
}

/// Saves `trajectories` in the format `path`'s name says, atomically (see [`write_value`]).
pub fn save(trajectories: &Trajectories, path: impl AsRef<Path>) -> Result<(), TrajectoryError> {
    write_value(&trajectories.to_value(), path.as_ref())
}

/// Reads any supported file as an untyped value.
pub fn read_value(path: impl AsRef<Path>) -> Result<Value, TrajectoryError> {
    let path = path.as_ref();
    let format = Format::from_path(path)?;
    let bytes = fs::read(path).map_err(TrajectoryError::io(path))?;
    format.decode(&bytes).map_err(TrajectoryError::codec(path))
}

/// Writes `value` to `path` so that `path` only ever holds a complete file: the data goes to
/// `<path>.tmp`, is fsynced, then renamed over `path` (and the directory fsynced, so the rename
/// itself survives a power cut). A failure leaves any previous `path` untouched.
pub fn write_value(value: &Value, path: impl AsRef<Path>) -> Result<(), TrajectoryError> {
    let path = path.as_ref();
    let format = Format::from_path(path)?;
    let tmp = sibling(path, ".tmp");
    let result = (|| {
        let file = File::create(&tmp).map_err(TrajectoryError::io(&tmp))?;
        let mut out = BufWriter::new(file);
        format
            .encode(value, &mut out)
            .map_err(TrajectoryError::codec(path))?;
        let file = out
            .into_inner()
            .map_err(|e| TrajectoryError::io(&tmp)(e.into_error()))?;
        file.sync_all().map_err(TrajectoryError::io(&tmp))?;
        fs::rename(&tmp, path).map_err(TrajectoryError::io(path))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result?;
    sync_parent(path);
    Ok(())
}

/// `path` with `suffix` appended to its file name (`run.pkl` → `run.pkl.tmp`).
pub(super) fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// Makes a rename or create in `path`'s directory durable. Best effort: not every platform lets
/// a directory be opened, and the file's own data is already synced.
pub(super) fn sync_parent(path: &Path) {
    #[cfg(unix)]
    {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// A position in the value tree, kept as a chain of borrowed segments so that building one costs
/// nothing; it is rendered only when an error needs it.
pub(super) struct Loc<'a> {
    parent: Option<&'a Loc<'a>>,
    seg: Seg<'a>,
}

#[derive(Clone, Copy)]
enum Seg<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

impl<'a> Loc<'a> {
    pub(super) fn root() -> Loc<'static> {
        Loc {
            parent: None,
            seg: Seg::Root,
        }
    }

    pub(super) fn key<'b>(&'b self, key: &'b str) -> Loc<'b> {
        Loc {
            parent: Some(self),
            seg: Seg::Key(key),
        }
    }

    pub(super) fn index(&self, i: usize) -> Loc<'_> {
        Loc {
            parent: Some(self),
            seg: Seg::Index(i),
        }
    }

    pub(super) fn render(&self) -> String {
        let mut segs = Vec::new();
        let mut at = Some(self);
        while let Some(loc) = at {
            segs.push(loc.seg);
            at = loc.parent;
        }
        let mut out = String::new();
        for seg in segs.into_iter().rev() {
            match seg {
                Seg::Root => out.push('$'),
                Seg::Index(i) => {
                    let _ = write!(out, "[{i}]");
                }
                Seg::Key(k) => push_key(&mut out, k),
            }
        }
        out
    }

    pub(super) fn is_root(&self) -> bool {
        self.parent.is_none()
    }
}

/// Appends `.key`, or `["key"]` where the key is not a plain name.
pub(super) fn push_key(out: &mut String, k: &str) {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
    {
        out.push('.');
        out.push_str(k);
    } else {
        let _ = write!(out, "[{k:?}]");
    }
}

pub(super) fn state_from_value(v: &Value, at: &Loc) -> Result<StateFrame, ShapeError> {
    from_value_at(v, at)
}

pub(super) fn action_from_value(v: &Value, at: &Loc) -> Result<ActionFrame, ShapeError> {
    from_value_at(v, at)
}

fn floats(xs: &[f64]) -> Value {
    Value::List(xs.iter().map(|&x| Value::Float(x)).collect())
}

fn joints_to_value(j: &JointValues) -> Value {
    Value::Dict(
        j.0.iter()
            .map(|(k, v)| (k.clone(), Value::Float(*v)))
            .collect(),
    )
}

fn body_to_value(b: &BodyState) -> Value {
    let mut out = vec![
        ("pos".to_owned(), floats(&b.pos)),
        ("rot".to_owned(), floats(&b.rot)),
    ];
    if let Some(v) = &b.vel {
        out.push(("vel".to_owned(), floats(v)));
    }
    if let Some(v) = &b.ang_vel {
        out.push(("ang_vel".to_owned(), floats(v)));
    }
    if let Some(j) = &b.dof_pos {
        out.push(("dof_pos".to_owned(), joints_to_value(j)));
    }
    if let Some(j) = &b.dof_vel {
        out.push(("dof_vel".to_owned(), joints_to_value(j)));
    }
    out.extend(b.other.iter().cloned());
    Value::Dict(out)
}

pub(super) fn state_to_value(s: &StateFrame) -> Value {
    Value::Dict(
        s.0.iter()
            .map(|(n, b)| (n.clone(), body_to_value(b)))
            .collect(),
    )
}

pub(super) fn action_to_value(a: &ActionFrame) -> Value {
    let mut out = vec![(
        "dof_pos_target".to_owned(),
        joints_to_value(&a.dof_pos_target),
    )];
    out.extend(a.other.iter().cloned());
    Value::Dict(out)
}

fn demo_to_value(d: &Demo) -> Value {
    let mut out = vec![
        ("init_state".to_owned(), state_to_value(&d.init_state)),
        (
            "actions".to_owned(),
            Value::List(d.actions.iter().map(action_to_value).collect()),
        ),
        (
            "states".to_owned(),
            Value::List(d.states.iter().map(state_to_value).collect()),
        ),
    ];
    if let Some(extra) = &d.extra {
        out.push(("extra".to_owned(), extra.clone()));
    }
    out.extend(d.other.iter().cloned());
    Value::Dict(out)
}

fn first_non_finite(v: &Value, at: &Loc) -> Option<(String, f64)> {
    match v {
        Value::Float(x) if !x.is_finite() => Some((at.render(), *x)),
        Value::List(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| first_non_finite(item, &at.index(i))),
        Value::Dict(entries) => entries
            .iter()
            .find_map(|(k, item)| first_non_finite(item, &at.key(k))),
        _ => None,
    }
}
