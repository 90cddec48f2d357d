//! Log output for the binary and the window: Bevy's log plugin, with colour only where a person
//! reads it (a terminal) and never when `NO_COLOR` is set, so logs piped or written to a file
//! carry no ANSI escapes.

use std::ffi::OsString;
use std::io::IsTerminal;

use bevy::log::{BoxedFmtLayer, LogPlugin, tracing_subscriber};
use bevy::prelude::*;

/// Bevy's log plugin (default filter plus [`QUIET_CRATES`]) writing to stderr, coloured only on
/// a terminal.
pub fn log_plugin() -> LogPlugin {
    LogPlugin {
        fmt_layer,
        filter: format!("{}{QUIET_CRATES}", bevy::log::DEFAULT_FILTER),
        ..default()
    }
}

/// The DDS crates (`--ros2`) log through `log` at info for every topic and at shutdown.
/// RustDDS warns at every datagram over 1500 bytes (a `/tf` of a big robot, every frame);
/// ros2-client warns at each start that `ROS_DISTRO` is unset (there is no ROS install) and
/// at each service request from a client without related-sample-identity (Cyclone's Python
/// API). Our own `ros2: ` lines say what matters. `RUST_LOG` still overrides this.
pub const QUIET_CRATES: &str = concat!(
    "rustdds=warn,rustdds::network::udp_sender=error,ros2_client=warn,",
    "ros2_client::distributions=error,ros2_client::service::wrappers=error"
);

/// Whether log lines get ANSI colours: only on a terminal, and not when `NO_COLOR` is set to
/// anything but the empty string (<https://no-color.org/>).
pub fn use_colour(terminal: bool, no_color: Option<OsString>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

fn fmt_layer(_app: &mut App) -> Option<BoxedFmtLayer> {
    let layer = tracing_subscriber::fmt::Layer::default().with_writer(std::io::stderr);
    let colour = use_colour(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR"),
    );
    // Only ever switched off: `with_ansi(true)` panics in debug builds when tracing-subscriber
    // lacks its `ansi` feature, and the default already colours where that feature is on.
    Some(if colour {
        Box::new(layer)
    } else {
        Box::new(layer.with_ansi(false))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(use_colour(true, None));
        assert!(use_colour(true, Some(OsString::new())), "empty NO_COLOR");
        assert!(!use_colour(true, Some(OsString::from("1"))));
        assert!(!use_colour(false, None), "a file or a pipe");
        assert!(!use_colour(false, Some(OsString::from("1"))));
    }

    #[test]
    fn the_filter_parses_with_the_dds_crates_quieted() {
        let filter = log_plugin().filter;
        assert!(filter.ends_with(QUIET_CRATES), "{filter}");
        tracing_subscriber::EnvFilter::try_new(&filter).expect("a valid filter");
    }
}
