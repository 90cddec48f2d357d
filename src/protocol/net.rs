//! What every listener thread shares: an accept loop that backs off when `accept` fails (for
//! example when the process runs out of file descriptors) instead of spinning on the error, and
//! a log line limiter so that a flood of one failure writes one line a second, with a count,
//! and peeks and sends that leave a socket's blocking mode alone.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::ops::ControlFlow;
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use bevy::log::warn;

/// First pause after a failed `accept`; it doubles on each further failure.
const BACKOFF_START: Duration = Duration::from_millis(5);
/// Longest pause between two attempts while `accept` keeps failing.
const BACKOFF_MAX: Duration = Duration::from_millis(500);

/// One log line a second for the failed accepts of every listener together: running out of file
/// descriptors is the process's condition, and each listener that takes a connection meets it.
static ACCEPT_FAILURES: Mutex<RateLimited> = Mutex::new(RateLimited::new(Duration::from_secs(1)));

/// Accepts connections until `on_stream` says to stop; it never gives up on the listener. A failed
/// `accept` (EMFILE, ENFILE, ENOBUFS…), or a connection `on_stream` could not set up (it
/// returns the error), pauses the loop, 5 ms at first and up to 0.5 s while failures continue,
/// and is logged at most once a second for all listeners together, with a count of the lines
/// held back.
pub fn accept_loop(
    listener: &TcpListener,
    name: &str,
    mut on_stream: impl FnMut(TcpStream) -> io::Result<ControlFlow<()>>,
) {
    let mut backoff = BACKOFF_START;
    loop {
        let failure = match listener.accept() {
            Ok((stream, _)) => match on_stream(stream) {
                Ok(ControlFlow::Break(())) => return,
                Ok(ControlFlow::Continue(())) => None,
                Err(e) => Some(format!("cannot serve a new connection: {e}")),
            },
            Err(e) if e.kind() == io::ErrorKind::Interrupted => None,
            Err(e) => Some(format!("accept failed: {e}")),
        };
        let Some(failure) = failure else {
            backoff = BACKOFF_START;
            continue;
        };
        let allowed = ACCEPT_FAILURES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .allow();
        if let Some(suppressed) = allowed {
            warn!(
                "{name}: {failure}{}; retrying in {} ms",
                suppressed_note(suppressed),
                backoff.as_millis()
            );
        }
        thread::sleep(backoff);
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// " (N more like it not logged)" when lines were held back, else nothing.
pub fn suppressed_note(suppressed: u64) -> String {
    if suppressed == 0 {
        String::new()
    } else {
        format!(" ({suppressed} more like it not logged)")
    }
}

/// Lets one log line through per interval and counts the ones it held back.
#[derive(Debug)]
pub struct RateLimited {
    interval: Duration,
    last: Option<Instant>,
    suppressed: u64,
}

impl RateLimited {
    pub const fn new(interval: Duration) -> Self {
        Self {
            interval,
            last: None,
            suppressed: 0,
        }
    }

    /// `Some(held back since the last line)` if a line may be written now, else `None`.
    pub fn allow(&mut self) -> Option<u64> {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) < self.interval)
        {
            self.suppressed += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.suppressed))
    }
}

/// Reads from `stream` with `deadline` as the limit of this read and every later one: the
/// socket's timeout is set to what is left before each read, so bytes trickling in one at a
/// time cannot stretch it. Past the deadline: `TimedOut` (a timed-out read is `WouldBlock`).
pub fn read_before(mut stream: &TcpStream, deadline: Instant, buf: &mut [u8]) -> io::Result<usize> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::ErrorKind::TimedOut.into());
    }
    stream.set_read_timeout(Some(left))?;
    io::Read::read(&mut stream, buf)
}

/// What a socket shows without anything being taken from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerState {
    /// Connected, nothing unread.
    Alive,
    /// Bytes wait to be read; whether the peer is still there shows only after them.
    Unread,
    /// Closed by the peer (end of stream) or reset.
    Gone,
}

/// Peeks at a socket without blocking and without touching its file status flags, so another
/// thread may be reading the same socket meanwhile.
#[cfg(unix)]
pub fn peer_state(stream: &TcpStream) -> PeerState {
    use std::os::fd::AsRawFd;
    let mut b = [0u8; 1];
    // SAFETY: a one-byte buffer we own, and a descriptor that `stream` keeps open.
    let n = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            b.as_mut_ptr().cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    match n {
        0 => PeerState::Gone,
        n if n > 0 => PeerState::Unread,
        _ => match io::Error::last_os_error().kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => PeerState::Alive,
            _ => PeerState::Gone,
        },
    }
}

/// Sends what the socket takes now, without blocking and without touching its file status
/// flags (another thread may be blocked reading the same socket): `WouldBlock` when it is full.
#[cfg(unix)]
pub fn send_nonblocking(stream: &TcpStream, buf: &[u8]) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    // SAFETY: a buffer we borrow for the call, and a descriptor that `stream` keeps open.
    let n = unsafe {
        libc::send(
            stream.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Without a flag for one non-blocking send, a plain write (the socket's write timeout bounds it).
#[cfg(not(unix))]
pub fn send_nonblocking(mut stream: &TcpStream, buf: &[u8]) -> io::Result<usize> {
    io::Write::write(&mut stream, buf)
}

/// Without a non-blocking peek that leaves the socket's flags alone, a peer counts as present.
#[cfg(not(unix))]
pub fn peer_state(_stream: &TcpStream) -> PeerState {
    PeerState::Alive
}

/// Whether a listener bound to `addr` can be reached from beyond this machine (anything but a
/// loopback address: a LAN address, 0.0.0.0, ::).
pub fn exposed(addr: std::net::SocketAddr) -> bool {
    !from_loopback(addr)
}

/// Whether a connection from `peer` comes from this machine.
pub fn from_loopback(peer: std::net::SocketAddr) -> bool {
    peer.ip().to_canonical().is_loopback()
}

/// The pairing key a request target's query carries (`…?x=1&key=KEY`).
pub fn key_in_query(query: &str) -> Option<&str> {
    query.split('&').find_map(|kv| kv.strip_prefix("key="))
}

/// Checks a request's pairing key against `key`; `Err` says what was wrong with it for the
/// log (`"no"` key or `"a wrong"` one).
pub fn check_pairing_key(given: Option<&str>, key: &str) -> Result<(), &'static str> {
    match given {
        Some(g) if constant_time_eq(g.as_bytes(), key.as_bytes()) => Ok(()),
        Some(_) => Err("a wrong"),
        None => Err("no"),
    }
}

/// A listener without authentication logs one loud line when it is opened beyond loopback
/// (`what`: what anyone who reaches it can then do). Returns, for an exposed listener, the note
/// the panel adds to its line.
pub fn warn_if_exposed(protocol: &str, addr: std::net::SocketAddr, what: &str) -> Option<String> {
    if !exposed(addr) {
        return None;
    }
    warn!(
        "{protocol}: OPEN TO THE NETWORK WITHOUT AUTHENTICATION on {addr}: anyone who can reach \
         this port can {what}. Bind it to 127.0.0.1 unless you trust every host that can reach it"
    );
    Some(" (open to the network, no key)".to_owned())
}

/// Compares two keys in time independent of where they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_compare_whole() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert_eq!(key_in_query("x=1&key=abc&y=2"), Some("abc"));
        assert_eq!(key_in_query("x=1"), None);
        assert_eq!(check_pairing_key(Some("abc"), "abc"), Ok(()));
        assert_eq!(check_pairing_key(Some("abd"), "abc"), Err("a wrong"));
        assert_eq!(check_pairing_key(None, "abc"), Err("no"));
    }

    #[test]
    fn one_line_per_interval_with_the_count_of_the_rest() {
        let mut log = RateLimited::new(Duration::from_secs(3600));
        assert_eq!(log.allow(), Some(0));
        for _ in 0..5 {
            assert_eq!(log.allow(), None);
        }
        log.last = Some(Instant::now() - Duration::from_secs(7200));
        assert_eq!(log.allow(), Some(5));
    }

    #[test]
    fn peeking_tells_alive_unread_and_gone_apart() {
        use std::io::Write;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        assert_eq!(peer_state(&server), PeerState::Alive);
        client.write_all(b"x").unwrap();
        client.flush().unwrap();
        let wait_for = |want: PeerState| {
            let deadline = Instant::now() + Duration::from_secs(5);
            while peer_state(&server) != want && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(1));
            }
            peer_state(&server)
        };
        assert_eq!(wait_for(PeerState::Unread), PeerState::Unread);
        drop(client);
        // The byte is still unread, so the close hides behind it.
        assert_eq!(peer_state(&server), PeerState::Unread);
        let mut b = [0u8; 1];
        assert_eq!(io::Read::read(&mut &server, &mut b).unwrap(), 1);
        assert_eq!(wait_for(PeerState::Gone), PeerState::Gone);
    }
}
