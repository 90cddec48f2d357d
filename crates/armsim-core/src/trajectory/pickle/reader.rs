//! The pickle reader: a stack machine over an arena (so memoized containers are shared as in
//! Python), then a budgeted copy into a `Value` tree.

use std::collections::HashMap;

use super::error::PickleError;
use super::opcodes::*;
use crate::trajectory::value::Value;

/// Decodes one pickle that makes up the whole of `data`.
///
/// Memory stays proportional to `data.len()`: declared lengths are checked against the bytes
/// left before anything is allocated, and the values reachable through shared references (memo
/// gets) are capped at [`expansion_limit`] bytes.
pub fn from_bytes(data: &[u8]) -> Result<Value, PickleError> {
    Reader::new(data).run()
}

/// How many bytes of values a pickle of `input_len` bytes may expand to. Unshared data expands
/// a few times (a float: 9 bytes in, a 32-byte `Value` out; a memoized dict key: 2 bytes in, a
/// `String` out); the rest is room for legitimately shared lists.
pub fn expansion_limit(input_len: usize) -> usize {
    input_len.saturating_mul(64).saturating_add(64 << 20)
}

/// Deeper than any trajectory; shallow enough that building and dropping values cannot overflow
/// a thread's stack.
pub(super) const MAX_DEPTH: usize = 256;

/// A stack slot. Containers live in an arena and are referred to by index, because a pickle may
/// memoize a list while it is still empty and fill it afterwards; every later memo get must see
/// the same (filled) list, as Python's shared references do. Strings go there too, so that a
/// memoized name is stored once; numbers stay inline, which keeps the arena small.
#[derive(Clone, Copy)]
pub(super) enum Item {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Node(usize),
}

pub(super) enum Node {
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
pub(super) struct Memo {
    pub(super) dense: Vec<Option<Item>>,
    pub(super) sparse: HashMap<u32, Item>,
    pub(super) len: usize,
}

impl Memo {
    pub(super) fn put(&mut self, key: u32, item: Item, dense_limit: usize) {
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

    pub(super) fn get(&self, key: u32) -> Option<Item> {
        match self.dense.get(key as usize) {
            Some(slot) => *slot,
            None => self.sparse.get(&key).copied(),
        }
    }
}

pub(super) struct Reader<'a> {
    pub(super) data: &'a [u8],
    pub(super) pos: usize,
    /// Where the current opcode started, for error messages.
    pub(super) at: usize,
    pub(super) name: &'static str,
    pub(super) nodes: Vec<Node>,
    pub(super) stack: Vec<Item>,
    /// Stack lengths at each open MARK (CPython's metastack).
    pub(super) marks: Vec<usize>,
    pub(super) memo: Memo,
}

impl<'a> Reader<'a> {
    pub(super) fn new(data: &'a [u8]) -> Self {
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

    pub(super) fn malformed(&self, reason: impl Into<String>) -> PickleError {
        PickleError::Malformed {
            name: self.name,
            offset: self.at,
            reason: reason.into(),
        }
    }

    pub(super) fn take(&mut self, n: u64) -> Result<&'a [u8], PickleError> {
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

    pub(super) fn array<const N: usize>(&mut self) -> Result<[u8; N], PickleError> {
        let bytes = self.take(N as u64)?;
        let mut out = [0; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    pub(super) fn push_node(&mut self, node: Node) {
        self.nodes.push(node);
        self.stack.push(Item::Node(self.nodes.len() - 1));
    }

    /// The stack below the innermost MARK is out of reach until POP_MARK or a mark-consuming
    /// opcode, as in CPython.
    pub(super) fn base(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }

    pub(super) fn pop(&mut self) -> Result<Item, PickleError> {
        if self.stack.len() <= self.base() {
            return Err(self.malformed("stack underflow"));
        }
        Ok(self.stack.pop().expect("checked above"))
    }

    pub(super) fn top(&self) -> Result<Item, PickleError> {
        if self.stack.len() <= self.base() {
            return Err(self.malformed("stack underflow"));
        }
        Ok(*self.stack.last().expect("checked above"))
    }

    pub(super) fn pop_mark(&mut self) -> Result<Vec<Item>, PickleError> {
        let base = self
            .marks
            .pop()
            .ok_or_else(|| self.malformed("no MARK to pop"))?;
        Ok(self.stack.split_off(base))
    }

    pub(super) fn string(&mut self, len: u64) -> Result<(), PickleError> {
        let bytes = self.take(len)?;
        let s =
            std::str::from_utf8(bytes).map_err(|_| self.malformed("string is not valid UTF-8"))?;
        self.push_node(Node::Str(s.to_owned()));
        Ok(())
    }

    pub(super) fn long(&mut self, len: u64) -> Result<(), PickleError> {
        let bytes = self.take(len)?;
        let v = long_to_i64(bytes)
            .ok_or_else(|| self.malformed("integer does not fit in 64 signed bits"))?;
        self.stack.push(Item::Int(v));
        Ok(())
    }

    pub(super) fn memo_get(&mut self, key: u32) -> Result<(), PickleError> {
        let item = self
            .memo
            .get(key)
            .ok_or_else(|| self.malformed(format!("memo key {key} was never stored")))?;
        self.stack.push(item);
        Ok(())
    }

    pub(super) fn memo_put(&mut self, key: u32) -> Result<(), PickleError> {
        let item = self.top()?;
        self.memo.put(key, item, self.data.len());
        Ok(())
    }

    pub(super) fn kind(&self, item: Item) -> &'static str {
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

    pub(super) fn check_key(&self, key: Item) -> Result<usize, PickleError> {
        match key {
            Item::Node(i) if matches!(self.nodes[i], Node::Str(_)) => Ok(i),
            _ => Err(self.malformed(format!(
                "dict key is {}, only string keys are supported",
                self.kind(key)
            ))),
        }
    }

    pub(super) fn extend_list(&mut self, list: Item, items: Vec<Item>) -> Result<(), PickleError> {
        if let Item::Node(i) = list
            && let Node::List(v) = &mut self.nodes[i]
        {
            v.extend(items);
            return Ok(());
        }
        Err(self.malformed(format!("appending to {}, not a list", self.kind(list))))
    }

    pub(super) fn set_items(&mut self, dict: Item, items: Vec<Item>) -> Result<(), PickleError> {
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

    pub(super) fn run(mut self) -> Result<Value, PickleError> {
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
    pub(super) fn materialize(&self, root: Item) -> Result<Value, PickleError> {
        let mut b = Builder {
            nodes: &self.nodes,
            visiting: vec![false; self.nodes.len()],
            spent: 0,
            limit: expansion_limit(self.data.len()),
        };
        b.build(root, 0)
    }
}

pub(super) struct Builder<'a> {
    pub(super) nodes: &'a [Node],
    pub(super) visiting: Vec<bool>,
    pub(super) spent: usize,
    pub(super) limit: usize,
}

impl Builder<'_> {
    pub(super) fn spend(&mut self, bytes: usize) -> Result<(), PickleError> {
        self.spent = self.spent.saturating_add(bytes);
        if self.spent > self.limit {
            return Err(PickleError::TooLarge { limit: self.limit });
        }
        Ok(())
    }

    pub(super) fn build(&mut self, item: Item, depth: usize) -> Result<Value, PickleError> {
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

    pub(super) fn enter(&mut self, idx: usize) -> Result<(), PickleError> {
        if std::mem::replace(&mut self.visiting[idx], true) {
            return Err(PickleError::Cycle);
        }
        Ok(())
    }
}

/// Two's-complement little-endian bytes (LONG1/LONG4's argument) to i64, if they fit.
pub(super) fn long_to_i64(bytes: &[u8]) -> Option<i64> {
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
