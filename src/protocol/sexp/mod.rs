//! Spec 001: length-prefixed S-expression agent and monitor ports. `sexp` and `framing` are the
//! sans-IO codec.
pub mod framing;
pub mod sexp;
