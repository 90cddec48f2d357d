//! Pickle opcodes (CPython's `Lib/pickle.py` names), as the reader and the writer use them, and
//! their names for error messages.

// Opcodes, as named in CPython's Lib/pickle.py.
pub(super) const MARK: u8 = b'(';
pub(super) const STOP: u8 = b'.';
pub(super) const POP: u8 = b'0';
pub(super) const POP_MARK: u8 = b'1';
pub(super) const DUP: u8 = b'2';
pub(super) const BININT: u8 = b'J';
pub(super) const BININT1: u8 = b'K';
pub(super) const BININT2: u8 = b'M';
pub(super) const NONE: u8 = b'N';
pub(super) const BINUNICODE: u8 = b'X';
pub(super) const APPEND: u8 = b'a';
pub(super) const DICT: u8 = b'd';
pub(super) const EMPTY_DICT: u8 = b'}';
pub(super) const APPENDS: u8 = b'e';
pub(super) const BINGET: u8 = b'h';
pub(super) const LONG_BINGET: u8 = b'j';
pub(super) const LIST: u8 = b'l';
pub(super) const EMPTY_LIST: u8 = b']';
pub(super) const BINPUT: u8 = b'q';
pub(super) const LONG_BINPUT: u8 = b'r';
pub(super) const SETITEM: u8 = b's';
pub(super) const TUPLE: u8 = b't';
pub(super) const EMPTY_TUPLE: u8 = b')';
pub(super) const SETITEMS: u8 = b'u';
pub(super) const BINFLOAT: u8 = b'G';
pub(super) const PROTO: u8 = 0x80;
pub(super) const TUPLE1: u8 = 0x85;
pub(super) const TUPLE2: u8 = 0x86;
pub(super) const TUPLE3: u8 = 0x87;
pub(super) const NEWTRUE: u8 = 0x88;
pub(super) const NEWFALSE: u8 = 0x89;
pub(super) const LONG1: u8 = 0x8a;
pub(super) const LONG4: u8 = 0x8b;
pub(super) const SHORT_BINUNICODE: u8 = 0x8c;
pub(super) const BINUNICODE8: u8 = 0x8d;
pub(super) const MEMOIZE: u8 = 0x94;
pub(super) const FRAME: u8 = 0x95;

/// Every opcode CPython knows, for error messages; the bool says whether it builds an instance
/// of a named class (the numpy/torch case).
pub(super) fn opcode_name(op: u8) -> Option<(&'static str, bool)> {
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
