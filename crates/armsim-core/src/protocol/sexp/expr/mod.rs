//! S-expressions for RCSSServerMJ's agent and monitor ports: the value type, a tolerant sans-IO
//! parser and the canonical printer, so the protocol codecs work on trees and one bad
//! expression from a client costs that expression only, not the whole message. The value type
//! and the printer are here, the parser in `parser.rs`.
//!
//! Grammar (rcssserver-mj flavour): a message payload is zero or more top-level lists with any
//! ASCII whitespace between them, including none (`(a)(b)`). Inside a list, elements are lists
//! or atoms. A bare atom is a run of bytes other than ASCII whitespace, `(`, `)` and `"`; a
//! quoted atom is `"…"` with the escapes `\"` `\\` `\n` `\t` `\r`. Atoms must be UTF-8.
//!
//! Decisions:
//! - A top-level atom (or a stray `)`) is an error ("expected '('"): rcssserver only ever sends
//!   lists, so anything else there is garbage. The parser skips the whole run of garbage up to
//!   the next top-level `(` and reports it once.
//! - After an error inside a list the parser skips to the end of that top-level expression
//!   (bracket counting, quotes respected) and carries on, so later good expressions still come
//!   through; nested lists of a broken expression never surface as top-level ones.
//! - Nesting is limited ([`MAX_DEPTH`] by default) and the parser uses an explicit stack, so
//!   hostile input yields an error, never a stack overflow.
//! - A payload may hold at most so many nodes (lists and atoms, [`Parser::with_max_nodes`]):
//!   past the budget the parser reports [`ParseErrorKind::TooManyNodes`] once and stops, so the
//!   memory one frame can cost is bounded however its bytes are arranged.
//! - Numbers print in the shortest form that reads back to the same value, without exponent for
//!   magnitudes in [1e-6, 1e15) (`12.5`, `-0.001`, `3`) and with one outside it (`1e20`);
//!   `-0` prints as `0`. NaN and ±inf cannot be turned into atoms: the number constructors are
//!   fallible ([`TryFrom<f64>`], [`Sexp::fixed`]) so a non-finite value reaching the wire is
//!   the caller's explicit decision, never a silent `NaN` token. Likewise the number accessors
//!   ([`Sexp::as_f64`], …) reject `nan`/`inf` atoms from clients.

mod parser;

use std::fmt;
use std::str::FromStr;

pub use parser::{Parser, parse_all};

/// Default nesting limit of the parser. rcssserver messages nest 3–4 deep; 64 leaves room for
/// any honest client while bounding the work a hostile one can cause.
pub const MAX_DEPTH: usize = 64;

/// Magnitudes printed without exponent: `[PLAIN_MIN, PLAIN_MAX)`. Outside it the plain form
/// grows to hundreds of digits (`1e300`), which is neither compact nor readable.
const PLAIN_MIN: f64 = 1e-6;
const PLAIN_MAX: f64 = 1e15;

/// One S-expression: an atom or a list of expressions.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Sexp {
    Atom(String),
    List(Vec<Sexp>),
}

/// Why a top-level expression could not be parsed; `pos` is a byte offset into the payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at byte {pos}")]
pub struct ParseError {
    pub pos: usize,
    pub kind: ParseErrorKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    /// A top-level atom; `pos` is where the skipped garbage starts.
    #[error("expected '('")]
    ExpectedOpen,
    /// A top-level `)` with no list open.
    #[error("unexpected ')'")]
    UnexpectedClose,
    /// The input ended inside a list; `pos` is the innermost `(` that was never closed.
    #[error("unclosed '('")]
    Unclosed,
    /// The input ended inside a quoted atom; `pos` is its opening quote.
    #[error("unterminated string")]
    UnterminatedString,
    /// `pos` is the backslash.
    #[error("unknown escape (allowed: \\\" \\\\ \\n \\t \\r)")]
    BadEscape,
    /// `pos` is the first byte that is not valid UTF-8.
    #[error("invalid UTF-8")]
    InvalidUtf8,
    /// `pos` is the `(` that went one level too deep.
    #[error("lists nested too deeply")]
    TooDeep,
    /// The payload holds more nodes than the parser's budget; the rest of it is not read.
    #[error("too many expressions in one message")]
    TooManyNodes,
    /// Only from [`Sexp::from_str`]: the text holds no expression.
    #[error("no expression")]
    Empty,
    /// Only from [`Sexp::from_str`]: more input follows the first expression.
    #[error("trailing input after the expression")]
    Trailing,
}

/// Why an atom could not be read as a number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("expected an atom, found a list")]
    NotAtom,
    #[error("{text:?} is not a valid {expected}")]
    Invalid {
        text: String,
        expected: &'static str,
    },
    #[error("{text:?} is not a finite number")]
    NonFinite { text: String },
}

/// A NaN or infinite value was offered as an atom; see the module docs for why that is refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("cannot print non-finite number {0}")]
pub struct NonFiniteNumber(pub f64);

impl Sexp {
    pub fn atom(text: impl Into<String>) -> Self {
        Sexp::Atom(text.into())
    }

    pub fn list(items: impl IntoIterator<Item = Sexp>) -> Self {
        Sexp::List(items.into_iter().collect())
    }

    /// A number with exactly `decimals` digits after the point, as rcssserver prints time
    /// stamps (`(now 1.20)`). `-0.00` is printed as `0.00` so a tiny negative value does not
    /// show a sign the reader cannot see a reason for.
    pub fn fixed(value: f64, decimals: usize) -> Result<Self, NonFiniteNumber> {
        if !value.is_finite() {
            return Err(NonFiniteNumber(value));
        }
        let text = format!("{value:.decimals$}");
        let is_zero = text.bytes().all(|b| matches!(b, b'-' | b'0' | b'.'));
        Ok(match text.strip_prefix('-') {
            Some(unsigned) if is_zero => Sexp::Atom(unsigned.to_owned()),
            _ => Sexp::Atom(text),
        })
    }

    pub fn as_atom(&self) -> Option<&str> {
        match self {
            Sexp::Atom(text) => Some(text),
            Sexp::List(_) => None,
        }
    }

    pub fn as_list(&self) -> Option<&[Sexp]> {
        match self {
            Sexp::Atom(_) => None,
            Sexp::List(items) => Some(items),
        }
    }

    /// The first element of a list when it is an atom: the "name" of `(HJ (n j1) …)`.
    pub fn head(&self) -> Option<&str> {
        self.as_list()?.first()?.as_atom()
    }

    /// Whether this is a list named `name`.
    pub fn is(&self, name: &str) -> bool {
        self.head() == Some(name)
    }

    /// The elements after the head; empty for atoms and empty lists.
    pub fn args(&self) -> &[Sexp] {
        self.as_list()
            .and_then(|items| items.get(1..))
            .unwrap_or(&[])
    }

    /// The `index`-th element after the head.
    pub fn arg(&self, index: usize) -> Option<&Sexp> {
        self.args().get(index)
    }

    /// The first element that is a list named `name`: `find("p")` on `(pos (n ee)(p 1 2 3))`
    /// gives `(p 1 2 3)`. Only direct children are searched.
    pub fn find(&self, name: &str) -> Option<&Sexp> {
        self.find_all(name).next()
    }

    /// Every direct child that is a list named `name`, in order.
    pub fn find_all<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a Sexp> {
        self.as_list()
            .unwrap_or(&[])
            .iter()
            .filter(move |child| child.is(name))
    }

    /// The atom as a finite `f64`.
    pub fn as_f64(&self) -> Result<f64, ValueError> {
        let value: f64 = self.parse_atom("number")?;
        finite(value.is_finite(), value, self)
    }

    /// The atom as a finite `f32`; values beyond `f32`'s range are rejected as non-finite.
    pub fn as_f32(&self) -> Result<f32, ValueError> {
        let value: f32 = self.parse_atom("number")?;
        finite(value.is_finite(), value, self)
    }

    pub fn as_i64(&self) -> Result<i64, ValueError> {
        self.parse_atom("integer")
    }

    pub fn as_u64(&self) -> Result<u64, ValueError> {
        self.parse_atom("unsigned integer")
    }

    fn parse_atom<T: FromStr>(&self, expected: &'static str) -> Result<T, ValueError> {
        let text = self.as_atom().ok_or(ValueError::NotAtom)?;
        text.parse().map_err(|_| ValueError::Invalid {
            text: text.to_owned(),
            expected,
        })
    }

    fn emit<W: fmt::Write>(&self, out: &mut W) -> fmt::Result {
        match self {
            Sexp::Atom(text) => emit_atom(text, out),
            Sexp::List(items) => {
                out.write_char('(')?;
                let mut previous: Option<&Sexp> = None;
                for item in items {
                    // `(HJ (n j1)(ax 12.5))`, as rcssserver writes it: no space between lists.
                    let both_lists =
                        matches!((previous, item), (Some(Sexp::List(_)), Sexp::List(_)));
                    if previous.is_some() && !both_lists {
                        out.write_char(' ')?;
                    }
                    item.emit(out)?;
                    previous = Some(item);
                }
                out.write_char(')')
            }
        }
    }
}

fn finite<T>(is_finite: bool, value: T, atom: &Sexp) -> Result<T, ValueError> {
    if is_finite {
        Ok(value)
    } else {
        Err(ValueError::NonFinite {
            text: atom.as_atom().unwrap_or_default().to_owned(),
        })
    }
}

/// Shortest round-trip text of a finite number; `plain`/`sci` are its `{}`/`{:e}` forms, taken
/// from the original type so an `f32` prints as `0.1`, not as its widened `f64` digits.
fn number_atom(
    magnitude: f64,
    plain: impl FnOnce() -> String,
    sci: impl FnOnce() -> String,
) -> Sexp {
    if magnitude == 0.0 {
        Sexp::atom("0")
    } else if (PLAIN_MIN..PLAIN_MAX).contains(&magnitude) {
        Sexp::Atom(plain())
    } else {
        Sexp::Atom(sci())
    }
}

impl TryFrom<f64> for Sexp {
    type Error = NonFiniteNumber;

    fn try_from(value: f64) -> Result<Self, Self::Error> {
        if !value.is_finite() {
            return Err(NonFiniteNumber(value));
        }
        Ok(number_atom(
            value.abs(),
            || format!("{value}"),
            || format!("{value:e}"),
        ))
    }
}

impl TryFrom<f32> for Sexp {
    type Error = NonFiniteNumber;

    fn try_from(value: f32) -> Result<Self, Self::Error> {
        if !value.is_finite() {
            return Err(NonFiniteNumber(value.into()));
        }
        Ok(number_atom(
            f64::from(value).abs(),
            || format!("{value}"),
            || format!("{value:e}"),
        ))
    }
}

macro_rules! from_integer {
    ($($t:ty),*) => {$(
        impl From<$t> for Sexp {
            fn from(value: $t) -> Self {
                Sexp::Atom(value.to_string())
            }
        }
    )*};
}
from_integer!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

impl From<&str> for Sexp {
    fn from(text: &str) -> Self {
        Sexp::atom(text)
    }
}

impl From<String> for Sexp {
    fn from(text: String) -> Self {
        Sexp::Atom(text)
    }
}

impl From<Vec<Sexp>> for Sexp {
    fn from(items: Vec<Sexp>) -> Self {
        Sexp::List(items)
    }
}

/// The canonical form: `(a b (c d))`, lists back to back as in `(HJ (n j1)(ax 12.5))`, atoms
/// quoted only when they could not be read back bare.
impl fmt::Display for Sexp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.emit(f)
    }
}

/// Appends the expressions back to back with no separator, as rcssserver sends them.
pub fn write_all(exprs: &[Sexp], out: &mut Vec<u8>) {
    let mut sink = ByteSink(out);
    for expr in exprs {
        // ByteSink::write_str never fails, so neither can emit.
        let _ = expr.emit(&mut sink);
    }
}

struct ByteSink<'a>(&'a mut Vec<u8>);

impl fmt::Write for ByteSink<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

fn is_whitespace(byte: u8) -> bool {
    byte.is_ascii_whitespace()
}

/// Bytes that end a bare atom. Must match [`needs_quotes`], or printed atoms would not read back.
fn is_delimiter(byte: u8) -> bool {
    is_whitespace(byte) || matches!(byte, b'(' | b')' | b'"')
}

fn needs_quotes(text: &str) -> bool {
    text.is_empty() || text.bytes().any(is_delimiter)
}

fn emit_atom<W: fmt::Write>(text: &str, out: &mut W) -> fmt::Result {
    if !needs_quotes(text) {
        return out.write_str(text);
    }
    out.write_char('"')?;
    for c in text.chars() {
        match c {
            '"' => out.write_str("\\\"")?,
            '\\' => out.write_str("\\\\")?,
            '\n' => out.write_str("\\n")?,
            '\t' => out.write_str("\\t")?,
            '\r' => out.write_str("\\r")?,
            _ => out.write_char(c)?,
        }
    }
    out.write_char('"')
}

#[cfg(test)]
mod tests;
