//! Python pickle for plain data (dicts, lists, tuples, str, int, float, bool, None), both ways, so
//! that MetaSim's `.pkl` trajectories load and ours load in Python without numpy or torch.
//!
//! Reading takes what CPython's pickler writes for those types at protocols 2 to 5 (including
//! FRAME and every memo opcode). Anything that names a Python class (GLOBAL, STACK_GLOBAL,
//! REDUCE, ...) is refused with the opcode and its byte offset: such pickles need the class's
//! code to load, which is exactly what numpy arrays and torch tensors are.
//!
//! Writing emits protocol 4: CPython's own opcode choices, 64 KiB frames as CPython cuts them,
//! and every string memoized so that the joint and body names repeated in every frame cost two
//! bytes after their first use.
//!
//! Why hand-written rather than the `serde-pickle` crate (1.2.0, checked against its source):
//! - it writes protocol 2 or 3 only (`PickleProto::{V2, V3}`: no FRAME, MEMOIZE or
//!   SHORT_BINUNICODE), while MetaSim's Python writes and we promise protocol 4 as CPython cuts
//!   it, with every repeated joint and body name memoized;
//! - its reader resolves each memo reference by cloning the value, with no bound on the
//!   expanded size or the nesting depth, so a small hostile file (one list referenced many times,
//!   or deep nesting) exhausts memory or the stack; ours caps both ([`expansion_limit`],
//!   `MAX_DEPTH`) and checks declared lengths before allocating;
//! - its errors give a byte offset only for some evaluation errors (I/O and syntax errors carry
//!   none) and do not name the opcode, while every error here says which opcode at which byte;
//! - it resolves a few globals (`set`, `bytearray`, ...) and can be told to ignore unknown ones,
//!   where we refuse every object opcode by name so that a numpy/torch pickle says why it fails.
//!
//! `reader.rs` holds the reader (stack machine + budgeted tree builder), `writer.rs` the writer.

mod reader;
mod writer;

use std::collections::HashMap;
use std::io::{self, Write};

use thiserror::Error;

use super::value::Value;

use reader::*;
use writer::*;

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

/// Decodes one pickle that makes up the whole of `data`.
///
/// Memory stays proportional to `data.len()`: declared lengths are checked against the bytes
/// left before anything is allocated, and the values reachable through shared references (memo
/// gets) are capped at [`expansion_limit`] bytes.
pub fn from_bytes(data: &[u8]) -> Result<Value, PickleError> {
    Reader::new(data).run()
}

/// Encodes `value` as a protocol 4 pickle.
pub fn to_bytes(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = write(value, &mut out);
    out
}

/// Streams `value` as a protocol 4 pickle into `out`, holding at most one 64 KiB frame (plus the
/// largest single string) in memory.
pub fn write<W: Write>(value: &Value, out: W) -> io::Result<()> {
    let mut w = Writer {
        out,
        frame: Vec::with_capacity(FRAME_TARGET + 1024),
        memo: HashMap::new(),
    };
    w.out.write_all(&[PROTO, 4])?;
    w.value(value)?;
    w.frame.push(STOP);
    w.commit_frame()?;
    w.out.flush()
}

/// How many bytes of values a pickle of `input_len` bytes may expand to. Unshared data expands
/// a few times (a float: 9 bytes in, a 32-byte `Value` out; a memoized dict key: 2 bytes in, a
/// `String` out); the rest is room for legitimately shared lists.
pub fn expansion_limit(input_len: usize) -> usize {
    input_len.saturating_mul(64).saturating_add(64 << 20)
}

// Opcodes, as named in CPython's Lib/pickle.py.
const MARK: u8 = b'(';
const STOP: u8 = b'.';
const POP: u8 = b'0';
const POP_MARK: u8 = b'1';
const DUP: u8 = b'2';
const BININT: u8 = b'J';
const BININT1: u8 = b'K';
const BININT2: u8 = b'M';
const NONE: u8 = b'N';
const BINUNICODE: u8 = b'X';
const APPEND: u8 = b'a';
const DICT: u8 = b'd';
const EMPTY_DICT: u8 = b'}';
const APPENDS: u8 = b'e';
const BINGET: u8 = b'h';
const LONG_BINGET: u8 = b'j';
const LIST: u8 = b'l';
const EMPTY_LIST: u8 = b']';
const BINPUT: u8 = b'q';
const LONG_BINPUT: u8 = b'r';
const SETITEM: u8 = b's';
const TUPLE: u8 = b't';
const EMPTY_TUPLE: u8 = b')';
const SETITEMS: u8 = b'u';
const BINFLOAT: u8 = b'G';
const PROTO: u8 = 0x80;
const TUPLE1: u8 = 0x85;
const TUPLE2: u8 = 0x86;
const TUPLE3: u8 = 0x87;
const NEWTRUE: u8 = 0x88;
const NEWFALSE: u8 = 0x89;
const LONG1: u8 = 0x8a;
const LONG4: u8 = 0x8b;
const SHORT_BINUNICODE: u8 = 0x8c;
const BINUNICODE8: u8 = 0x8d;
const MEMOIZE: u8 = 0x94;
const FRAME: u8 = 0x95;

/// Every opcode CPython knows, for error messages; the bool says whether it builds an instance
/// of a named class (the numpy/torch case).
fn opcode_name(op: u8) -> Option<(&'static str, bool)> {
    Some(match op {
        b'(' => ("MARK", false),
        b'.' => ("STOP", false),
        b'0' => ("POP", false),
        b'1' => ("POP_MARK", false),
        b'2' => ("DUP", false),
        b'F' => ("FLOAT", false),
        b'I' => ("INT", false),
        b'J' => ("BININT", false),
        b'K' => ("BININT1", false),
        b'L' => ("LONG", false),
        b'M' => ("BININT2", false),
        b'N' => ("NONE", false),
        b'P' => ("PERSID", true),
        b'Q' => ("BINPERSID", true),
        b'R' => ("REDUCE", true),
        b'S' => ("STRING", false),
        b'T' => ("BINSTRING", false),
        b'U' => ("SHORT_BINSTRING", false),
        b'V' => ("UNICODE", false),
        b'X' => ("BINUNICODE", false),
        b'a' => ("APPEND", false),
        b'b' => ("BUILD", true),
        b'c' => ("GLOBAL", true),
        b'd' => ("DICT", false),
        b'}' => ("EMPTY_DICT", false),
        b'e' => ("APPENDS", false),
        b'g' => ("GET", false),
        b'h' => ("BINGET", false),
        b'i' => ("INST", true),
        b'j' => ("LONG_BINGET", false),
        b'l' => ("LIST", false),
        b']' => ("EMPTY_LIST", false),
        b'o' => ("OBJ", true),
        b'p' => ("PUT", false),
        b'q' => ("BINPUT", false),
        b'r' => ("LONG_BINPUT", false),
        b's' => ("SETITEM", false),
        b't' => ("TUPLE", false),
        b')' => ("EMPTY_TUPLE", false),
        b'u' => ("SETITEMS", false),
        b'G' => ("BINFLOAT", false),
        0x80 => ("PROTO", false),
        0x81 => ("NEWOBJ", true),
        0x82 => ("EXT1", true),
        0x83 => ("EXT2", true),
        0x84 => ("EXT4", true),
        0x85 => ("TUPLE1", false),
        0x86 => ("TUPLE2", false),
        0x87 => ("TUPLE3", false),
        0x88 => ("NEWTRUE", false),
        0x89 => ("NEWFALSE", false),
        0x8a => ("LONG1", false),
        0x8b => ("LONG4", false),
        b'B' => ("BINBYTES", false),
        b'C' => ("SHORT_BINBYTES", false),
        0x8c => ("SHORT_BINUNICODE", false),
        0x8d => ("BINUNICODE8", false),
        0x8e => ("BINBYTES8", false),
        0x8f => ("EMPTY_SET", false),
        0x90 => ("ADDITEMS", false),
        0x91 => ("FROZENSET", false),
        0x92 => ("NEWOBJ_EX", true),
        0x93 => ("STACK_GLOBAL", true),
        0x94 => ("MEMOIZE", false),
        0x95 => ("FRAME", false),
        0x96 => ("BYTEARRAY8", false),
        0x97 => ("NEXT_BUFFER", true),
        0x98 => ("READONLY_BUFFER", true),
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
