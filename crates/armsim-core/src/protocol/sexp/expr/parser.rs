//! The tolerant S-expression parser: top-level lists from one payload, errors reported and
//! skipped one expression at a time, depth and node budgets enforced with an explicit stack; and
//! `Sexp::from_str` for one expression.

use super::*;

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
