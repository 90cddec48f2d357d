//! The MJCF parser's state ([`Parser`]) and one element read with its class defaults ([`El`]):
//! what every part of the loader (`mod.rs`, `body.rs`, `actuators.rs`) works on.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use glam::Vec3;
use roxmltree::{Document, Node};

use crate::camera::spec::CameraSpec;
use crate::robot::error::RobotError;
use crate::robot::mesh::{LoadOptions, MeshTable};
use crate::robot::model::{Joint, Link, Site, TendonServo};

/// Default attribute values of one class: element tag → attribute → value.
#[derive(Clone, Default, Debug)]
pub(super) struct Defaults(pub(super) HashMap<String, HashMap<String, String>>);

pub(super) struct Parser<'a, 'input> {
    pub(super) doc: &'a Document<'input>,
    pub(super) degrees: bool,
    pub(super) eulerseq: [u8; 3],
    pub(super) autolimits: bool,
    pub(super) classes: HashMap<String, Defaults>,
    pub(super) materials: HashMap<String, [f32; 4]>,
    pub(super) links: Vec<Link>,
    pub(super) joints: Vec<Joint>,
    /// Per joint, what MJCF says that the model does not keep.
    pub(super) extra: Vec<JointExtra>,
    pub(super) unnamed: usize,
    /// The model file's folder; `None` when parsing text that has no file.
    pub(super) dir: Option<PathBuf>,
    /// `<compiler meshdir>` (or `assetdir`), relative to `dir` unless absolute.
    pub(super) meshdir: Option<PathBuf>,
    pub(super) options: &'a LoadOptions,
    /// `<asset><mesh>` name → (file as written, per-axis scale).
    pub(super) mesh_files: HashMap<String, (String, Vec3)>,
    /// `<asset><mesh>` name → its `maxhullvert` (own or default), where it caps the hull.
    pub(super) hull_caps: HashMap<String, usize>,
    pub(super) meshes: MeshTable,
    pub(super) sites: Vec<Site>,
    pub(super) cameras: Vec<CameraSpec>,
    /// `<tendon><fixed>` name → its joints and coefficients.
    pub(super) tendons: HashMap<String, Vec<(usize, f32)>>,
    /// Position actuators on tendons, as the file defines them.
    pub(super) tendon_servos: Vec<TendonServo>,
    /// Per joint equality, its follower, `solref` (time constant, damping ratio) and `solimp`'s
    /// dmin, for the coupling built once the model's inertia is known.
    pub(super) couplings: Vec<(usize, [f32; 3])>,
    /// Elements read and not simulated, listed once in the model's notes.
    pub(super) ignored: BTreeSet<String>,
    pub(super) notes: Vec<String>,
    /// `<contact><exclude>` link pairs.
    pub(super) excludes: Vec<(usize, usize)>,
}

/// One element with its class defaults resolved.
pub(super) struct El<'a, 'input> {
    pub(super) node: Node<'a, 'input>,
    pub(super) defaults: HashMap<String, String>,
    pub(super) line: u32,
}

impl<'a, 'input> El<'a, 'input> {
    pub(super) fn tag(&self) -> &str {
        self.node.tag_name().name()
    }

    pub(super) fn own(&self, name: &str) -> Option<&'a str> {
        self.node.attribute(name)
    }

    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.node
            .attribute(name)
            .or_else(|| self.defaults.get(name).map(String::as_str))
    }

    pub(super) fn invalid(
        &self,
        attribute: &str,
        value: &str,
        reason: impl Into<String>,
    ) -> RobotError {
        RobotError::InvalidValue {
            element: self.tag().to_string(),
            attribute: attribute.to_string(),
            value: value.to_string(),
            reason: reason.into(),
            line: Some(self.line),
        }
    }

    pub(super) fn missing(&self, attribute: &str) -> RobotError {
        RobotError::MissingAttribute {
            element: self.tag().to_string(),
            attribute: attribute.to_string(),
            line: Some(self.line),
        }
    }

    pub(super) fn unsupported(&self, what: impl Into<String>) -> RobotError {
        RobotError::Unsupported {
            what: what.into(),
            line: Some(self.line),
        }
    }

    pub(super) fn parse_floats(&self, name: &str, value: &str) -> Result<Vec<f32>, RobotError> {
        value
            .split_whitespace()
            .map(|s| match s.parse::<f32>() {
                Ok(v) if v.is_finite() => Ok(v),
                _ => Err(self.invalid(name, value, format!("`{s}` is not a finite number"))),
            })
            .collect()
    }

    /// Between `min` and `max` numbers from the attribute (own or default).
    pub(super) fn floats(
        &self,
        name: &str,
        min: usize,
        max: usize,
    ) -> Result<Option<Vec<f32>>, RobotError> {
        self.floats_from(name, self.get(name), min, max)
    }

    pub(super) fn own_floats(
        &self,
        name: &str,
        min: usize,
        max: usize,
    ) -> Result<Option<Vec<f32>>, RobotError> {
        self.floats_from(name, self.own(name), min, max)
    }

    pub(super) fn floats_from(
        &self,
        name: &str,
        value: Option<&str>,
        min: usize,
        max: usize,
    ) -> Result<Option<Vec<f32>>, RobotError> {
        let Some(value) = value else { return Ok(None) };
        let v = self.parse_floats(name, value)?;
        if v.len() < min || v.len() > max {
            let want = if min == max {
                format!("expected {min} numbers")
            } else {
                format!("expected {min} to {max} numbers")
            };
            return Err(self.invalid(name, value, want));
        }
        Ok(Some(v))
    }

    pub(super) fn f32(&self, name: &str) -> Result<Option<f32>, RobotError> {
        Ok(self.floats(name, 1, 1)?.map(|v| v[0]))
    }

    pub(super) fn vec3(&self, name: &str) -> Result<Option<Vec3>, RobotError> {
        Ok(self.floats(name, 3, 3)?.map(|v| Vec3::from_slice(&v)))
    }

    pub(super) fn own_vec3(&self, name: &str) -> Result<Option<Vec3>, RobotError> {
        Ok(self.own_floats(name, 3, 3)?.map(|v| Vec3::from_slice(&v)))
    }

    pub(super) fn pair(&self, name: &str) -> Result<Option<(f32, f32)>, RobotError> {
        Ok(self.floats(name, 2, 2)?.map(|v| (v[0], v[1])))
    }

    /// `true`, `false` or `auto` (→ `None`).
    pub(super) fn tristate(&self, name: &str) -> Result<Option<bool>, RobotError> {
        match self.get(name) {
            None | Some("auto") => Ok(None),
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            Some(v) => Err(self.invalid(name, v, "expected true, false or auto")),
        }
    }
}

/// What MJCF says about a joint that the model does not keep.
pub(super) struct JointExtra {
    /// `actuatorfrcrange` was given.
    pub(super) explicit_effort: bool,
}
