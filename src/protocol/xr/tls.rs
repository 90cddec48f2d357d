//! The headset page's certificate. WebXR needs a secure context, and a headset on the network
//! reaches armsim by an IP address, so armsim serves HTTPS with a self-signed certificate made
//! at first start (rcgen, with rustls' `ring` provider: it builds with gcc alone). It is kept in
//! the user's config directory and reused, so a headset that accepted it once keeps accepting
//! it; it is made anew when an address it must name is missing (the machine moved network) or
//! it is about to expire. `--tls-cert/--tls-key` load the user's own instead (e.g. from mkcert,
//! which a Vision Pro can be told to trust).

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Validity of a generated certificate; browsers accept a self-signed one of any length, but
/// a bounded one is renewed now and then rather than never.
const VALIDITY: Duration = Duration::from_secs(397 * 24 * 3600);
/// A stored certificate with less than this left is made anew.
const RENEW_BEFORE: Duration = Duration::from_secs(30 * 24 * 3600);

/// Where the certificate comes from.
#[derive(Clone, Debug)]
pub enum CertSource {
    /// Generated and kept in this directory (`xr-cert.pem`, `xr-key.pem`, `xr-cert.names`).
    Generated { dir: PathBuf },
    /// The user's own PEM files.
    Files { cert: PathBuf, key: PathBuf },
}

/// The loaded certificate, ready to serve.
pub struct Tls {
    pub config: Arc<ServerConfig>,
    /// SHA-256 of the leaf certificate (DER), as `AB:CD:…`.
    pub fingerprint: String,
    /// What happened: "generated", "reused" or "loaded", with the path.
    pub origin: String,
    /// The names a generated certificate covers (empty for the user's own).
    pub names: Vec<String>,
}

/// armsim's config directory: `$ARMSIM_CONFIG_DIR`, else `$XDG_CONFIG_HOME/armsim`, else
/// `~/.config/armsim`.
pub fn config_dir() -> anyhow::Result<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = env("ARMSIM_CONFIG_DIR") {
        return Ok(dir);
    }
    if let Some(dir) = env("XDG_CONFIG_HOME") {
        return Ok(dir.join("armsim"));
    }
    match env("HOME") {
        Some(home) => Ok(home.join(".config").join("armsim")),
        None => bail!(
            "no config directory for the headset certificate: set ARMSIM_CONFIG_DIR or HOME, \
             or pass --tls-cert/--tls-key"
        ),
    }
}

/// The names a certificate must cover: localhost, the loopback addresses, and every address of
/// this machine's interfaces (the ones a headset can reach it by).
pub fn wanted_names() -> BTreeSet<String> {
    let mut names: BTreeSet<String> = ["localhost", "127.0.0.1", "::1"]
        .into_iter()
        .map(String::from)
        .collect();
    for ip in interface_addrs() {
        names.insert(ip.to_string());
    }
    names
}

/// This machine's interface addresses (no link-local IPv6: a URL needs a zone for those).
pub fn interface_addrs() -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = if_addrs::get_if_addrs()
        .unwrap_or_default()
        .into_iter()
        .map(|i| i.ip())
        .filter(|ip| match ip {
            IpAddr::V4(_) => true,
            IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) != 0xfe80,
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Loads or makes the certificate and builds the TLS server config.
pub fn load(source: &CertSource) -> anyhow::Result<Tls> {
    let (certs, key, origin, names) = match source {
        CertSource::Files { cert, key } => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
                .with_context(|| format!("cannot read the certificate {}", cert.display()))?
                .collect::<Result<_, _>>()
                .with_context(|| format!("{} is not a PEM certificate", cert.display()))?;
            if certs.is_empty() {
                bail!("{} holds no certificate", cert.display());
            }
            let key = PrivateKeyDer::from_pem_file(key)
                .with_context(|| format!("cannot read a PEM private key from {}", key.display()))?;
            (
                certs,
                key,
                format!("loaded from {}", source_display(source)),
                Vec::new(),
            )
        }
        CertSource::Generated { dir } => {
            let wanted = wanted_names();
            let (cert_pem, key_pem, origin) = match stored(dir, &wanted) {
                Some((c, k)) => (c, k, format!("reused from {}", dir.display())),
                None => {
                    let (c, k) = generate(dir, &wanted)?;
                    (c, k, format!("generated in {}", dir.display()))
                }
            };
            let certs = vec![
                CertificateDer::from_pem_slice(cert_pem.as_bytes())
                    .context("the generated certificate does not parse")?,
            ];
            let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
                .context("the generated key does not parse")?;
            (certs, key, origin, stored_names(dir))
        }
    };
    let fingerprint = fingerprint(&certs[0]);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("the certificate and key do not make a TLS configuration")?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Tls {
        config: Arc::new(config),
        fingerprint,
        origin,
        names,
    })
}

fn source_display(source: &CertSource) -> String {
    match source {
        CertSource::Files { cert, key } => format!("{} and {}", cert.display(), key.display()),
        CertSource::Generated { dir } => dir.display().to_string(),
    }
}

/// SHA-256 of a DER certificate as colon-separated upper-case hex (what browsers show).
pub fn fingerprint(der: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, der);
    digest
        .as_ref()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn paths(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    (
        dir.join("xr-cert.pem"),
        dir.join("xr-key.pem"),
        dir.join("xr-cert.names"),
    )
}

/// The names file: the first line is the expiry (Unix seconds), then one name a line.
fn stored_names(dir: &Path) -> Vec<String> {
    fs::read_to_string(paths(dir).2)
        .map(|t| t.lines().skip(1).map(String::from).collect())
        .unwrap_or_default()
}

/// The stored certificate and key if they cover `wanted` and are not about to expire.
fn stored(dir: &Path, wanted: &BTreeSet<String>) -> Option<(String, String)> {
    let (cert, key, names) = paths(dir);
    let text = fs::read_to_string(names).ok()?;
    let mut lines = text.lines();
    let expires: u64 = lines.next()?.trim().parse().ok()?;
    let have: BTreeSet<&str> = lines.collect();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
    if expires < now + RENEW_BEFORE.as_secs() || !wanted.iter().all(|n| have.contains(n.as_str())) {
        return None;
    }
    Some((
        fs::read_to_string(cert).ok()?,
        fs::read_to_string(key).ok()?,
    ))
}

/// A new self-signed certificate for `names`, written to `dir` (the key readable by the user
/// only).
fn generate(dir: &Path, names: &BTreeSet<String>) -> anyhow::Result<(String, String)> {
    let mut params = rcgen::CertificateParams::new(names.iter().cloned().collect::<Vec<_>>())
        .context("certificate names")?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "armsim headset page");
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "armsim (self-signed)");
    let now = SystemTime::now();
    params.not_before = time::OffsetDateTime::from(now - Duration::from_secs(24 * 3600));
    params.not_after = time::OffsetDateTime::from(now + VALIDITY);
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let key = rcgen::KeyPair::generate().context("generating the certificate's key")?;
    let cert = params
        .self_signed(&key)
        .context("signing the certificate")?;
    let (cert_path, key_path, names_path) = paths(dir);
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let expires = (now + VALIDITY)
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let key_pem = key.serialize_pem();
    write_private(&key_path, key_pem.as_bytes())
        .with_context(|| format!("cannot write {}", key_path.display()))?;
    fs::write(&cert_path, cert.pem())
        .with_context(|| format!("cannot write {}", cert_path.display()))?;
    let mut list = expires.to_string();
    for n in names {
        list.push('\n');
        list.push_str(n);
    }
    fs::write(&names_path, list)
        .with_context(|| format!("cannot write {}", names_path.display()))?;
    Ok((cert.pem(), key_pem))
}

fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)?.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "armsim-tls-{tag}-{}-{}",
            std::process::id(),
            getrandom::u64().unwrap_or(0)
        ));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_generated_certificate_is_reused_then_renewed_when_a_name_is_missing() {
        let dir = temp_dir("reuse");
        let source = CertSource::Generated { dir: dir.clone() };
        let first = load(&source).expect("generates");
        assert!(first.origin.starts_with("generated"), "{}", first.origin);
        assert!(first.names.contains(&"localhost".to_string()));
        assert!(first.names.contains(&"127.0.0.1".to_string()));
        assert_eq!(first.fingerprint.len(), 32 * 3 - 1);
        let second = load(&source).expect("reuses");
        assert!(second.origin.starts_with("reused"), "{}", second.origin);
        assert_eq!(first.fingerprint, second.fingerprint);
        // An address the stored certificate lacks (the machine moved network): a new one.
        let names = paths(&dir).2;
        let text = fs::read_to_string(&names).unwrap();
        let kept: Vec<&str> = text.lines().filter(|l| *l != "127.0.0.1").collect();
        fs::write(&names, kept.join("\n")).unwrap();
        let third = load(&source).expect("renews");
        assert!(third.origin.starts_with("generated"), "{}", third.origin);
        assert_ne!(third.fingerprint, first.fingerprint);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_users_files_load_and_bad_ones_say_which() {
        let dir = temp_dir("files");
        load(&CertSource::Generated { dir: dir.clone() }).unwrap();
        let (cert, key, _) = paths(&dir);
        let own = load(&CertSource::Files {
            cert: cert.clone(),
            key: key.clone(),
        })
        .expect("loads");
        assert!(own.origin.contains("xr-cert.pem"));
        let Err(err) = load(&CertSource::Files {
            cert: key.clone(),
            key: key.clone(),
        }) else {
            panic!("a key is not a certificate");
        };
        assert!(format!("{err:#}").contains("xr-key.pem"), "{err:#}");
        let Err(err) = load(&CertSource::Files {
            cert: dir.join("missing.pem"),
            key,
        }) else {
            panic!("a missing file is an error");
        };
        assert!(format!("{err:#}").contains("missing.pem"), "{err:#}");
        let _ = fs::remove_dir_all(&dir);
    }
}
