use sha2::{Digest, Sha256};
use std::fmt;

/// Identifies the exact weights, tokenizer and pooling of a model: 16 bytes of a sha256 over the
/// *contents* of those files (never their paths), so an index built with one model can never be
/// opened with another.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Fingerprint(pub [u8; 16]);

impl Fingerprint {
    /// Derives a fingerprint from named content digests (file role, hex sha256) plus free-form
    /// settings such as the pooling and prefix. Parts are hashed in the order given.
    pub fn from_parts<'a>(parts: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut h = Sha256::new();
        h.update(b"switchyard-fingerprint-v1\0");
        for (k, v) in parts {
            h.update(k.as_bytes());
            h.update([0]);
            h.update(v.as_bytes());
            h.update([0]);
        }
        let digest = h.finalize();
        let mut out = [0u8; 16];
        out.copy_from_slice(&digest[..16]);
        Self(out)
    }

    /// Lowercase hex, 32 characters.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Parses 32 hex characters.
    pub fn from_hex(s: &str) -> Option<Self> {
        if s.len() != 32 || !s.is_ascii() {
            return None;
        }
        let mut out = [0u8; 16];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Self(out))
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({})", self.to_hex())
    }
}

/// Hex sha256 of a byte slice.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex sha256 of a file, streamed.
pub fn sha256_file(path: &std::path::Path) -> crate::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| crate::EmbedError::io(path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| crate::EmbedError::io(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

impl serde::Serialize for Fingerprint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> serde::Deserialize<'de> for Fingerprint {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Fingerprint::from_hex(&s)
            .ok_or_else(|| serde::de::Error::custom("fingerprint must be 32 hex characters"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let f = Fingerprint::from_parts([("weights", "abc"), ("pooling", "mean")]);
        assert_eq!(Fingerprint::from_hex(&f.to_hex()), Some(f));
        assert_eq!(Fingerprint::from_hex("zz"), None);
    }

    #[test]
    fn different_content_gives_different_fingerprints() {
        let a = Fingerprint::from_parts([("weights", "abc")]);
        let b = Fingerprint::from_parts([("weights", "abd")]);
        assert_ne!(a, b);
    }
}
