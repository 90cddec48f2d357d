//! Log output for the binary and the window: Bevy's log plugin, with colour only where a person
//! reads it (a terminal) and never when `NO_COLOR` is set, so logs piped or written to a file
//! carry no ANSI escapes.

use std::ffi::OsString;
use std::io::IsTerminal;

use bevy::log::{BoxedFmtLayer, LogPlugin, tracing_subscriber};
use bevy::prelude::*;

/// Bevy's log plugin (default filter) writing to stderr, coloured only on a terminal.
pub fn log_plugin() -> LogPlugin {
    LogPlugin {
        fmt_layer,
        ..default()
    }
}

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
}
