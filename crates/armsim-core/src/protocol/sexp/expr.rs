//! S-expressions for spec 001's agent and monitor ports: the value type, a tolerant sans-IO
//! parser and the canonical printer, so the protocol codecs work on trees and one bad
//! expression from a client costs that expression only, not the whole message.
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

use std::fmt;
use std::str::FromStr;

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

/// Parses exactly one expression. Unlike the message parser this accepts a lone atom, because
/// here the text is a value (a test vector, a config string), not a stream from a client.
impl FromStr for Sexp {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut parser = Parser::new(text.as_bytes());
        parser.skip_whitespace();
        let value = match parser.peek() {
            None => {
                return Err(ParseError {
                    pos: text.len(),
                    kind: ParseErrorKind::Empty,
                });
            }
            Some(b'(') => parser.list()?,
            Some(b')') => {
                return Err(ParseError {
                    pos: parser.pos,
                    kind: ParseErrorKind::UnexpectedClose,
                });
            }
            Some(_) => parser.atom()?,
        };
        parser.skip_whitespace();
        if parser.pos < text.len() {
            return Err(ParseError {
                pos: parser.pos,
                kind: ParseErrorKind::Trailing,
            });
        }
        Ok(value)
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

/// The top-level expressions of one message payload, in order: `Ok` for each good one, one
/// `Err` for each bad one (parsing resumes after it).
pub fn parse_all(input: &[u8]) -> Parser<'_> {
    Parser::new(input)
}

/// Iterator over the top-level expressions of one payload; see [`parse_all`].
#[derive(Debug, Clone)]
pub struct Parser<'a> {
    input: &'a [u8],
    pos: usize,
    max_depth: usize,
    /// Lists and atoms this parser may still build.
    nodes_left: usize,
}

impl<'a> Parser<'a> {
    pub fn new(input: &'a [u8]) -> Self {
        Parser {
            input,
            pos: 0,
            max_depth: MAX_DEPTH,
            nodes_left: usize::MAX,
        }
    }

    /// Limits the lists and atoms built from the whole payload (unlimited by default).
    pub fn with_max_nodes(mut self, max_nodes: usize) -> Self {
        self.nodes_left = max_nodes;
        self
    }

    /// Counts one node against the budget; on overrun, ends the payload with an error.
    fn spend_node(&mut self, at: usize) -> Result<(), ParseError> {
        if self.nodes_left == 0 {
            self.pos = self.input.len();
            return Err(self.error(at, ParseErrorKind::TooManyNodes));
        }
        self.nodes_left -= 1;
        Ok(())
    }

    /// Replaces [`MAX_DEPTH`]; a top-level list counts as depth 1.
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while self.peek().is_some_and(is_whitespace) {
            self.pos += 1;
        }
    }

    fn error(&self, pos: usize, kind: ParseErrorKind) -> ParseError {
        ParseError { pos, kind }
    }

    /// Parses the list at `self.pos` (a `(`). On error, skips to the end of it.
    fn list(&mut self) -> Result<Sexp, ParseError> {
        // The innermost open list lives in `current`; its ancestors wait on `parents` with the
        // offsets of their `(`, so depth costs heap, not stack.
        let mut open = self.pos;
        let mut current: Vec<Sexp> = Vec::new();
        let mut parents: Vec<(usize, Vec<Sexp>)> = Vec::new();
        self.spend_node(open)?;
        self.pos += 1;
        loop {
            self.skip_whitespace();
            let Some(byte) = self.peek() else {
                return Err(self.error(open, ParseErrorKind::Unclosed));
            };
            match byte {
                b'(' => {
                    let depth = parents.len() + 1;
                    if depth >= self.max_depth {
                        let error = self.error(self.pos, ParseErrorKind::TooDeep);
                        self.skip_rest_of_list(depth);
                        return Err(error);
                    }
                    self.spend_node(self.pos)?;
                    parents.push((open, std::mem::take(&mut current)));
                    open = self.pos;
                    self.pos += 1;
                }
                b')' => {
                    self.pos += 1;
                    let done = Sexp::List(std::mem::take(&mut current));
                    match parents.pop() {
                        Some((parent_open, parent)) => {
                            open = parent_open;
                            current = parent;
                            current.push(done);
                        }
                        None => return Ok(done),
                    }
                }
                _ => match self.spend_node(self.pos).and_then(|()| self.atom()) {
                    Ok(atom) => current.push(atom),
                    Err(error) => {
                        self.skip_rest_of_list(parents.len() + 1);
                        return Err(error);
                    }
                },
            }
        }
    }

    /// Skips forward until `depth` more `)` than `(` have been seen (or the input ends), so a
    /// broken expression is dropped whole. Quoted atoms are skipped as units: a `)` inside
    /// quotes does not close anything.
    fn skip_rest_of_list(&mut self, mut depth: usize) {
        while let Some(byte) = self.peek() {
            match byte {
                b'(' => {
                    depth += 1;
                    self.pos += 1;
                }
                b')' => {
                    depth -= 1;
                    self.pos += 1;
                    if depth == 0 {
                        return;
                    }
                }
                b'"' => {
                    let _ = self.quoted();
                }
                _ => self.pos += 1,
            }
        }
    }

    /// Reads the atom at `self.pos` and always consumes all of it, even when it is invalid, so
    /// recovery resumes after the token rather than inside it.
    fn atom(&mut self) -> Result<Sexp, ParseError> {
        if self.peek() == Some(b'"') {
            return self.quoted();
        }
        let start = self.pos;
        while self.peek().is_some_and(|b| !is_delimiter(b)) {
            self.pos += 1;
        }
        match std::str::from_utf8(&self.input[start..self.pos]) {
            Ok(text) => Ok(Sexp::atom(text)),
            Err(e) => Err(self.error(start + e.valid_up_to(), ParseErrorKind::InvalidUtf8)),
        }
    }

    fn quoted(&mut self) -> Result<Sexp, ParseError> {
        let open = self.pos;
        self.pos += 1;
        let mut bytes = Vec::new();
        let mut first_error = None;
        loop {
            let Some(byte) = self.peek() else {
                return Err(
                    first_error.unwrap_or(self.error(open, ParseErrorKind::UnterminatedString))
                );
            };
            self.pos += 1;
            match byte {
                b'"' => break,
                b'\\' => {
                    let Some(escaped) = self.peek() else { continue };
                    self.pos += 1;
                    match escaped {
                        b'"' | b'\\' => bytes.push(escaped),
                        b'n' => bytes.push(b'\n'),
                        b't' => bytes.push(b'\t'),
                        b'r' => bytes.push(b'\r'),
                        _ => {
                            first_error
                                .get_or_insert(self.error(self.pos - 2, ParseErrorKind::BadEscape));
                        }
                    }
                }
                _ => bytes.push(byte),
            }
        }
        if let Some(error) = first_error {
            return Err(error);
        }
        // Escapes replace ASCII with ASCII, so the raw text is valid UTF-8 exactly when the
        // unescaped one is; checking the raw text gives the error a position in the input.
        let raw = &self.input[open + 1..self.pos - 1];
        if let Err(e) = std::str::from_utf8(raw) {
            return Err(self.error(open + 1 + e.valid_up_to(), ParseErrorKind::InvalidUtf8));
        }
        String::from_utf8(bytes)
            .map(Sexp::Atom)
            .map_err(|_| self.error(open, ParseErrorKind::InvalidUtf8))
    }

    /// Skips top-level garbage (atoms, stray `)`) up to the next `(`, quoted atoms as units.
    fn skip_garbage(&mut self) {
        loop {
            self.skip_whitespace();
            match self.peek() {
                None | Some(b'(') => return,
                Some(b')') => self.pos += 1,
                Some(_) => {
                    let _ = self.atom();
                }
            }
        }
    }
}

impl Iterator for Parser<'_> {
    type Item = Result<Sexp, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.skip_whitespace();
        let start = self.pos;
        let kind = match self.peek()? {
            b'(' => return Some(self.list()),
            b')' => ParseErrorKind::UnexpectedClose,
            _ => ParseErrorKind::ExpectedOpen,
        };
        self.skip_garbage();
        Some(Err(self.error(start, kind)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(input: &str) -> Vec<Result<Sexp, ParseError>> {
        parse_all(input.as_bytes()).collect()
    }

    /// The single expression of `input`, which must parse cleanly.
    fn only_ok(input: &str) -> Sexp {
        let mut results = parse(input);
        assert_eq!(results.len(), 1, "{results:?}");
        results.remove(0).unwrap()
    }

    fn err(pos: usize, kind: ParseErrorKind) -> Result<Sexp, ParseError> {
        Err(ParseError { pos, kind })
    }

    fn sx(text: &str) -> Sexp {
        text.parse().unwrap()
    }

    fn a(text: &str) -> Sexp {
        Sexp::atom(text)
    }

    fn print_all(exprs: &[Sexp]) -> String {
        let mut out = Vec::new();
        write_all(exprs, &mut out);
        String::from_utf8(out).unwrap()
    }

    const PERCEPTION: &str =
        "(time (now 1.20))(GS (t 1.20)(pm PlayOn))(HJ (n j1)(ax 12.5)(vx 0.3))";

    #[test]
    fn perception_message_parses_and_prints_back_identically() {
        let exprs: Vec<Sexp> = parse(PERCEPTION).into_iter().map(Result::unwrap).collect();
        assert_eq!(exprs.len(), 3);
        assert_eq!(
            exprs[0],
            Sexp::list([a("time"), Sexp::list([a("now"), a("1.20")])])
        );
        let now = exprs[0].find("now").unwrap().arg(0).unwrap();
        assert_eq!(now.as_f64(), Ok(1.2));
        assert_eq!(now.as_atom(), Some("1.20"));
        assert!(exprs[1].is("GS"));
        assert_eq!(exprs[1].find("pm").unwrap().arg(0), Some(&a("PlayOn")));
        let hj = &exprs[2];
        assert_eq!(hj.head(), Some("HJ"));
        assert_eq!(hj.find("n").unwrap().arg(0).unwrap().as_atom(), Some("j1"));
        assert_eq!(hj.find("ax").unwrap().arg(0).unwrap().as_f32(), Ok(12.5));
        assert_eq!(hj.find("vx").unwrap().arg(0).unwrap().as_f64(), Ok(0.3));
        assert_eq!(print_all(&exprs), PERCEPTION);
    }

    #[test]
    fn init_request() {
        let init = only_ok("(init arm6 teamA 1)");
        assert_eq!(init.head(), Some("init"));
        assert_eq!(init.args(), &[a("arm6"), a("teamA"), a("1")]);
        assert_eq!(init.arg(2).unwrap().as_u64(), Ok(1));
        assert_eq!(init.arg(2).unwrap().as_i64(), Ok(1));
        assert_eq!(init.to_string(), "(init arm6 teamA 1)");
    }

    #[test]
    fn effector_and_syn() {
        let exprs = parse("(shoulder_lift 30 0 20 1 0)(syn)");
        let effector = exprs[0].as_ref().unwrap();
        assert_eq!(effector.head(), Some("shoulder_lift"));
        let values: Vec<f64> = effector
            .args()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(values, [30.0, 0.0, 20.0, 1.0, 0.0]);
        let syn = exprs[1].as_ref().unwrap();
        assert_eq!(syn, &Sexp::list([a("syn")]));
        assert!(syn.args().is_empty());
        assert_eq!(exprs.len(), 2);
    }

    #[test]
    fn whitespace_between_and_inside_expressions() {
        assert_eq!(
            parse(" \t(a)\n\r\n(b)(c)  "),
            [Ok(sx("(a)")), Ok(sx("(b)")), Ok(sx("(c)"))]
        );
        assert_eq!(parse("(  a\tb\n( c ) )"), [Ok(sx("(a b (c))"))]);
        assert_eq!(parse("(a(b)c)"), [Ok(sx("(a (b) c)"))]);
        assert!(parse("").is_empty());
        assert!(parse(" \n\t ").is_empty());
        assert_eq!(parse("()"), [Ok(Sexp::List(vec![]))]);
    }

    #[test]
    fn unclosed_list_reports_innermost_open_paren() {
        assert_eq!(parse("(a (b)"), [err(0, ParseErrorKind::Unclosed)]);
        assert_eq!(
            parse("(ok)(a (b"),
            [Ok(sx("(ok)")), err(7, ParseErrorKind::Unclosed)]
        );
    }

    #[test]
    fn stray_close_paren() {
        assert_eq!(
            parse(")("),
            [
                err(0, ParseErrorKind::UnexpectedClose),
                err(1, ParseErrorKind::Unclosed)
            ]
        );
        assert_eq!(
            parse("(a))(b)"),
            [
                Ok(sx("(a)")),
                err(3, ParseErrorKind::UnexpectedClose),
                Ok(sx("(b)"))
            ]
        );
    }

    #[test]
    fn top_level_atoms_are_one_error_per_run() {
        assert_eq!(
            parse("foo bar (a) \"x (y\" ) (b)"),
            [
                err(0, ParseErrorKind::ExpectedOpen),
                Ok(sx("(a)")),
                err(12, ParseErrorKind::ExpectedOpen),
                Ok(sx("(b)"))
            ]
        );
    }

    #[test]
    fn error_inside_list_skips_the_whole_top_level_expression() {
        // The nested (c) and the ")" inside quotes must not surface or close anything.
        assert_eq!(
            parse(r#"(a "bad\q" (c ")") x)(d)"#),
            [err(7, ParseErrorKind::BadEscape), Ok(sx("(d)"))]
        );
    }

    #[test]
    fn quoted_atoms() {
        let text = r#"(say "hello world" "a\"b\\c" "" "x\ny\tz\r" "(p)" plain\slash)"#;
        let say = only_ok(text);
        assert_eq!(
            say.args(),
            &[
                a("hello world"),
                a("a\"b\\c"),
                a(""),
                a("x\ny\tz\r"),
                a("(p)"),
                a("plain\\slash")
            ]
        );
        assert_eq!(say.to_string(), text);
        // A quote ends a bare atom and a quoted one needs no space after it.
        assert_eq!(
            parse(r#"(a"b c"d)"#),
            [Ok(Sexp::list([a("a"), a("b c"), a("d")]))]
        );
        assert_eq!(Sexp::atom("x").to_string(), "x");
        assert_eq!(Sexp::atom("").to_string(), "\"\"");
    }

    #[test]
    fn string_errors() {
        assert_eq!(
            parse(r#"(a "bc"#),
            [err(3, ParseErrorKind::UnterminatedString)]
        );
        assert_eq!(
            parse("(a \"bc\\"),
            [err(3, ParseErrorKind::UnterminatedString)]
        );
        assert_eq!(
            parse(r#"("ok\x")(b)"#),
            [err(4, ParseErrorKind::BadEscape), Ok(sx("(b)"))]
        );
    }

    #[test]
    fn invalid_utf8_is_an_error_with_its_position() {
        let got: Vec<_> = parse_all(b"(a \xff b)(c)").collect();
        assert_eq!(got, [err(3, ParseErrorKind::InvalidUtf8), Ok(sx("(c)"))]);
        let got: Vec<_> = parse_all(b"(\"\\n\xc3\")(c)").collect();
        assert_eq!(got, [err(4, ParseErrorKind::InvalidUtf8), Ok(sx("(c)"))]);
        let got: Vec<_> = parse_all("(é \"ü\")".as_bytes()).collect();
        assert_eq!(got, [Ok(Sexp::list([a("é"), a("ü")]))]);
    }

    fn nested(depth: usize) -> String {
        format!("{}x{}", "(".repeat(depth), ")".repeat(depth))
    }

    #[test]
    fn nesting_limit() {
        assert!(parse(&nested(MAX_DEPTH))[0].is_ok());
        let too_deep = format!("{}(ok)", nested(MAX_DEPTH + 1));
        assert_eq!(
            parse(&too_deep),
            [err(MAX_DEPTH, ParseErrorKind::TooDeep), Ok(sx("(ok)"))]
        );
        let shallow: Vec<_> = parse_all(b"((a))(b)").with_max_depth(1).collect();
        assert_eq!(shallow, [err(1, ParseErrorKind::TooDeep), Ok(sx("(b)"))]);
    }

    #[test]
    fn hostile_nesting_does_not_overflow_the_stack() {
        let depth = 1_000_000;
        let hostile = format!("{}(after)", nested(depth));
        assert_eq!(
            parse(&hostile),
            [err(MAX_DEPTH, ParseErrorKind::TooDeep), Ok(sx("(after)"))]
        );
        let unclosed = "(".repeat(depth);
        assert_eq!(parse(&unclosed), [err(MAX_DEPTH, ParseErrorKind::TooDeep)]);
    }

    #[test]
    fn errors_read_well() {
        let error = parse("(a))")[1].clone().unwrap_err();
        assert_eq!(error.to_string(), "unexpected ')' at byte 3");
        let error = parse("(a (b")[0].clone().unwrap_err();
        assert_eq!(error.to_string(), "unclosed '(' at byte 3");
    }

    #[test]
    fn printer_spacing() {
        assert_eq!(
            Sexp::list([a("a"), a("b"), Sexp::list([a("c"), a("d")])]).to_string(),
            "(a b (c d))"
        );
        assert_eq!(sx("(a (b) c)").to_string(), "(a (b) c)");
        assert_eq!(sx("((a) (b) c)").to_string(), "((a)(b) c)");
        assert_eq!(sx("( )").to_string(), "()");
    }

    #[test]
    fn write_all_appends_without_separators() {
        let mut out = b"prefix:".to_vec();
        write_all(&[sx("(a b)"), sx("(c)"), sx("(d (e))")], &mut out);
        assert_eq!(out, b"prefix:(a b)(c)(d (e))");
    }

    #[test]
    fn numbers_print_compactly() {
        let cases: [(f64, &str); 9] = [
            (12.5, "12.5"),
            (-0.001, "-0.001"),
            (3.0, "3"),
            (0.3, "0.3"),
            (0.0, "0"),
            (-0.0, "0"),
            (1e20, "1e20"),
            (-1.5e-7, "-1.5e-7"),
            (123456.0, "123456"),
        ];
        for (value, text) in cases {
            assert_eq!(Sexp::try_from(value), Ok(a(text)), "{value}");
        }
        assert_eq!(Sexp::try_from(0.1f32), Ok(a("0.1")));
        assert_eq!(Sexp::try_from(-2.5f32), Ok(a("-2.5")));
        assert_eq!(Sexp::from(-7i32), a("-7"));
        assert_eq!(Sexp::from(42usize), a("42"));
        assert_eq!(Sexp::fixed(1.2, 2), Ok(a("1.20")));
        assert_eq!(Sexp::fixed(-0.001, 2), Ok(a("0.00")));
        assert_eq!(Sexp::fixed(-1.005, 1), Ok(a("-1.0")));
    }

    #[test]
    fn non_finite_numbers_are_refused() {
        assert!(Sexp::try_from(f64::NAN).is_err());
        assert_eq!(
            Sexp::try_from(f64::INFINITY),
            Err(NonFiniteNumber(f64::INFINITY))
        );
        assert!(Sexp::try_from(f32::NEG_INFINITY).is_err());
        assert!(Sexp::fixed(f64::NAN, 2).is_err());
    }

    #[test]
    fn number_accessors_reject_bad_atoms() {
        assert_eq!(sx("(a)").as_f64(), Err(ValueError::NotAtom));
        assert_eq!(
            a("abc").as_f64(),
            Err(ValueError::Invalid {
                text: "abc".into(),
                expected: "number"
            })
        );
        for text in ["nan", "NaN", "inf", "-infinity"] {
            assert_eq!(
                a(text).as_f64(),
                Err(ValueError::NonFinite { text: text.into() })
            );
        }
        assert!(matches!(
            a("1e39").as_f32(),
            Err(ValueError::NonFinite { .. })
        ));
        assert!(a("1e39").as_f64().is_ok());
        assert!(a("1.5").as_i64().is_err());
        assert!(a("-1").as_u64().is_err());
    }

    #[test]
    fn lookup_helpers() {
        let pos = sx("(pos (n ee)(p 1 2 3)(p 4))");
        assert_eq!(pos.find("p"), Some(&sx("(p 1 2 3)")));
        assert_eq!(pos.find_all("p").count(), 2);
        assert_eq!(pos.find("q"), None);
        assert_eq!(pos.find("pos"), None, "only children are searched");
        assert_eq!(a("p").find("p"), None);
        assert_eq!(a("p").head(), None);
        assert_eq!(sx("((x) y)").head(), None);
        assert_eq!(pos.as_atom(), None);
        assert_eq!(a("x").as_list(), None);
        assert_eq!(pos.as_list().map(<[Sexp]>::len), Some(4));
    }

    #[test]
    fn from_str_takes_exactly_one_expression() {
        assert_eq!("(a b)".parse(), Ok(Sexp::list([a("a"), a("b")])));
        assert_eq!(" atom ".parse(), Ok(a("atom")));
        assert_eq!(
            "  ".parse::<Sexp>(),
            Err(ParseError {
                pos: 2,
                kind: ParseErrorKind::Empty
            })
        );
        assert_eq!(
            "(a) (b)".parse::<Sexp>(),
            Err(ParseError {
                pos: 4,
                kind: ParseErrorKind::Trailing
            })
        );
        assert_eq!(
            ")".parse::<Sexp>().map_err(|e| e.kind),
            Err(ParseErrorKind::UnexpectedClose)
        );
    }

    /// Atoms from a charset that exercises quoting: whitespace, parens, quotes, backslashes,
    /// non-ASCII letters and emoji.
    fn atom_strategy() -> impl Strategy<Value = Sexp> {
        let chars = prop::sample::select(vec![
            'a', 'Z', '0', '9', '.', '-', '_', ' ', '\t', '\n', '\r', '(', ')', '"', '\\', 'é',
            'ß', '✓', '🙂', '\u{b}', '\u{0}',
        ]);
        prop::collection::vec(chars, 0..8).prop_map(|cs| Sexp::Atom(cs.into_iter().collect()))
    }

    fn tree_strategy() -> impl Strategy<Value = Sexp> {
        atom_strategy().prop_recursive(6, 64, 6, |inner| {
            prop::collection::vec(inner, 0..6).prop_map(Sexp::List)
        })
    }

    fn list_strategy() -> impl Strategy<Value = Sexp> {
        prop::collection::vec(tree_strategy(), 0..6).prop_map(Sexp::List)
    }

    /// Bytes biased towards the grammar's special characters, so random input gets past the
    /// first paren far more often than uniform bytes would.
    fn grammar_bytes() -> impl Strategy<Value = Vec<u8>> {
        let byte = prop_oneof![
            prop::sample::select(b"((()))\"\\ \tab1.ne".to_vec()),
            any::<u8>(),
        ];
        prop::collection::vec(byte, 0..256)
    }

    fn check_parse_invariants(input: &[u8]) {
        for item in parse_all(input) {
            match item {
                Err(error) => assert!(error.pos <= input.len()),
                // Whatever the parser accepts must survive a print/parse round trip.
                Ok(expr) => {
                    let printed = expr.to_string();
                    let again: Vec<_> = parse_all(printed.as_bytes()).collect();
                    assert_eq!(again, [Ok(expr)]);
                }
            }
        }
    }

    proptest! {
        #[test]
        fn parser_never_panics_on_arbitrary_bytes(input in prop::collection::vec(any::<u8>(), 0..512)) {
            check_parse_invariants(&input);
        }

        #[test]
        fn parser_never_panics_on_grammar_like_bytes(input in grammar_bytes()) {
            check_parse_invariants(&input);
        }

        #[test]
        fn print_then_parse_round_trips(exprs in prop::collection::vec(list_strategy(), 0..5)) {
            let mut out = Vec::new();
            write_all(&exprs, &mut out);
            let parsed: Vec<_> = parse_all(&out).collect();
            let expected: Vec<_> = exprs.into_iter().map(Ok).collect();
            prop_assert_eq!(parsed, expected);
        }

        #[test]
        fn display_then_from_str_round_trips(expr in tree_strategy()) {
            prop_assert_eq!(expr.to_string().parse::<Sexp>(), Ok(expr));
        }

        #[test]
        fn finite_f64_round_trips_through_its_atom(value in any::<f64>().prop_filter("finite", |v| v.is_finite())) {
            let atom = Sexp::try_from(value).unwrap();
            let back = atom.as_f64().unwrap();
            // -0 prints as 0 on purpose.
            prop_assert_eq!(back.to_bits(), if value == 0.0 { 0 } else { value.to_bits() });
        }

        #[test]
        fn finite_f32_round_trips_through_its_atom(value in any::<f32>().prop_filter("finite", |v| v.is_finite())) {
            let atom = Sexp::try_from(value).unwrap();
            let back = atom.as_f32().unwrap();
            prop_assert_eq!(back.to_bits(), if value == 0.0 { 0 } else { value.to_bits() });
        }
    }

    #[test]
    fn a_node_budget_ends_the_payload_with_one_error() {
        let input = "(x)".repeat(1000);
        let results: Vec<_> = parse_all(input.as_bytes()).with_max_nodes(10).collect();
        // Five `(x)` cost two nodes each; the sixth list overruns and nothing after it is read.
        assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 5);
        assert_eq!(results.len(), 6);
        let error = results[5].as_ref().unwrap_err();
        assert_eq!(error.kind, ParseErrorKind::TooManyNodes);
        assert_eq!(error.pos, 15);
        // One long list is held to the same budget.
        let long = format!("(a{})", " x".repeat(100));
        let results: Vec<_> = parse_all(long.as_bytes()).with_max_nodes(50).collect();
        assert_eq!(results.len(), 1);
        assert_eq!(
            results[0].as_ref().unwrap_err().kind,
            ParseErrorKind::TooManyNodes
        );
    }
}
