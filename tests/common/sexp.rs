//! RCSSServerMJ test peers: an agent or monitor on a real TCP socket, framed and parsed by the
//! server's own sans-IO codec (`framing`, `sexp`), so no test re-implements the length prefix.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use armsim::protocol::sexp::framing::{FrameDecoder, encode_frame};
use armsim::protocol::sexp::{Sexp, parse_all};

/// One agent or monitor connection.
pub struct Peer {
    pub s: TcpStream,
    decoder: FrameDecoder,
}

impl Peer {
    pub fn open(addr: SocketAddr) -> Self {
        let s = TcpStream::connect(addr).expect("connects");
        s.set_nodelay(true).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Self {
            s,
            decoder: FrameDecoder::default(),
        }
    }

    /// An agent that has sent `(init arm6 teamA 1)` (its first perception not read yet).
    pub fn agent(addr: SocketAddr) -> Self {
        let mut a = Self::open(addr);
        a.send("(init arm6 teamA 1)");
        a
    }

    /// Sends `text` as one message (prefix and payload in one write).
    pub fn send(&mut self, text: &str) {
        let mut frame = Vec::new();
        encode_frame(text.as_bytes(), &mut frame).expect("fits a 32-bit prefix");
        self.s.write_all(&frame).expect("send");
    }

    /// One message's payload; None if the server closed the connection.
    pub fn recv_bytes(&mut self) -> Option<Vec<u8>> {
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(frame) = self.decoder.next_frame().expect("server frames fit") {
                return Some(frame);
            }
            match self.s.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.decoder.push(&chunk[..n]),
            }
        }
    }

    /// One message's expressions; None if the server closed the connection.
    pub fn recv(&mut self) -> Option<Vec<Sexp>> {
        let buf = self.recv_bytes()?;
        Some(
            parse_all(&buf)
                .map(|r| r.expect("server sends well-formed expressions"))
                .collect(),
        )
    }

    /// Reads until a message satisfies `pred`.
    pub fn until(&mut self, what: &str, mut pred: impl FnMut(&[Sexp]) -> bool) -> Vec<Sexp> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            assert!(Instant::now() < deadline, "no {what} within 10 s");
            let msg = self
                .recv()
                .unwrap_or_else(|| panic!("closed while waiting for {what}"));
            if pred(&msg) {
                return msg;
            }
        }
    }

    /// Reads a monitor's frames until one shows sim time `t` or later (`(time (now T))`); the
    /// first frames may wait for a start-up (offscreen cameras warming up), so reads wait up to
    /// 60 s here. Returns the time seen.
    pub fn until_sim_time(&mut self, t: f64) -> f64 {
        self.s
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            assert!(Instant::now() < deadline, "sim time {t} s not reached");
            let msg = self
                .recv()
                .unwrap_or_else(|| panic!("closed before sim time {t} s"));
            let now = msg
                .iter()
                .find(|e| e.is("time"))
                .and_then(|e| e.find("now"))
                .and_then(|n| n.arg(0))
                .and_then(|a| a.as_f64().ok());
            if let Some(now) = now
                && now >= t
            {
                return now;
            }
        }
    }

    /// Whether the server has closed the connection (nothing buffered is left to read).
    pub fn closed(&mut self) -> bool {
        if self.decoder.buffered() > 0 {
            return false;
        }
        let mut b = [0u8; 1];
        matches!(self.s.read(&mut b), Ok(0) | Err(_))
    }
}
