//! The user's ROS 2 settings (`--ros2*` flags), validated once at start so that a bad domain
//! or namespace is a clear CLI error rather than a DDS failure later.

use std::fmt;

/// The default `--ros2-camera-hz`.
pub const DEFAULT_CAMERA_HZ: u32 = 10;

/// The highest `--ros2-camera-hz`: an image is up to a megabyte, and DDS over loopback carries
/// a few dozen per second before it competes with the physics for the CPU.
pub const MAX_CAMERA_HZ: u32 = 30;

/// Highest DDS domain id whose RTPS ports fit in 16 bits with the standard port mapping
/// (7400 + 250·domain + …), as ROS 2 documents.
pub const MAX_DOMAIN: u16 = 232;

/// Where discovery may reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Discovery {
    /// Advertise and send only on 127.0.0.1 (the default): peers on this host only.
    #[default]
    Local,
    /// Every interface: reachable from the subnet, without authentication (loud log line).
    Subnet,
}

impl fmt::Display for Discovery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Discovery::Local => "local",
            Discovery::Subnet => "subnet",
        })
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OptionsError {
    #[error("ROS_DOMAIN_ID={0:?} is not a domain id (0..={MAX_DOMAIN})")]
    BadDomainEnv(String),
    #[error("domain {0} is out of range (0..={MAX_DOMAIN})")]
    DomainRange(u32),
    #[error(
        "namespace {0:?} is not a ROS 2 namespace: use letters, digits and '_', \
         segments separated by '/', not starting with a digit"
    )]
    BadNamespace(String),
    #[error("rate {0} Hz is out of range (1..=240, the physics rate)")]
    BadRate(u32),
    #[error("camera rate {0} Hz is out of range (1..={MAX_CAMERA_HZ})")]
    BadCameraRate(u32),
    #[error("camera {0:?} cannot be a ROS 2 topic name segment (letters, digits, '_')")]
    BadCameraName(String),
}

/// Everything the DDS thread and the bridge need to know about the user's choice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ros2Options {
    pub domain: u16,
    /// `""` (the root namespace) or `/a/b`: normalised, no trailing slash.
    pub namespace: String,
    pub discovery: Discovery,
    /// `/clock`, `joint_states` and `/tf` per second of sim time.
    pub rate_hz: u32,
    /// `--ros2-cameras`: scene cameras published as `<camera>/image_raw` + `camera_info`.
    pub cameras: Vec<String>,
    /// `--ros2-camera-hz`: images per second of sim time per camera, at most `MAX_CAMERA_HZ`.
    pub camera_hz: u32,
}

impl Default for Ros2Options {
    fn default() -> Self {
        Self {
            domain: 0,
            namespace: String::new(),
            discovery: Discovery::Local,
            rate_hz: 100,
            cameras: Vec::new(),
            camera_hz: DEFAULT_CAMERA_HZ,
        }
    }
}

impl Ros2Options {
    /// `--ros2-domain` if given, else `$ROS_DOMAIN_ID` (as every ROS 2 tool reads it), else 0.
    pub fn domain(flag: Option<u32>, env: Option<&str>) -> Result<u16, OptionsError> {
        let domain = match (flag, env.map(str::trim).filter(|s| !s.is_empty())) {
            (Some(d), _) => d,
            (None, Some(text)) => text
                .parse::<u32>()
                .map_err(|_| OptionsError::BadDomainEnv(text.to_string()))?,
            (None, None) => 0,
        };
        u16::try_from(domain)
            .ok()
            .filter(|d| *d <= MAX_DOMAIN)
            .ok_or(OptionsError::DomainRange(domain))
    }

    /// `ns`, `/ns`, `/a/b/` → `/ns`, `/a/b`; `""` and `/` → `""` (root).
    pub fn namespace(text: &str) -> Result<String, OptionsError> {
        let bad = || OptionsError::BadNamespace(text.to_string());
        let trimmed = text.trim_matches('/');
        if trimmed.is_empty() {
            return Ok(String::new());
        }
        for segment in trimmed.split('/') {
            let mut chars = segment.chars();
            let first = chars.next().ok_or_else(bad)?;
            if !(first.is_ascii_alphabetic() || first == '_')
                || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
                || segment.contains("__")
            {
                return Err(bad());
            }
        }
        Ok(format!("/{trimmed}"))
    }

    pub fn rate(hz: u32) -> Result<u32, OptionsError> {
        if (1..=240).contains(&hz) {
            Ok(hz)
        } else {
            Err(OptionsError::BadRate(hz))
        }
    }
}

impl Ros2Options {
    pub fn camera_rate(hz: u32) -> Result<u32, OptionsError> {
        if (1..=MAX_CAMERA_HZ).contains(&hz) {
            Ok(hz)
        } else {
            Err(OptionsError::BadCameraRate(hz))
        }
    }

    /// A camera name becomes `<camera>/image_raw`: it must be one ROS name segment.
    pub fn camera_name(name: &str) -> Result<String, OptionsError> {
        let mut chars = name.chars();
        let ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if ok {
            Ok(name.to_string())
        } else {
            Err(OptionsError::BadCameraName(name.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_prefers_the_flag_then_the_environment() {
        assert_eq!(Ros2Options::domain(Some(7), Some("3")), Ok(7));
        assert_eq!(Ros2Options::domain(None, Some(" 3 ")), Ok(3));
        assert_eq!(Ros2Options::domain(None, Some("")), Ok(0));
        assert_eq!(Ros2Options::domain(None, None), Ok(0));
        assert_eq!(
            Ros2Options::domain(None, Some("x")),
            Err(OptionsError::BadDomainEnv("x".into()))
        );
        assert_eq!(
            Ros2Options::domain(Some(233), None),
            Err(OptionsError::DomainRange(233))
        );
    }

    #[test]
    fn namespaces_are_normalised_or_refused() {
        assert_eq!(Ros2Options::namespace("").unwrap(), "");
        assert_eq!(Ros2Options::namespace("/").unwrap(), "");
        assert_eq!(Ros2Options::namespace("arm").unwrap(), "/arm");
        assert_eq!(Ros2Options::namespace("/lab/arm_2/").unwrap(), "/lab/arm_2");
        for bad in ["2arm", "a b", "a//b", "a-b", "a__b"] {
            assert!(Ros2Options::namespace(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn camera_flags_are_checked() {
        assert_eq!(Ros2Options::camera_rate(30), Ok(30));
        assert!(Ros2Options::camera_rate(31).is_err());
        assert!(Ros2Options::camera_rate(0).is_err());
        assert_eq!(Ros2Options::camera_name("front").unwrap(), "front");
        assert!(Ros2Options::camera_name("front cam").is_err());
        assert!(Ros2Options::camera_name("").is_err());
    }

    #[test]
    fn rates_stay_within_the_physics_rate() {
        assert_eq!(Ros2Options::rate(100), Ok(100));
        assert!(Ros2Options::rate(0).is_err());
        assert!(Ros2Options::rate(241).is_err());
    }
}
