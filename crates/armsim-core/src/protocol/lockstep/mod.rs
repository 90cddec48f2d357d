//! Spec 003, the binary lockstep protocol: 48-byte state frames out, 40-byte velocity frames in.

pub mod codec;
