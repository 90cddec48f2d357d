//! The pickle writer: protocol 4 as CPython writes it (opcode choices, 64 KiB frames, memoized
//! strings), streamed one frame at a time.

use std::collections::HashMap;
use std::io::{self, Write};

use super::opcodes::*;
use crate::trajectory::value::Value;

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

/// The shortest two's-complement little-endian encoding of `v`, as CPython's `encode_long`.
pub(super) fn i64_to_long(v: i64) -> Vec<u8> {
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
pub(super) const FRAME_TARGET: usize = 64 * 1024;
pub(super) const FRAME_MIN: usize = 4;
/// CPython's `_BATCHSIZE` for APPENDS and SETITEMS.
pub(super) const BATCH: usize = 1000;

pub(super) struct Writer<'v, W> {
    pub(super) out: W,
    pub(super) frame: Vec<u8>,
    pub(super) memo: HashMap<&'v str, u32>,
}

impl<'v, W: Write> Writer<'v, W> {
    /// Frames are cut only between values, never inside an opcode, as CPython's framer does.
    pub(super) fn commit_frame(&mut self) -> io::Result<()> {
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

    pub(super) fn value(&mut self, v: &'v Value) -> io::Result<()> {
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

    pub(super) fn string(&mut self, s: &'v str) {
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

pub(super) fn write_int(f: &mut Vec<u8>, i: i64) {
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
