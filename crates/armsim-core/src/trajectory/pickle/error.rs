//! The pickle reader's error: which opcode at which byte, so that a numpy/torch pickle or a
//! damaged file says why it does not load.

use thiserror::Error;

/// Why a byte string is not a pickle this module can load. Offsets count bytes from the start
/// of the (decompressed) pickle.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PickleError {
    #[error(
        "pickle opcode {name} at byte {offset} is not supported (numpy/torch objects cannot be loaded; save plain lists)"
    )]
    ObjectOpcode { name: &'static str, offset: usize },
    #[error(
        "pickle opcode {name} at byte {offset} is not supported (only dicts, lists, tuples, str, int, float, bool and None load; pickle with protocol 2 or newer)"
    )]
    UnsupportedOpcode { name: &'static str, offset: usize },
    #[error("unknown pickle opcode 0x{byte:02x} at byte {offset}")]
    UnknownOpcode { byte: u8, offset: usize },
    #[error("pickle protocol {version} at byte {offset} is not supported (2 to 5 are)")]
    UnsupportedProtocol { version: u8, offset: usize },
    #[error(
        "pickle data ends inside {name} at byte {offset}: it needs {needed} more bytes, {available} are left"
    )]
    Truncated {
        name: &'static str,
        offset: usize,
        needed: u64,
        available: usize,
    },
    #[error("pickle data ends without a STOP opcode")]
    MissingStop,
    #[error("pickle opcode {name} at byte {offset}: {reason}")]
    Malformed {
        name: &'static str,
        offset: usize,
        reason: String,
    },
    #[error("{count} bytes of unexpected data after the pickle's STOP at byte {offset}")]
    TrailingData { offset: usize, count: usize },
    #[error("pickle expands to more than {limit} bytes of values through shared references")]
    TooLarge { limit: usize },
    #[error("pickle contains a container that contains itself")]
    Cycle,
    #[error("pickle nests containers deeper than {limit} levels")]
    TooDeep { limit: usize },
}
