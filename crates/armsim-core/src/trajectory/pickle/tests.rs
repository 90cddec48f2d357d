//! Unit tests of the pickle reader and writer: CPython's bytes, memo, limits, errors and round
//! trips.

use super::super::tests::arb_value;
use super::opcodes::*;
use super::reader::{MAX_DEPTH, long_to_i64};
use super::writer::{FRAME_TARGET, i64_to_long};
use super::*;
use crate::trajectory::value::Value;
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
    let data =
        b"\x80\x02}q\x00(X\x01\x00\x00\x00pq\x01]q\x02(K\x01K\x02eX\x01\x00\x00\x00qq\x03h\x02u.";
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
