//! Runs one test inside a private network namespace, for every test that opens a DDS
//! participant: DDS discovery multicasts on every interface, and no test may send a packet off
//! this machine.
//!
//! The test calls [`isolated`] first and returns when it says `false`:
//!
//! ```ignore
//! #[test]
//! fn joint_states_arrive() {
//!     if !netns::isolated("joint_states_arrive") {
//!         return; // the body ran (and passed) in the namespace
//!     }
//!     // … DDS …
//! }
//! ```
//!
//! Outside the namespace, `isolated` re-runs this test binary, filtered to exactly this test,
//! under `unshare -n` with loopback up, multicast on and a `224.0.0.0/4` route on `lo`, and
//! asserts that it passed. If the namespace cannot be made the test fails: it never falls back
//! to the host network. Inside, it checks that the namespace is what it should be (a network
//! namespace other than the outer one, holding only `lo`, up, with multicast) before the body
//! runs. Every process the body starts (an `armsim --ros2` child, a peer) inherits it.
//!
//! The checks read `/proc/self/net` and ask the kernel with `ioctl`, not `/sys/class/net`:
//! sysfs shows the interfaces of the namespace that mounted it (the host's), whatever the
//! reader's namespace is.

use std::ffi::CString;
use std::path::PathBuf;
use std::process::Command;

/// Set (to the outer namespace's id) in the re-run binary's environment.
const IN_NETNS: &str = "ARMSIM_IN_NETNS";
/// The test the re-run must run: the inner `isolated` checks it was called with that name.
const TEST: &str = "ARMSIM_NETNS_TEST";
/// A file the inner `isolated` creates once its checks pass, so the outer one knows the body
/// really ran (a filter that matched no test would also exit 0).
const MARKER: &str = "ARMSIM_NETNS_MARKER";

/// The namespace set-up: loopback up, multicast on it and a `224.0.0.0/4` route to it, each step
/// checked (`&&`), then the test binary in place of the shell.
const SETUP: &str = "ip link set lo up && ip link set lo multicast on && \
                     ip route add 224.0.0.0/4 dev lo && exec \"$0\" \"$@\"";

/// The longest one re-run may take; only against a hang, the bodies have their own deadlines.
const TIMEOUT_S: &str = "600";

/// Whether the caller is inside its private network namespace and should run its body
/// (`true`), or has just run it there and passed (`false`). `test` is the test's name as
/// libtest knows it (the function name, with its module path if it is in a module).
///
/// Panics when the namespace cannot be made, when the re-run fails, or when the namespace is
/// not private.
pub fn isolated(test: &str) -> bool {
    match std::env::var_os(IN_NETNS) {
        Some(outer) => {
            inside(test, &outer.to_string_lossy());
            true
        }
        None => {
            outside(test);
            false
        }
    }
}

/// Re-runs `test` in a fresh network namespace and checks that it ran and passed.
fn outside(test: &str) {
    // libtest names each test's thread after the test: a name copied from another test (or
    // misspelt) would otherwise run the wrong test, or none.
    if let Some(thread) = std::thread::current().name()
        && thread != "main"
    {
        assert_eq!(
            thread, test,
            "netns::isolated called with another test's name"
        );
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let marker = marker_path(test);
    let _ = std::fs::remove_file(&marker);
    let output = Command::new("timeout")
        .args(["-k", "10", TIMEOUT_S, "unshare", "-n", "sh", "-c", SETUP])
        .arg(&exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(IN_NETNS, net_namespace_id())
        .env(TEST, test)
        .env(MARKER, &marker)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run `timeout unshare -n …` for {test} ({e}); DDS tests need a private network namespace (root, util-linux, iproute2) and never use the host network")
        });
    // Through print!, so libtest shows it only when this test fails.
    print!("{}", String::from_utf8_lossy(&output.stdout));
    eprint!("{}", String::from_utf8_lossy(&output.stderr));
    let ran = marker.exists();
    let _ = std::fs::remove_file(&marker);
    match output.status.code() {
        Some(0) => {}
        Some(124) | Some(137) => {
            panic!("{test} in its network namespace ran past {TIMEOUT_S} s and was killed")
        }
        _ if !ran => panic!(
            "{test}: could not make or enter a private network namespace ({}); DDS tests never fall back to the host network (they need root, util-linux's unshare and iproute2)",
            output.status
        ),
        _ => panic!(
            "{test} failed in its network namespace ({}); its output is above",
            output.status
        ),
    }
    assert!(
        ran,
        "{test} did not run in the namespace (is {test:?} its exact name?)"
    );
}

/// Checks the namespace before the body runs, and leaves the marker for the outer run.
fn inside(test: &str, outer: &str) {
    let expected = std::env::var(TEST).unwrap_or_default();
    assert_eq!(
        expected, test,
        "the namespace was made for {expected:?}, but {test:?} runs in it"
    );
    let here = net_namespace_id();
    assert_ne!(
        here, outer,
        "{IN_NETNS} is set but this process is in the outer network namespace"
    );
    assert_eq!(
        interfaces(),
        ["lo"],
        "the namespace must hold only the loopback interface"
    );
    let flags = interface_flags("lo");
    let want = (libc::IFF_UP | libc::IFF_MULTICAST) as u32;
    assert_eq!(
        flags & want,
        want,
        "lo must be up with multicast (flags {flags:#x})"
    );
    assert!(
        multicast_route_on_lo(),
        "no 224.0.0.0/4 route on lo in the namespace"
    );
    let marker = std::env::var_os(MARKER).expect("the outer run names a marker file");
    std::fs::write(&marker, test).expect("the marker file can be written");
}

/// Where the inner run leaves its marker: per outer process and test, so parallel outer runs
/// of different tests (or test binaries) never share one.
fn marker_path(test: &str) -> PathBuf {
    let safe: String = test
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    std::env::temp_dir().join(format!("armsim-netns-{}-{safe}.ran", std::process::id()))
}

/// This process's network namespace (`net:[4026531840]`).
fn net_namespace_id() -> String {
    std::fs::read_link("/proc/self/ns/net")
        .expect("/proc/self/ns/net is readable")
        .to_string_lossy()
        .into_owned()
}

/// The interfaces of this process's network namespace (`/proc/self/net/dev`, whose first two
/// lines are headers).
fn interfaces() -> Vec<String> {
    let dev = std::fs::read_to_string("/proc/self/net/dev").expect("/proc/self/net/dev");
    dev.lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .map(|n| n.trim().to_owned())
        .collect()
}

/// `SIOCGIFFLAGS` of `name` in this process's network namespace.
fn interface_flags(name: &str) -> u32 {
    // SAFETY: a plain socket, closed below; ifreq is zeroed and gets a NUL-terminated name
    // shorter than IFNAMSIZ, and the ioctl only writes the flags into it.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let mut req: libc::ifreq = std::mem::zeroed();
        let cname = CString::new(name).unwrap();
        let bytes = cname.as_bytes_with_nul();
        assert!(bytes.len() <= req.ifr_name.len());
        for (d, s) in req.ifr_name.iter_mut().zip(bytes) {
            *d = *s as libc::c_char;
        }
        let rc = libc::ioctl(fd, libc::SIOCGIFFLAGS as _, &mut req);
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        assert_eq!(rc, 0, "SIOCGIFFLAGS {name}: {err}");
        req.ifr_ifru.ifru_flags as u16 as u32
    }
}

/// Whether `/proc/self/net/route` has 224.0.0.0/4 on `lo` (addresses in hex, network byte
/// order read as a little-endian u32: 224.0.0.0 is `000000E0`, /4 is `000000F0`).
fn multicast_route_on_lo() -> bool {
    let routes = std::fs::read_to_string("/proc/self/net/route").expect("/proc/self/net/route");
    routes.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 7 && f[0] == "lo" && f[1] == "000000E0" && f[7] == "000000F0"
    })
}
