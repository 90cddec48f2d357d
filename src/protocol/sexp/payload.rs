//! What one frame of a port holds: the payload of a message built from expressions, the
//! `(error …)` answer, the parsing of a received frame under the node budget, and what a
//! connection did ([`ConnEvent`]: opened, sent a message, closed). Shared by the reader
//! threads, the simulation reading a sync agent itself, the ports' ECS bridges and the agents'
//! machine.

use super::writer::Outbox;
use super::{ParseErrorKind, Sexp, parse_all};

/// Builds the payload of one message from top-level expressions.
pub fn payload(exprs: &[Sexp]) -> Vec<u8> {
    let mut out = Vec::new();
    super::write_all(exprs, &mut out);
    out
}

/// `(error <reason>)` as a frame payload.
pub fn error_payload(reason: &str) -> Vec<u8> {
    payload(&[Sexp::list([Sexp::atom("error"), Sexp::atom(reason)])])
}

/// Lists and atoms one frame may hold. An rcssserver-mj agent's busiest message (every joint's
/// effector) holds a few hundred; the bound keeps one 1 MiB frame of `(x)(x)…` from costing
/// hundreds of MiB and seconds of work.
pub const MAX_NODES_PER_FRAME: usize = 16 * 1024;

/// One frame's well-formed expressions. Problems are answered with one `(error …)` per frame:
/// malformed expressions are skipped and counted; a frame over [`MAX_NODES_PER_FRAME`] is
/// ignored whole (it still counts as the client's message for sync mode).
pub(super) fn parse_frame(frame: &[u8], out: &Outbox) -> Vec<Sexp> {
    let mut exprs = Vec::new();
    let mut malformed = 0usize;
    let mut first_error = None;
    for parsed in parse_all(frame).with_max_nodes(MAX_NODES_PER_FRAME) {
        match parsed {
            Ok(e) => exprs.push(e),
            Err(e) if e.kind == ParseErrorKind::TooManyNodes => {
                let reason = format!(
                    "message ignored: it holds more than {MAX_NODES_PER_FRAME} lists and atoms"
                );
                out.send(&error_payload(&reason));
                return Vec::new();
            }
            Err(e) => {
                malformed += 1;
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        let reason = match malformed {
            1 => format!("malformed expression skipped: {e}"),
            n => format!("{n} malformed expressions skipped; the first: {e}"),
        };
        out.send(&error_payload(&reason));
    }
    exprs
}
