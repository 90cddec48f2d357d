//! Loading and saving MetaSim trajectory v2 files as `.json`, `.json.gz`, `.pkl` or `.pkl.gz`
//! chosen by file name, so recordings and replays work with MetaSim's own files. Here a file's
//! bytes become a value tree and back (written atomically); the typed shape [`load`] and
//! [`save`] go through is `demo.rs`.

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use thiserror::Error;

use super::demo::{ShapeError, Trajectories};
use super::loc::Loc;
use super::pickle::{self, PickleError};
use super::value::Value;

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
    #[error("{}: a recording journal already exists; recover it with `armsim trajectory recover {}` (or trajectory::recover_journal) or remove it", .journal.display(), .journal.display())]
    JournalExists { journal: PathBuf },
    #[error("{}: no recording journal to recover", .journal.display())]
    NoJournal { journal: PathBuf },
    #[error("{}: a running recorder is still writing this journal (it is finished when that recording stops), or another recovery holds it", .journal.display())]
    JournalInUse { journal: PathBuf },
    #[error("{}: not a recording journal (its name must end in .partial.jsonl)", .path.display())]
    NotAJournal { path: PathBuf },
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
