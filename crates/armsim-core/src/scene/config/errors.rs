//! The scene loader's errors: each problem with its JSON path, and the whole list. A leaf that
//! the walking helpers, the parser and the loader all report into.

/// One problem in a scene file, located by a JSON path such as `$.objects[2].pose.pos_m`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct SceneError {
    pub path: String,
    pub message: String,
}

/// Every problem found in a scene file, section by section, cross-field checks (robot, table) last.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", one_per_line(.0))]
pub struct SceneErrors(pub Vec<SceneError>);

fn one_per_line(errors: &[SceneError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

impl SceneErrors {
    /// One error at `path`.
    pub fn single(path: &str, message: impl Into<String>) -> Self {
        SceneErrors(vec![SceneError {
            path: path.to_owned(),
            message: message.into(),
        }])
    }

    /// The first error at exactly `path`, if any.
    pub fn at(&self, path: &str) -> Option<&SceneError> {
        self.0.iter().find(|e| e.path == path)
    }
}
