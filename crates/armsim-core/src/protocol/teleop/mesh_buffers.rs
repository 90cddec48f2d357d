//! The robot's meshes for a browser: each part of each mesh asset as one compact binary buffer,
//! served by the headset page at `/meshes/<mesh>/<part>.bin` and described under
//! `robot.meshes` in `/scene.json` ([`super::scene_info`]). Built once, when the server starts.
//!
//! # Format
//!
//! All little-endian, no padding:
//!
//! | bytes                 | what                                                    |
//! | --------------------- | ------------------------------------------------------- |
//! | 4                     | `V`: vertex count, u32                                  |
//! | 4                     | `T`: triangle count, u32                                |
//! | `V × 3 × 4`           | positions, f32 x, y, z per vertex, in the mesh's units  |
//! | `T × 3 × 2` or `× 4`  | indices, three per triangle                             |
//!
//! The indices are **u16 when `V < 65536`** (every index then fits, and it halves their size;
//! WebGL takes a `Uint16Array` index as it is), **u32 otherwise**: a reader picks the width from
//! `V` alone. Positions start at byte 8 and indices at `8 + 12 V`, both multiples of 4, so a
//! reader can view them in place (`Float32Array`, `Uint16Array`/`Uint32Array`). Positions are
//! the file's, unscaled: the geom's `scale` and colour are in `/scene.json`.
//!
//! Each buffer is also kept gzipped ([`MeshBuffer::gzip`]) when that makes it smaller, for a
//! client that sends `Accept-Encoding: gzip`.

use std::io::Write;
use std::sync::Arc;

use flate2::Compression;
use flate2::write::GzEncoder;

use crate::robot::MeshAsset;
use crate::robot::mesh::MeshPart;

/// The header's size: the vertex and triangle counts.
pub const HEADER_BYTES: usize = 8;

/// Whether a buffer of `vertices` vertices carries u16 indices (else u32).
pub fn u16_indices(vertices: usize) -> bool {
    vertices < 65536
}

/// The URL path of part `part` of mesh `mesh`.
pub fn path(mesh: usize, part: usize) -> String {
    format!("/meshes/{mesh}/{part}.bin")
}

/// Mesh and part of a URL path made by [`path`] (`/meshes/3/0.bin`); `None` for any other.
pub fn parse_path(path: &str) -> Option<(usize, usize)> {
    let rest = path.strip_prefix("/meshes/")?;
    let (mesh, part) = rest.split_once('/')?;
    let part = part.strip_suffix(".bin")?;
    let number = |s: &str| {
        // Digits only: no sign, no spaces, no leading zeros beyond "0", so one part has one path.
        let canonical = !s.is_empty()
            && s.bytes().all(|b| b.is_ascii_digit())
            && (s == "0" || !s.starts_with('0'));
        canonical.then(|| s.parse().ok()).flatten()
    };
    Some((number(mesh)?, number(part)?))
}

/// Encodes one part in the format above.
pub fn encode(part: &MeshPart) -> Vec<u8> {
    encode_raw(&part.positions, &part.triangles)
}

fn encode_raw(positions: &[[f32; 3]], triangles: &[[u32; 3]]) -> Vec<u8> {
    let narrow = u16_indices(positions.len());
    let index_bytes = if narrow { 2 } else { 4 };
    let mut out =
        Vec::with_capacity(HEADER_BYTES + positions.len() * 12 + triangles.len() * 3 * index_bytes);
    out.extend_from_slice(&count(positions.len()).to_le_bytes());
    out.extend_from_slice(&count(triangles.len()).to_le_bytes());
    for p in positions {
        for c in p {
            out.extend_from_slice(&c.to_le_bytes());
        }
    }
    for &i in triangles.iter().flatten() {
        if narrow {
            // The loaders keep indices below the vertex count, so this never saturates; an
            // out-of-range index would be one in u32 too.
            out.extend_from_slice(&u16::try_from(i).unwrap_or(u16::MAX).to_le_bytes());
        } else {
            out.extend_from_slice(&i.to_le_bytes());
        }
    }
    out
}

fn count(n: usize) -> u32 {
    u32::try_from(n).expect("a mesh part has fewer than 2^32 vertices and triangles")
}

/// A decoded buffer: positions and triangles, as [`MeshPart`] has them.
pub type Decoded = (Vec<[f32; 3]>, Vec<[u32; 3]>);

/// Decodes a buffer made by [`encode`] (the reference reader; the page has its own in JS).
pub fn decode(bytes: &[u8]) -> Result<Decoded, String> {
    let word = |at: usize| -> Result<[u8; 4], String> {
        bytes
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| format!("truncated at byte {at} of {}", bytes.len()))
    };
    let v = u32::from_le_bytes(word(0)?) as usize;
    let t = u32::from_le_bytes(word(4)?) as usize;
    let narrow = u16_indices(v);
    let index_bytes = if narrow { 2 } else { 4 };
    let expected = HEADER_BYTES + v * 12 + t * 3 * index_bytes;
    if bytes.len() != expected {
        return Err(format!(
            "{v} vertices and {t} triangles take {expected} bytes, got {}",
            bytes.len()
        ));
    }
    let float = |at: usize| word(at).map(f32::from_le_bytes);
    let positions = (0..v)
        .map(|i| {
            let at = HEADER_BYTES + i * 12;
            Ok([float(at)?, float(at + 4)?, float(at + 8)?])
        })
        .collect::<Result<Vec<_>, String>>()?;
    let base = HEADER_BYTES + v * 12;
    let index = |k: usize| -> u32 {
        if narrow {
            let at = base + k * 2;
            u32::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]))
        } else {
            let at = base + k * 4;
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        }
    };
    let triangles = (0..t)
        .map(|k| [index(3 * k), index(3 * k + 1), index(3 * k + 2)])
        .collect();
    Ok((positions, triangles))
}

/// `raw` gzipped, if that is smaller than `raw`.
pub fn gzip_if_smaller(raw: &[u8]) -> Option<Vec<u8>> {
    let mut gz = GzEncoder::new(Vec::with_capacity(raw.len() / 2), Compression::default());
    gz.write_all(raw).ok()?;
    let zipped = gz.finish().ok()?;
    (zipped.len() < raw.len()).then_some(zipped)
}

/// Un-gzips a buffer as a browser does for `Content-Encoding: gzip` (the reference reader of the
/// gzipped form, for tests and tools); refuses more than `limit` bytes of output.
pub fn gunzip(bytes: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .take((limit as u64).saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| format!("not gzip: {e}"))?;
    if out.len() > limit {
        return Err(format!("un-gzips to more than {limit} bytes"));
    }
    Ok(out)
}

/// One part's buffer, as served.
#[derive(Clone, Debug)]
pub struct MeshBuffer {
    /// The buffer in the format above.
    pub raw: Vec<u8>,
    /// `raw` gzipped, where that is smaller.
    pub gzip: Option<Vec<u8>>,
    /// A hash of `raw` (FNV-1a, 64 bits, hex): `/scene.json` adds it to the part's URL
    /// (`?v=…`), so a browser that caches a buffer for good never draws an old one when a new
    /// start serves another robot under the same path and key.
    pub tag: String,
}

impl MeshBuffer {
    pub fn new(part: &MeshPart) -> MeshBuffer {
        let raw = encode(part);
        MeshBuffer {
            gzip: gzip_if_smaller(&raw),
            tag: tag_of(&raw),
            raw,
        }
    }

    /// The bytes to send and whether they are gzipped, for a client that does (or does not)
    /// accept gzip.
    pub fn body(&self, accepts_gzip: bool) -> (&[u8], bool) {
        match &self.gzip {
            Some(z) if accepts_gzip => (z, true),
            _ => (&self.raw, false),
        }
    }
}

/// The tag of `part`'s buffer ([`MeshBuffer::tag`]), without keeping the buffer.
pub fn tag(part: &MeshPart) -> String {
    tag_of(&encode(part))
}

fn tag_of(raw: &[u8]) -> String {
    format!("{:016x}", fnv1a(raw))
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Every part of every mesh of a robot, `[mesh][part]`, in `RobotModel::meshes` order.
#[derive(Clone, Debug, Default)]
pub struct MeshBuffers {
    pub meshes: Vec<Vec<MeshBuffer>>,
}

impl MeshBuffers {
    pub fn new(meshes: &[Arc<MeshAsset>]) -> MeshBuffers {
        MeshBuffers {
            meshes: meshes
                .iter()
                .map(|m| m.parts.iter().map(MeshBuffer::new).collect())
                .collect(),
        }
    }

    /// The buffer served at URL path `path`, if any.
    pub fn get(&self, path: &str) -> Option<&MeshBuffer> {
        let (mesh, part) = parse_path(path)?;
        self.meshes.get(mesh)?.get(part)
    }

    /// Total bytes: `(raw, as served to a gzip client)`.
    pub fn sizes(&self) -> (usize, usize) {
        self.meshes.iter().flatten().fold((0, 0), |(raw, sent), b| {
            (raw + b.raw.len(), sent + b.body(true).0.len())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(vertices: usize, triangles: usize) -> MeshPart {
        let positions = (0..vertices)
            .map(|i| [i as f32 * 0.001, -(i as f32) * 0.5, 1.0 + (i % 7) as f32])
            .collect();
        let triangles = (0..triangles)
            .map(|k| {
                let k = k as u32;
                let n = vertices as u32;
                [k % n, (k * 7 + 1) % n, (k * 13 + 2) % n]
            })
            .collect();
        MeshPart {
            name: "p".into(),
            positions,
            triangles,
            color: None,
            hull: None,
        }
    }

    #[test]
    fn buffers_decode_to_the_part() {
        for (v, t) in [
            (3, 1),
            (100, 150),
            (65535, 40),
            (65536, 40),
            (70_000, 10),
            (0, 0),
        ] {
            let p = part(v, t);
            let bytes = encode(&p);
            let (positions, triangles) = decode(&bytes).unwrap();
            assert_eq!(positions, p.positions, "{v} vertices");
            assert_eq!(triangles, p.triangles, "{v} vertices");
            assert_eq!(&bytes[..4], &(v as u32).to_le_bytes());
            assert_eq!(&bytes[4..8], &(p.triangles.len() as u32).to_le_bytes());
        }
        // A truncated or padded buffer is an error, not a panic.
        let bytes = encode(&part(10, 5));
        assert!(decode(&bytes[..bytes.len() - 1]).is_err());
        assert!(decode(&[bytes.as_slice(), &[0]].concat()).is_err());
        assert!(decode(&bytes[..5]).is_err());
    }

    /// The same bytes are decoded by the page's reader in `web/test/mesh.test.js`.
    const GOLDEN_HEX: &str = "03000000010000000000803f0000004000004040000080bf0000003f0000000000\
                                  00000000000000000000c0000001000200";

    #[test]
    fn a_small_part_encodes_to_the_documented_bytes() {
        let p = MeshPart {
            name: String::new(),
            positions: vec![[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0], [0.0, 0.0, -2.0]],
            triangles: vec![[0, 1, 2]],
            color: None,
            hull: None,
        };
        let hex: String = encode(&p).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, GOLDEN_HEX);
    }

    #[test]
    fn indices_are_u16_below_65536_vertices_else_u32() {
        assert!(u16_indices(65535) && !u16_indices(65536));
        let narrow = encode(&part(65535, 10));
        assert_eq!(narrow.len(), HEADER_BYTES + 65535 * 12 + 10 * 3 * 2);
        let wide = encode(&part(65536, 10));
        assert_eq!(wide.len(), HEADER_BYTES + 65536 * 12 + 10 * 3 * 4);
        // Indices start 4-aligned, so a reader can view them in place.
        assert_eq!((HEADER_BYTES + 65535 * 12) % 4, 0);
    }

    #[test]
    fn gzip_only_when_smaller_and_it_round_trips() {
        // A regular mesh compresses; its gzip decodes to the raw buffer.
        let b = MeshBuffer::new(&part(2000, 3000));
        let z = b.gzip.as_ref().expect("a regular mesh compresses");
        assert!(z.len() < b.raw.len());
        assert_eq!(gunzip(z, b.raw.len()).unwrap(), b.raw);
        assert!(gunzip(z, b.raw.len() - 1).is_err(), "the limit holds");
        assert!(
            gunzip(&b.raw, usize::MAX).is_err(),
            "raw bytes are not gzip"
        );
        assert_eq!(b.body(true), (z.as_slice(), true));
        assert_eq!(b.body(false), (b.raw.as_slice(), false));
        // Random bytes, and tiny buffers, do not: they are served as they are.
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        assert!(gzip_if_smaller(&noise).is_none());
        let tiny = MeshBuffer::new(&part(3, 1));
        assert!(tiny.gzip.is_none(), "{} raw bytes", tiny.raw.len());
        assert_eq!(tiny.body(true), (tiny.raw.as_slice(), false));
    }

    #[test]
    fn paths_name_one_part_each() {
        assert_eq!(path(3, 12), "/meshes/3/12.bin");
        assert_eq!(parse_path("/meshes/3/12.bin"), Some((3, 12)));
        assert_eq!(parse_path(&path(0, 0)), Some((0, 0)));
        for bad in [
            "/meshes/3/12",
            "/meshes/3.bin",
            "/meshes//1.bin",
            "/meshes/03/1.bin",
            "/meshes/+3/1.bin",
            "/meshes/3/1/2.bin",
            "/meshes/99999999999999999999999/1.bin",
            "/mesh/3/1.bin",
        ] {
            assert_eq!(parse_path(bad), None, "{bad}");
        }
        let asset = MeshAsset {
            path: "a.obj".into(),
            parts: vec![part(3, 1), part(4, 2)],
        };
        let all = MeshBuffers::new(&[Arc::new(asset)]);
        assert_eq!(all.get("/meshes/0/1.bin").unwrap().raw, encode(&part(4, 2)));
        assert!(all.get("/meshes/0/2.bin").is_none() && all.get("/meshes/1/0.bin").is_none());
        assert_ne!(all.meshes[0][0].tag, all.meshes[0][1].tag);
    }
}
