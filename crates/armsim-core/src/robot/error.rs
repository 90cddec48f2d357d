//! [`RobotError`]: everything that can go wrong turning a robot file into a model, as the mesh
//! reader, both loaders and the model's validation report it.

use std::fmt;
use std::path::PathBuf;

/// Everything that can go wrong turning a robot file into a [`RobotModel`].
#[derive(Debug, thiserror::Error)]
pub enum RobotError {
    #[error("cannot read robot file `{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("unsupported robot file `{}`: the extension must be .urdf, .xml or .mjcf", path.display())]
    UnknownFormat { path: PathBuf },
    #[error("XML syntax error at line {line}, column {column}: {message}")]
    Xml {
        line: u32,
        column: u32,
        message: String,
    },
    /// A structural URDF error reported by urdf-rs (missing element, bad number); it gives no line.
    #[error("malformed URDF: {0}")]
    Urdf(String),
    #[error("expected a <{expected}> root element, found <{found}>")]
    WrongRoot {
        expected: &'static str,
        found: String,
    },
    #[error("{}missing required attribute `{attribute}` on <{element}>", At(*.line))]
    MissingAttribute {
        element: String,
        attribute: String,
        line: Option<u32>,
    },
    #[error("{}invalid value `{value}` for `{attribute}` on <{element}>: {reason}", At(*.line))]
    InvalidValue {
        element: String,
        attribute: String,
        value: String,
        reason: String,
        line: Option<u32>,
    },
    #[error("{}unsupported {what}", At(*.line))]
    Unsupported { what: String, line: Option<u32> },
    #[error("joint `{joint}`: lower limit {lower} is greater than upper limit {upper}")]
    InvalidLimits {
        joint: String,
        lower: f32,
        upper: f32,
    },
    #[error("{referrer} references unknown joint `{joint}`")]
    UnknownJoint { joint: String, referrer: String },
    #[error("{referrer} references unknown {kind} `{name}`")]
    UnknownReference {
        kind: &'static str,
        name: String,
        referrer: String,
    },
    #[error("the robot has no links")]
    NoLinks,
    #[error("duplicate {kind} name `{name}`")]
    DuplicateName { kind: &'static str, name: String },
    #[error("invalid kinematic tree: {0}")]
    InvalidTree(String),
    #[error("invalid mimic of joint `{joint}`: {reason}")]
    InvalidMimic { joint: String, reason: String },
    #[error("cannot read mesh `{}`: {message}", path.display())]
    Mesh { path: PathBuf, message: String },
    #[error("mesh `{uri}` not found{hint}; tried: {}", tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    MeshNotFound {
        uri: String,
        tried: Vec<PathBuf>,
        hint: String,
    },
    /// A semantically wrong number that passed parsing: negative mass, zero axis, NaN...
    #[error("{context}: {reason}")]
    Invalid { context: String, reason: String },
}

/// Renders an optional line number as a message prefix.
struct At(Option<u32>);

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(line) => write!(f, "line {line}: "),
            None => Ok(()),
        }
    }
}

/// A semantically wrong number: [`RobotError::Invalid`] with its context.
pub(crate) fn invalid(context: impl Into<String>, reason: impl Into<String>) -> RobotError {
    RobotError::Invalid {
        context: context.into(),
        reason: reason.into(),
    }
}
