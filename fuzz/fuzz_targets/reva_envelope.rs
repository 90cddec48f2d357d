//! Fuzzes the TeleSpace revA envelope decoder with arbitrary text: every input is decoded or
//! refused with a code and a reason, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

use armsim_core::protocol::teleop::envelope;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Err(e) = envelope::decode(&text, 64 * 1024) {
        assert!(!e.code().is_empty());
    }
});
