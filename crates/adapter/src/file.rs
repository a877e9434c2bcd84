//! The adapter file (`.swya`), little-endian:
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `SWYADAPT` |
//! | 4 | format version ([`ADAPTER_FILE_VERSION`]) |
//! | 4 | dim |
//! | 4 | rank |
//! | 16 | model fingerprint |
//! | 4 | length of the info |
//! | n | info: JSON of [`AdapterInfo`] |
//! | 4 · dim · rank | `U`, f32 |
//! | 4 · dim · rank | `V`, f32 |
//! | 4 | CRC-32 of everything before |
//!
//! Files are written atomically and hold no timestamp, so one training run gives one file,
//! byte for byte.

use crate::Adapter;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The file format version this build reads and writes.
pub const ADAPTER_FILE_VERSION: u32 = 1;
const MAGIC: &[u8; 8] = b"SWYADAPT";
const MAX_RANK: usize = 1024;

/// What went wrong reading or writing an adapter file.
#[derive(Debug, thiserror::Error)]
pub enum AdapterError {
    /// The file cannot be read or written.
    #[error("adapter {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The bytes are not an adapter this build can use.
    #[error(
        "adapter {path}: {reason}; train it again with `switchyard train adapter` (or build the index with --no-adapter)"
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The adapter was trained for another model.
    #[error(
        "adapter {path} was trained for model {adapter_model} (fingerprint {adapter}), not for {model} (fingerprint {expected}); train one for this model with `switchyard train adapter --model {model}` or build with --no-adapter"
    )]
    WrongModel {
        /// The file.
        path: PathBuf,
        /// The adapter's model name.
        adapter_model: String,
        /// The adapter's fingerprint (hex).
        adapter: String,
        /// The model in use.
        model: String,
        /// Its fingerprint (hex).
        expected: String,
    },
    /// Training failed (candle error, or the inputs cannot train anything).
    #[error("training the adapter: {0}")]
    Train(String),
}

/// One training or validation set as the adapter's file records it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SetSummary {
    /// The set, as named on the command line (e.g. `metatool`, `seal_tools:dev`).
    pub name: String,
    /// Tools in its catalog.
    pub tools: usize,
    /// Queries trained on.
    pub train_queries: usize,
    /// Queries held out for validation (their gold tools were never trained on).
    pub validation_queries: usize,
    /// Validation recall@5 of the encoder alone.
    pub validation_recall5_before: f64,
    /// Validation recall@5 with the adapter.
    pub validation_recall5_after: f64,
}

/// How an adapter was trained; stored in its file and in the index built with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AdapterInfo {
    /// The model name (e.g. `e5-small`).
    pub model: String,
    /// The training sets.
    pub sets: Vec<SetSummary>,
    /// Rank of the residual.
    pub rank: usize,
    /// Softmax temperature of the contrastive loss.
    pub temperature: f64,
    /// AdamW learning rate.
    pub learning_rate: f64,
    /// AdamW weight decay (pulls the map towards the identity).
    pub weight_decay: f64,
    /// Queries per step.
    pub batch: usize,
    /// Whether tools' descriptions are mapped too; otherwise only query-like texts (tasks,
    /// tools' example requests, probes) are.
    #[serde(default)]
    pub both_sides: bool,
    /// Epochs run; the file holds the weights of `best_epoch`.
    pub epochs_run: usize,
    /// The epoch with the best validation recall@5 (0: the identity was best).
    pub best_epoch: usize,
    /// Seed of the initialisation and the shuffles.
    pub seed: u64,
}

impl Adapter {
    /// The file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let info = serde_json::to_vec(&self.info).unwrap_or_default();
        let mut b = Vec::with_capacity(48 + info.len() + 8 * self.u.len());
        b.extend_from_slice(MAGIC);
        for n in [ADAPTER_FILE_VERSION, self.dim as u32, self.rank as u32] {
            b.extend_from_slice(&n.to_le_bytes());
        }
        b.extend_from_slice(&self.fingerprint);
        b.extend_from_slice(&(info.len() as u32).to_le_bytes());
        b.extend_from_slice(&info);
        for x in self.u.iter().chain(&self.v) {
            b.extend_from_slice(&x.to_le_bytes());
        }
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// Parses a file's bytes; `path` names the file in errors.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Self, AdapterError> {
        let corrupt = |reason: String| AdapterError::Corrupt { path: path.to_path_buf(), reason };
        if bytes.len() < 8 || &bytes[..8] != MAGIC {
            return Err(corrupt("not an adapter file (no SWYADAPT magic)".into()));
        }
        if bytes.len() < 44 {
            return Err(corrupt(format!("{} bytes: too short for an adapter file", bytes.len())));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        let stored = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        let u32_at = |at: usize| {
            u32::from_le_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]) as usize
        };
        let version = u32_at(8) as u32;
        if version != ADAPTER_FILE_VERSION {
            return Err(corrupt(format!(
                "format version {version}, this build reads version {ADAPTER_FILE_VERSION}"
            )));
        }
        if crc32fast::hash(body) != stored {
            return Err(corrupt("checksum mismatch: the file is damaged".into()));
        }
        let (dim, rank) = (u32_at(12), u32_at(16));
        if dim == 0 || rank == 0 || rank > MAX_RANK || rank > dim {
            return Err(corrupt(format!("dim {dim}, rank {rank}: out of range")));
        }
        let mut fingerprint = [0u8; 16];
        fingerprint.copy_from_slice(&body[20..36]);
        let info_len = u32_at(36);
        let weights = 2 * dim * rank * 4;
        if body.len() != 40 + info_len + weights {
            return Err(corrupt(format!(
                "{} bytes, but dim {dim} and rank {rank} need {}",
                bytes.len(),
                40 + info_len + weights + 4
            )));
        }
        let info: AdapterInfo = serde_json::from_slice(&body[40..40 + info_len])
            .map_err(|e| corrupt(format!("its info does not parse: {e}")))?;
        let floats: Vec<f32> = body[40 + info_len..]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if let Some(i) = floats.iter().position(|x| !x.is_finite()) {
            return Err(corrupt(format!("weight {i} is NaN or infinite")));
        }
        let (u, v) = floats.split_at(dim * rank);
        Ok(Self { fingerprint, dim, rank, u: u.to_vec(), v: v.to_vec(), info })
    }

    /// Reads and checks an adapter file.
    pub fn read(path: &Path) -> Result<Self, AdapterError> {
        let bytes = std::fs::read(path)
            .map_err(|source| AdapterError::Io { path: path.to_path_buf(), source })?;
        Self::from_bytes(&bytes, path)
    }

    /// Refuses an adapter trained for another model than `fingerprint` (`model` names it).
    pub fn check_model(
        &self,
        path: &Path,
        model: &str,
        fingerprint: [u8; 16],
        dim: usize,
    ) -> Result<(), AdapterError> {
        if self.fingerprint != fingerprint || self.dim != dim {
            return Err(AdapterError::WrongModel {
                path: path.to_path_buf(),
                adapter_model: self.info.model.clone(),
                adapter: hex(&self.fingerprint),
                model: model.to_string(),
                expected: hex(&fingerprint),
            });
        }
        Ok(())
    }

    /// Writes the file atomically (a temp file in the same folder, synced, then renamed).
    pub fn write(&self, path: &Path) -> Result<(), AdapterError> {
        let io = |source| AdapterError::Io { path: path.to_path_buf(), source };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(io)?;
        tmp.write_all(&self.to_bytes()).map_err(io)?;
        tmp.as_file().sync_all().map_err(io)?;
        tmp.persist(path).map_err(|e| io(e.error))?;
        Ok(())
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Adapter {
        let mut a = Adapter::identity(
            [7; 16],
            3,
            2,
            AdapterInfo { model: "m".into(), rank: 2, ..AdapterInfo::default() },
        );
        a.u = vec![0.1, -0.2, 0.3, 0.0, 0.5, 1.5];
        a.v = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        a
    }

    #[test]
    fn a_file_round_trips_and_is_byte_stable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.swya");
        sample().write(&path).unwrap();
        assert_eq!(Adapter::read(&path).unwrap(), sample());
        assert_eq!(std::fs::read(&path).unwrap(), sample().to_bytes());
        assert_eq!(sample().id(), sample().id());
        assert_eq!(sample().id().len(), 16);
    }

    #[test]
    fn any_flipped_byte_is_refused_with_the_path() {
        let bytes = sample().to_bytes();
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x10;
            let err = Adapter::from_bytes(&b, Path::new("x.swya")).unwrap_err().to_string();
            assert!(err.starts_with("adapter x.swya: "), "{i}: {err}");
        }
        let err = Adapter::from_bytes(&bytes[..20], Path::new("x.swya")).unwrap_err().to_string();
        assert!(err.contains("20 bytes: too short"), "{err}");
        let err = Adapter::from_bytes(b"{\"json\": 1}", Path::new("x.swya")).unwrap_err();
        assert!(err.to_string().contains("not an adapter file"), "{err}");
    }

    #[test]
    fn an_adapter_for_another_model_is_refused() {
        let a = sample();
        let err = a.check_model(Path::new("x.swya"), "e5-small", [8; 16], 3).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("trained for model m") && msg.contains("--model e5-small"), "{msg}");
        assert!(a.check_model(Path::new("x.swya"), "m", [7; 16], 3).is_ok());
        assert!(a.check_model(Path::new("x.swya"), "m", [7; 16], 4).is_err());
    }
}
