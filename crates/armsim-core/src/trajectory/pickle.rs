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

use std::collections::HashMap;
use std::io::{self, Write};

use thiserror::Error;

use super::value::Value;

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

/// Deeper than any trajectory; shallow enough that building and dropping values cannot overflow
/// a thread's stack.
const MAX_DEPTH: usize = 256;

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

/// A stack slot. Containers live in an arena and are referred to by index, because a pickle may
/// memoize a list while it is still empty and fill it afterwards; every later memo get must see
/// the same (filled) list, as Python's shared references do. Strings go there too, so that a
/// memoized name is stored once; numbers stay inline, which keeps the arena small.
#[derive(Clone, Copy)]
enum Item {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Node(usize),
}

enum Node {
    Str(String),
    List(Vec<Item>),
    Tuple(Vec<Item>),
    /// Keys are indices of `Str` nodes, checked when set.
    Dict(Vec<(usize, Item)>),
}

/// CPython's memo (key → object). Keys are normally dense from 0, so they index a vector;
/// arbitrary LONG_BINPUT keys past the input's length go to a map, so that a crafted key cannot
/// make the vector huge.
#[derive(Default)]
struct Memo {
    dense: Vec<Option<Item>>,
    sparse: HashMap<u32, Item>,
    len: usize,
}

impl Memo {
    fn put(&mut self, key: u32, item: Item, dense_limit: usize) {
        let k = key as usize;
        let fresh = if k < dense_limit {
            if k >= self.dense.len() {
                self.dense.resize(k + 1, None);
            }
            self.dense[k].replace(item).is_none()
        } else {
            self.sparse.insert(key, item).is_none()
        };
        self.len += usize::from(fresh);
    }

    fn get(&self, key: u32) -> Option<Item> {
        match self.dense.get(key as usize) {
            Some(slot) => *slot,
            None => self.sparse.get(&key).copied(),
        }
    }
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    /// Where the current opcode started, for error messages.
    at: usize,
    name: &'static str,
    nodes: Vec<Node>,
    stack: Vec<Item>,
    /// Stack lengths at each open MARK (CPython's metastack).
    marks: Vec<usize>,
    memo: Memo,
}

impl<'a> Reader<'a> {
    fn new(data: &'a [u8]) -> Self {
        Reader {
            data,
            pos: 0,
            at: 0,
            name: "",
            nodes: Vec::new(),
            stack: Vec::new(),
            marks: Vec::new(),
            memo: Memo::default(),
        }
    }

    fn malformed(&self, reason: impl Into<String>) -> PickleError {
        PickleError::Malformed {
            name: self.name,
            offset: self.at,
            reason: reason.into(),
        }
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8], PickleError> {
        let available = self.data.len() - self.pos;
        if n > available as u64 {
            return Err(PickleError::Truncated {
                name: self.name,
                offset: self.at,
                needed: n,
                available,
            });
        }
        let start = self.pos;
        self.pos += n as usize;
        Ok(&self.data[start..self.pos])
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], PickleError> {
        let bytes = self.take(N as u64)?;
        let mut out = [0; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    fn push_node(&mut self, node: Node) {
        self.nodes.push(node);
        self.stack.push(Item::Node(self.nodes.len() - 1));
    }

    /// The stack below the innermost MARK is out of reach until POP_MARK or a mark-consuming
    /// opcode, as in CPython.
    fn base(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }

    fn pop(&mut self) -> Result<Item, PickleError> {
        if self.stack.len() <= self.base() {
            return Err(self.malformed("stack underflow"));
        }
        Ok(self.stack.pop().expect("checked above"))
    }

    fn top(&self) -> Result<Item, PickleError> {
        if self.stack.len() <= self.base() {
            return Err(self.malformed("stack underflow"));
        }
        Ok(*self.stack.last().expect("checked above"))
    }

    fn pop_mark(&mut self) -> Result<Vec<Item>, PickleError> {
        let base = self
            .marks
            .pop()
            .ok_or_else(|| self.malformed("no MARK to pop"))?;
        Ok(self.stack.split_off(base))
    }

    fn string(&mut self, len: u64) -> Result<(), PickleError> {
        let bytes = self.take(len)?;
        let s =
            std::str::from_utf8(bytes).map_err(|_| self.malformed("string is not valid UTF-8"))?;
        self.push_node(Node::Str(s.to_owned()));
        Ok(())
    }

    fn long(&mut self, len: u64) -> Result<(), PickleError> {
        let bytes = self.take(len)?;
        let v = long_to_i64(bytes)
            .ok_or_else(|| self.malformed("integer does not fit in 64 signed bits"))?;
        self.stack.push(Item::Int(v));
        Ok(())
    }

    fn memo_get(&mut self, key: u32) -> Result<(), PickleError> {
        let item = self
            .memo
            .get(key)
            .ok_or_else(|| self.malformed(format!("memo key {key} was never stored")))?;
        self.stack.push(item);
        Ok(())
    }

    fn memo_put(&mut self, key: u32) -> Result<(), PickleError> {
        let item = self.top()?;
        self.memo.put(key, item, self.data.len());
        Ok(())
    }

    fn kind(&self, item: Item) -> &'static str {
        match item {
            Item::None => "None",
            Item::Bool(_) => "a bool",
            Item::Int(_) => "an int",
            Item::Float(_) => "a float",
            Item::Node(i) => match self.nodes[i] {
                Node::Str(_) => "a string",
                Node::List(_) => "a list",
                Node::Tuple(_) => "a tuple",
                Node::Dict(_) => "a dict",
            },
        }
    }

    fn check_key(&self, key: Item) -> Result<usize, PickleError> {
        match key {
            Item::Node(i) if matches!(self.nodes[i], Node::Str(_)) => Ok(i),
            _ => Err(self.malformed(format!(
                "dict key is {}, only string keys are supported",
                self.kind(key)
            ))),
        }
    }

    fn extend_list(&mut self, list: Item, items: Vec<Item>) -> Result<(), PickleError> {
        if let Item::Node(i) = list
            && let Node::List(v) = &mut self.nodes[i]
        {
            v.extend(items);
            return Ok(());
        }
        Err(self.malformed(format!("appending to {}, not a list", self.kind(list))))
    }

    fn set_items(&mut self, dict: Item, items: Vec<Item>) -> Result<(), PickleError> {
        if !items.len().is_multiple_of(2) {
            return Err(self.malformed("odd number of items for a dict"));
        }
        let mut pairs = Vec::with_capacity(items.len() / 2);
        for pair in items.chunks_exact(2) {
            pairs.push((self.check_key(pair[0])?, pair[1]));
        }
        if let Item::Node(i) = dict
            && let Node::Dict(entries) = &mut self.nodes[i]
        {
            entries.extend(pairs);
            return Ok(());
        }
        Err(self.malformed(format!("setting items on {}, not a dict", self.kind(dict))))
    }

    fn run(mut self) -> Result<Value, PickleError> {
        loop {
            self.at = self.pos;
            let Some(&op) = self.data.get(self.pos) else {
                return Err(PickleError::MissingStop);
            };
            self.pos += 1;
            let Some((name, is_object)) = opcode_name(op) else {
                return Err(PickleError::UnknownOpcode {
                    byte: op,
                    offset: self.at,
                });
            };
            self.name = name;
            match op {
                PROTO => {
                    let [version] = self.array()?;
                    if !(2..=5).contains(&version) {
                        return Err(PickleError::UnsupportedProtocol {
                            version,
                            offset: self.at,
                        });
                    }
                }
                // A frame only tells a streaming reader how much to buffer; with the whole pickle
                // in memory it is enough that the frame fits in the data.
                FRAME => {
                    let len = u64::from_le_bytes(self.array()?);
                    let available = self.data.len() - self.pos;
                    if len > available as u64 {
                        return Err(PickleError::Truncated {
                            name,
                            offset: self.at,
                            needed: len,
                            available,
                        });
                    }
                }
                STOP => {
                    let root = self.pop()?;
                    if self.pos < self.data.len() {
                        return Err(PickleError::TrailingData {
                            offset: self.pos,
                            count: self.data.len() - self.pos,
                        });
                    }
                    return self.materialize(root);
                }
                MARK => self.marks.push(self.stack.len()),
                POP => {
                    if self.stack.len() > self.base() {
                        self.stack.pop();
                    } else {
                        self.pop_mark()?;
                    }
                }
                POP_MARK => {
                    self.pop_mark()?;
                }
                DUP => {
                    let top = self.top()?;
                    self.stack.push(top);
                }
                NONE => self.stack.push(Item::None),
                NEWTRUE => self.stack.push(Item::Bool(true)),
                NEWFALSE => self.stack.push(Item::Bool(false)),
                BININT => {
                    let v = i32::from_le_bytes(self.array()?);
                    self.stack.push(Item::Int(v.into()));
                }
                BININT1 => {
                    let [v] = self.array()?;
                    self.stack.push(Item::Int(v.into()));
                }
                BININT2 => {
                    let v = u16::from_le_bytes(self.array()?);
                    self.stack.push(Item::Int(v.into()));
                }
                LONG1 => {
                    let [len] = self.array()?;
                    self.long(len.into())?;
                }
                LONG4 => {
                    let len = i32::from_le_bytes(self.array()?);
                    let len = u64::try_from(len).map_err(|_| self.malformed("negative length"))?;
                    self.long(len)?;
                }
                BINFLOAT => {
                    let v = f64::from_be_bytes(self.array()?);
                    self.stack.push(Item::Float(v));
                }
                SHORT_BINUNICODE => {
                    let [len] = self.array()?;
                    self.string(len.into())?;
                }
                BINUNICODE => {
                    let len = u32::from_le_bytes(self.array()?);
                    self.string(len.into())?;
                }
                BINUNICODE8 => {
                    let len = u64::from_le_bytes(self.array()?);
                    self.string(len)?;
                }
                EMPTY_LIST => self.push_node(Node::List(Vec::new())),
                EMPTY_DICT => self.push_node(Node::Dict(Vec::new())),
                EMPTY_TUPLE => self.push_node(Node::Tuple(Vec::new())),
                LIST => {
                    let items = self.pop_mark()?;
                    self.push_node(Node::List(items));
                }
                TUPLE => {
                    let items = self.pop_mark()?;
                    self.push_node(Node::Tuple(items));
                }
                TUPLE1 | TUPLE2 | TUPLE3 => {
                    let n = usize::from(op - TUPLE1) + 1;
                    let mut items = vec![Item::None; n];
                    for slot in items.iter_mut().rev() {
                        *slot = self.pop()?;
                    }
                    self.push_node(Node::Tuple(items));
                }
                DICT => {
                    let items = self.pop_mark()?;
                    self.push_node(Node::Dict(Vec::new()));
                    let dict = self.top()?;
                    self.set_items(dict, items)?;
                }
                APPEND => {
                    let item = self.pop()?;
                    let list = self.top()?;
                    self.extend_list(list, vec![item])?;
                }
                APPENDS => {
                    let items = self.pop_mark()?;
                    let list = self.top()?;
                    self.extend_list(list, items)?;
                }
                SETITEM => {
                    let value = self.pop()?;
                    let key = self.pop()?;
                    let dict = self.top()?;
                    self.set_items(dict, vec![key, value])?;
                }
                SETITEMS => {
                    let items = self.pop_mark()?;
                    let dict = self.top()?;
                    self.set_items(dict, items)?;
                }
                MEMOIZE => {
                    let key =
                        u32::try_from(self.memo.len).map_err(|_| self.malformed("memo is full"))?;
                    self.memo_put(key)?;
                }
                BINPUT => {
                    let [key] = self.array()?;
                    self.memo_put(key.into())?;
                }
                LONG_BINPUT => {
                    let key = u32::from_le_bytes(self.array()?);
                    self.memo_put(key)?;
                }
                BINGET => {
                    let [key] = self.array()?;
                    self.memo_get(key.into())?;
                }
                LONG_BINGET => {
                    let key = u32::from_le_bytes(self.array()?);
                    self.memo_get(key)?;
                }
                _ if is_object => {
                    return Err(PickleError::ObjectOpcode {
                        name,
                        offset: self.at,
                    });
                }
                _ => {
                    return Err(PickleError::UnsupportedOpcode {
                        name,
                        offset: self.at,
                    });
                }
            }
        }
    }

    /// Turns the arena into a tree. Shared nodes are copied once per reference, under a budget,
    /// so a pickle that references one big list many times cannot exhaust memory.
    fn materialize(&self, root: Item) -> Result<Value, PickleError> {
        let mut b = Builder {
            nodes: &self.nodes,
            visiting: vec![false; self.nodes.len()],
            spent: 0,
            limit: expansion_limit(self.data.len()),
        };
        b.build(root, 0)
    }
}

struct Builder<'a> {
    nodes: &'a [Node],
    visiting: Vec<bool>,
    spent: usize,
    limit: usize,
}

impl Builder<'_> {
    fn spend(&mut self, bytes: usize) -> Result<(), PickleError> {
        self.spent = self.spent.saturating_add(bytes);
        if self.spent > self.limit {
            return Err(PickleError::TooLarge { limit: self.limit });
        }
        Ok(())
    }

    fn build(&mut self, item: Item, depth: usize) -> Result<Value, PickleError> {
        const VALUE: usize = std::mem::size_of::<Value>();
        const ENTRY: usize = std::mem::size_of::<(String, Value)>();
        if depth > MAX_DEPTH {
            return Err(PickleError::TooDeep { limit: MAX_DEPTH });
        }
        self.spend(VALUE)?;
        let idx = match item {
            Item::None => return Ok(Value::None),
            Item::Bool(b) => return Ok(Value::Bool(b)),
            Item::Int(i) => return Ok(Value::Int(i)),
            Item::Float(x) => return Ok(Value::Float(x)),
            Item::Node(idx) => idx,
        };
        let nodes = self.nodes;
        match &nodes[idx] {
            Node::Str(s) => {
                self.spend(s.len())?;
                Ok(Value::Str(s.clone()))
            }
            Node::List(items) | Node::Tuple(items) => {
                self.enter(idx)?;
                let mut out = Vec::with_capacity(items.len());
                for &item in items {
                    out.push(self.build(item, depth + 1)?);
                }
                self.visiting[idx] = false;
                Ok(Value::List(out))
            }
            Node::Dict(entries) => {
                self.enter(idx)?;
                let mut out = Vec::with_capacity(entries.len());
                for &(k, v) in entries {
                    let Node::Str(key) = &nodes[k] else {
                        unreachable!("keys are checked when set")
                    };
                    self.spend(ENTRY - VALUE + key.len())?;
                    out.push((key.clone(), self.build(v, depth + 1)?));
                }
                self.visiting[idx] = false;
                Ok(Value::dict_from_entries(out))
            }
        }
    }

    fn enter(&mut self, idx: usize) -> Result<(), PickleError> {
        if std::mem::replace(&mut self.visiting[idx], true) {
            return Err(PickleError::Cycle);
        }
        Ok(())
    }
}

/// Two's-complement little-endian bytes (LONG1/LONG4's argument) to i64, if they fit.
fn long_to_i64(bytes: &[u8]) -> Option<i64> {
    let Some(&last) = bytes.last() else {
        return Some(0);
    };
    let fill = if last & 0x80 != 0 { 0xff } else { 0x00 };
    if bytes.len() > 8 {
        // Longer encodings fit only if the extra bytes are sign extension of byte 7.
        let (low, high) = bytes.split_at(8);
        if high.iter().any(|&b| b != fill) || (low[7] & 0x80 != 0) != (fill == 0xff) {
            return None;
        }
    }
    let mut buf = [fill; 8];
    let n = bytes.len().min(8);
    buf[..n].copy_from_slice(&bytes[..n]);
    Some(i64::from_le_bytes(buf))
}

/// The shortest two's-complement little-endian encoding of `v`, as CPython's `encode_long`.
fn i64_to_long(v: i64) -> Vec<u8> {
    let mut bytes = v.to_le_bytes().to_vec();
    while bytes.len() > 1 {
        let last = bytes[bytes.len() - 1];
        let next_sign = bytes[bytes.len() - 2] & 0x80;
        if (last == 0x00 && next_sign == 0) || (last == 0xff && next_sign != 0) {
            bytes.pop();
        } else {
            break;
        }
    }
    bytes
}

/// CPython's frame size target and smallest frame worth a FRAME header.
const FRAME_TARGET: usize = 64 * 1024;
const FRAME_MIN: usize = 4;
/// CPython's `_BATCHSIZE` for APPENDS and SETITEMS.
const BATCH: usize = 1000;

struct Writer<'v, W> {
    out: W,
    frame: Vec<u8>,
    memo: HashMap<&'v str, u32>,
}

impl<'v, W: Write> Writer<'v, W> {
    /// Frames are cut only between values, never inside an opcode, as CPython's framer does.
    fn commit_frame(&mut self) -> io::Result<()> {
        if self.frame.is_empty() {
            return Ok(());
        }
        if self.frame.len() >= FRAME_MIN {
            self.out.write_all(&[FRAME])?;
            self.out
                .write_all(&(self.frame.len() as u64).to_le_bytes())?;
        }
        self.out.write_all(&self.frame)?;
        self.frame.clear();
        Ok(())
    }

    fn value(&mut self, v: &'v Value) -> io::Result<()> {
        if self.frame.len() >= FRAME_TARGET {
            self.commit_frame()?;
        }
        let f = &mut self.frame;
        match v {
            Value::None => f.push(NONE),
            Value::Bool(true) => f.push(NEWTRUE),
            Value::Bool(false) => f.push(NEWFALSE),
            Value::Int(i) => write_int(f, *i),
            Value::Float(x) => {
                f.push(BINFLOAT);
                f.extend_from_slice(&x.to_be_bytes());
            }
            Value::Str(s) => self.string(s),
            Value::List(items) => {
                f.push(EMPTY_LIST);
                for batch in items.chunks(BATCH) {
                    if let [item] = batch {
                        self.value(item)?;
                        self.frame.push(APPEND);
                    } else {
                        self.frame.push(MARK);
                        for item in batch {
                            self.value(item)?;
                        }
                        self.frame.push(APPENDS);
                    }
                }
            }
            Value::Dict(entries) => {
                f.push(EMPTY_DICT);
                for batch in entries.chunks(BATCH) {
                    if let [(k, v)] = batch {
                        self.string(k);
                        self.value(v)?;
                        self.frame.push(SETITEM);
                    } else {
                        self.frame.push(MARK);
                        for (k, v) in batch {
                            self.string(k);
                            self.value(v)?;
                        }
                        self.frame.push(SETITEMS);
                    }
                }
            }
        }
        Ok(())
    }

    fn string(&mut self, s: &'v str) {
        let f = &mut self.frame;
        if let Some(&key) = self.memo.get(s) {
            match u8::try_from(key) {
                Ok(k) => f.extend_from_slice(&[BINGET, k]),
                Err(_) => {
                    f.push(LONG_BINGET);
                    f.extend_from_slice(&key.to_le_bytes());
                }
            }
            return;
        }
        let len = s.len();
        if let Ok(n) = u8::try_from(len) {
            f.extend_from_slice(&[SHORT_BINUNICODE, n]);
        } else if let Ok(n) = u32::try_from(len) {
            f.push(BINUNICODE);
            f.extend_from_slice(&n.to_le_bytes());
        } else {
            f.push(BINUNICODE8);
            f.extend_from_slice(&(len as u64).to_le_bytes());
        }
        f.extend_from_slice(s.as_bytes());
        // MEMOIZE numbers entries by memo size; past u32 keys, strings are just not shared.
        if let Ok(key) = u32::try_from(self.memo.len()) {
            f.push(MEMOIZE);
            self.memo.insert(s, key);
        }
    }
}

fn write_int(f: &mut Vec<u8>, i: i64) {
    if let Ok(v) = u8::try_from(i) {
        f.extend_from_slice(&[BININT1, v]);
    } else if let Ok(v) = u16::try_from(i) {
        f.push(BININT2);
        f.extend_from_slice(&v.to_le_bytes());
    } else if let Ok(v) = i32::try_from(i) {
        f.push(BININT);
        f.extend_from_slice(&v.to_le_bytes());
    } else {
        let bytes = i64_to_long(i);
        f.extend_from_slice(&[LONG1, bytes.len() as u8]);
        f.extend_from_slice(&bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::arb_value;
    use super::*;
    use proptest::prelude::*;

    fn dict(entries: Vec<(&str, Value)>) -> Value {
        Value::Dict(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
        )
    }

    #[test]
    fn reads_cpython_protocol_4_bytes() {
        // pickle.dumps({'a': [1, 2.5, None, True], 'b': ('x', -1), 'c': 2**40}, protocol=4)
        let data = b"\x80\x04\x955\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01a\x94]\x94(K\x01G@\x04\x00\x00\x00\x00\x00\x00N\x88e\x8c\x01b\x94\x8c\x01x\x94J\xff\xff\xff\xff\x86\x94\x8c\x01c\x94\x8a\x06\x00\x00\x00\x00\x00\x01u.";
        let v = from_bytes(data).unwrap();
        assert_eq!(
            v,
            dict(vec![
                (
                    "a",
                    Value::List(vec![
                        Value::Int(1),
                        Value::Float(2.5),
                        Value::None,
                        Value::Bool(true)
                    ])
                ),
                ("b", Value::List(vec!["x".into(), Value::Int(-1)])),
                ("c", Value::Int(1 << 40)),
            ])
        );
    }

    #[test]
    fn memo_get_sees_a_list_filled_after_it_was_memoized() {
        // x = [1, 2]; pickle.dumps({'p': x, 'q': x}, protocol=2)
        let data = b"\x80\x02}q\x00(X\x01\x00\x00\x00pq\x01]q\x02(K\x01K\x02eX\x01\x00\x00\x00qq\x03h\x02u.";
        let v = from_bytes(data).unwrap();
        let both = Value::List(vec![Value::Int(1), Value::Int(2)]);
        assert_eq!(v, dict(vec![("p", both.clone()), ("q", both)]));
    }

    #[test]
    fn object_opcodes_are_named_with_their_offset() {
        // pickle.dumps(collections.OrderedDict(), protocol=4)
        let data = b"\x80\x04\x95\"\x00\x00\x00\x00\x00\x00\x00\x8c\x0bcollections\x94\x8c\x0bOrderedDict\x94\x93\x94)R\x94.";
        let err = from_bytes(data).unwrap_err();
        assert_eq!(
            err,
            PickleError::ObjectOpcode {
                name: "STACK_GLOBAL",
                offset: 39
            }
        );
        assert_eq!(
            err.to_string(),
            "pickle opcode STACK_GLOBAL at byte 39 is not supported (numpy/torch objects cannot be loaded; save plain lists)"
        );
    }

    #[test]
    fn memo_keys_may_be_sparse() {
        // 7, LONG_BINPUT 0xffffffff, POP, LONG_BINGET 0xffffffff: a key far past the data's length.
        let data = b"\x80\x02K\x07r\xff\xff\xff\xff0j\xff\xff\xff\xff.";
        assert_eq!(from_bytes(data).unwrap(), Value::Int(7));
        // BINPUT 3 then MEMOIZE: the memo holds one entry, so MEMOIZE stores key 1.
        let data = b"\x80\x04K\x07q\x03\x94h\x01\x86.";
        assert_eq!(
            from_bytes(data).unwrap(),
            Value::List(vec![Value::Int(7), Value::Int(7)])
        );
    }

    #[test]
    fn declared_lengths_beyond_the_data_are_errors() {
        let err = from_bytes(b"\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7f").unwrap_err();
        assert!(
            matches!(
                err,
                PickleError::Truncated {
                    name: "BINUNICODE8",
                    offset: 2,
                    ..
                }
            ),
            "{err}"
        );
        let err = from_bytes(b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x01\x00N.").unwrap_err();
        assert!(
            matches!(err, PickleError::Truncated { name: "FRAME", .. }),
            "{err}"
        );
    }

    #[test]
    fn structural_errors_are_reported() {
        assert_eq!(
            from_bytes(b"\x80\x02N").unwrap_err(),
            PickleError::MissingStop
        );
        assert!(matches!(
            from_bytes(b"\x80\x02N.x").unwrap_err(),
            PickleError::TrailingData {
                offset: 4,
                count: 1
            }
        ));
        assert!(matches!(
            from_bytes(b"\x80\x06N.").unwrap_err(),
            PickleError::UnsupportedProtocol { version: 6, .. }
        ));
        assert!(matches!(
            from_bytes(b"\xffN.").unwrap_err(),
            PickleError::UnknownOpcode { byte: 0xff, .. }
        ));
        // {1: 2}: an int key.
        let err = from_bytes(b"\x80\x02}K\x01K\x02s.").unwrap_err();
        assert!(err.to_string().contains("dict key is an int"), "{err}");
        // A list that contains itself: l = []; l.append(l)
        assert_eq!(
            from_bytes(b"\x80\x02]q\x00h\x00a.").unwrap_err(),
            PickleError::Cycle
        );
        assert!(matches!(
            from_bytes(b"\x80\x02h\x05.").unwrap_err(),
            PickleError::Malformed { name: "BINGET", .. }
        ));
        assert!(matches!(
            from_bytes(b"(.").unwrap_err(),
            PickleError::Malformed { name: "STOP", .. }
        ));
        assert!(matches!(
            from_bytes(b"\x80\x02F1.0\n.").unwrap_err(),
            PickleError::UnsupportedOpcode { name: "FLOAT", .. }
        ));
    }

    #[test]
    fn shared_references_cannot_blow_up_memory() {
        // l0 = [0]; l(n+1) = [ln, ln]: 2^60 leaves from about 300 bytes.
        let mut data = b"\x80\x02]K\x00aq\x00".to_vec();
        for _ in 0..60 {
            // A new list holding memo 0 twice, then BINPUT 0 re-points memo 0 at it.
            data.extend_from_slice(b"](h\x00h\x00eq\x00");
        }
        data.push(b'.');
        let err = from_bytes(&data).unwrap_err();
        assert!(
            matches!(
                err,
                PickleError::TooLarge { .. } | PickleError::TooDeep { .. }
            ),
            "{err}"
        );
    }

    #[test]
    fn deep_nesting_is_refused() {
        let mut data = b"\x80\x04".to_vec();
        data.extend(std::iter::repeat_n(EMPTY_LIST, 100_000));
        data.extend(std::iter::repeat_n(APPEND, 99_999));
        data.push(STOP);
        assert_eq!(
            from_bytes(&data).unwrap_err(),
            PickleError::TooDeep { limit: MAX_DEPTH }
        );
    }

    #[test]
    fn long_ints_cover_i64_and_no_more() {
        for v in [
            0,
            1,
            -1,
            127,
            128,
            -128,
            -129,
            255,
            1 << 31,
            -(1 << 31) - 1,
            i64::MAX,
            i64::MIN,
        ] {
            let bytes = i64_to_long(v);
            assert_eq!(long_to_i64(&bytes), Some(v), "{v}");
        }
        // 2**63 as CPython writes it (9 bytes) and -2**63 with a redundant sign byte.
        assert_eq!(long_to_i64(&[0, 0, 0, 0, 0, 0, 0, 0x80, 0]), None);
        assert_eq!(
            long_to_i64(&[0, 0, 0, 0, 0, 0, 0, 0x80, 0xff]),
            Some(i64::MIN)
        );
        assert_eq!(i64_to_long(i64::MIN).len(), 8);
        assert_eq!(i64_to_long(-129), vec![0x7f, 0xff]);
    }

    #[test]
    fn writer_frames_large_values_and_reuses_strings() {
        let big = Value::List(
            (0..20_000)
                .map(|i| {
                    dict(vec![
                        ("joint_a", Value::Float(i as f64)),
                        ("joint_b", Value::Int(i)),
                    ])
                })
                .collect(),
        );
        let bytes = to_bytes(&big);
        assert_eq!(&bytes[..3], &[PROTO, 4, FRAME]);
        let first_frame = u64::from_le_bytes(bytes[3..11].try_into().unwrap()) as usize;
        assert!(
            (FRAME_TARGET..FRAME_TARGET + 64).contains(&first_frame),
            "{first_frame}"
        );
        assert_eq!(
            bytes[11 + first_frame],
            FRAME,
            "the next frame starts where the first ends"
        );
        // Each entry costs a memo get (2 bytes) per key instead of the key itself.
        assert!(bytes.len() < 20_000 * 32, "{}", bytes.len());
        assert_eq!(from_bytes(&bytes).unwrap(), big);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn write_then_read_is_exact(v in arb_value(false)) {
            prop_assert_eq!(from_bytes(&to_bytes(&v)).unwrap(), v);
        }

        #[test]
        fn reader_never_panics_on_arbitrary_bytes(data in prop::collection::vec(any::<u8>(), 0..512)) {
            let _ = from_bytes(&data);
        }

        #[test]
        fn reader_never_panics_on_damaged_pickles(
            v in arb_value(false),
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut data = to_bytes(&v);
            for (at, byte) in edits {
                let i = at.index(data.len());
                data[i] = byte;
            }
            let _ = from_bytes(&data);
            let _ = from_bytes(&data[..cut.index(data.len())]);
        }
    }
}
