//! The binary lockstep protocol (docs/protocols/lockstep.md): 48-byte state frames out, 40-byte
//! velocity frames in.

pub mod codec;
