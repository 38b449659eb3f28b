//! The secrets a server is started with, made fresh for each: the bearer token of its one
//! `system:masters` user and the service-account signing key pair. kube-apiserver makes its own
//! serving certificate (a certificate authority of its own and a certificate for 127.0.0.1 in
//! `--cert-dir`), which the client then trusts and verifies.

use std::path::Path;

use base64::Engine as _;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair};

use crate::Error;

/// The DER `SubjectPublicKeyInfo` prefix of a P-256 public key (`id-ecPublicKey`, `prime256v1`),
/// followed by the 65-byte uncompressed point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

fn pem(label: &str, der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

fn write_private(path: &Path, text: &str) -> Result<(), Error> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .map_err(Error::io(format!("creating {}", path.display())))?;
    std::io::Write::write_all(&mut file, text.as_bytes())
        .map_err(Error::io(format!("writing {}", path.display())))
}

/// `N` bytes from the system's random source.
fn random<const N: usize>() -> Result<[u8; N], Error> {
    let mut bytes = [0u8; N];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| Error::Unavailable("the system's random source failed".into()))?;
    Ok(bytes)
}

/// A random bearer token (48 hex digits).
pub(crate) fn token() -> Result<String, Error> {
    Ok(random::<24>()?.iter().map(|b| format!("{b:02x}")).collect())
}

/// A random number from the system's random source.
pub(crate) fn random_u32() -> Result<u32, Error> {
    Ok(u32::from_le_bytes(random()?))
}

/// Writes `tokens.csv` (the token of `envtest-admin`, in `system:masters`) into `dir`.
pub(crate) fn write_token_file(dir: &Path, token: &str) -> Result<(), Error> {
    let line = format!("{token},envtest-admin,envtest-admin,\"system:masters\"\n");
    write_private(&dir.join("tokens.csv"), &line)
}

/// Writes a fresh ECDSA P-256 service-account key pair into `dir`: `sa.key` (PKCS#8) for
/// `--service-account-signing-key-file` and `sa.pub` (`SubjectPublicKeyInfo`) for
/// `--service-account-key-file`.
pub(crate) fn write_service_account_keys(dir: &Path) -> Result<(), Error> {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng)
        .map_err(|_| Error::Unavailable("generating the service-account key failed".into()))?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
        .map_err(|_| Error::Unavailable("reading the service-account key failed".into()))?;
    let mut spki = P256_SPKI_PREFIX.to_vec();
    spki.extend_from_slice(pair.public_key().as_ref());
    write_private(&dir.join("sa.key"), &pem("PRIVATE KEY", pkcs8.as_ref()))?;
    std::fs::write(dir.join("sa.pub"), pem("PUBLIC KEY", &spki)).map_err(Error::io(format!(
        "writing {}",
        dir.join("sa.pub").display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_lines_are_64_wide_and_labelled() {
        let text = pem("PUBLIC KEY", &[7u8; 100]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "-----BEGIN PUBLIC KEY-----");
        assert_eq!(lines[1].len(), 64);
        assert_eq!(*lines.last().unwrap_or(&""), "-----END PUBLIC KEY-----");
        let body: String = lines[1..lines.len() - 1].concat();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap_or_default();
        assert_eq!(decoded, vec![7u8; 100]);
    }

    #[test]
    fn tokens_differ() {
        let (a, b) = (token().unwrap_or_default(), token().unwrap_or_default());
        assert_eq!(a.len(), 48);
        assert_ne!(a, b);
    }
}
