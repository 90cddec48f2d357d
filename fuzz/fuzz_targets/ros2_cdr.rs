//! Fuzzes the ROS 2 CDR decoder on the message types armsim subscribes to: arbitrary bytes
//! behind either byte order's encapsulation header (or none), decoded as each inbound type, and
//! whatever decodes must encode and decode again to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

use armsim_core::protocol::ros2::cdr;
use armsim_core::protocol::ros2::msgs::{
    Float64MultiArray, JointState, JointTrajectory, StdString,
};

/// A macro rather than a generic fn, so the fuzz crate needs no serde dependency of its own.
macro_rules! check {
    ($ty:ty, $payload:expr) => {
        if let Ok(value) = cdr::decode::<$ty>($payload) {
            let bytes = cdr::encode(&value);
            let again: $ty = cdr::decode(&bytes).expect("our own bytes decode");
            assert_eq!(cdr::encode(&again), bytes);
        }
    };
}

fuzz_target!(|data: &[u8]| {
    // The first byte picks the header, so most inputs reach the body rather than the
    // encapsulation check.
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let mut payload = match head % 3 {
        0 => vec![0, 1, 0, 0],
        1 => vec![0, 0, 0, 0],
        _ => Vec::new(),
    };
    payload.extend_from_slice(rest);
    check!(JointState, &payload);
    check!(Float64MultiArray, &payload);
    check!(JointTrajectory, &payload);
    check!(StdString, &payload);
});
