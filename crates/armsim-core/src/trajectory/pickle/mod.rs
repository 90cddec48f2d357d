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
//! `reader.rs` holds the reader (stack machine + budgeted tree builder), `writer.rs` the writer;
//! both build on `opcodes.rs` (the opcode bytes and names) and `error.rs` ([`PickleError`]).

mod error;
mod opcodes;
mod reader;
mod writer;

pub use error::PickleError;
pub use reader::{expansion_limit, from_bytes};
pub use writer::{to_bytes, write};

#[cfg(test)]
mod tests;
