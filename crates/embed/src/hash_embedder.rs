use crate::{Embedder, Fingerprint, ModelInfo, Pooling, Result};
use sha2::{Digest, Sha256};

/// A deterministic, model-free embedder for tests and for builds without candle: each lowercase
/// word (and each word bigram) is hashed to a few signed buckets, the bag is L2-normalised.
/// Texts that share words score high; texts that share none score about zero. It is a stand-in
/// with the same contract as a real model, not a model.
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    info: ModelInfo,
}

impl HashEmbedder {
    /// A hash embedder of width `dim` (at least 8).
    pub fn new(dim: usize) -> Self {
        let dim = dim.max(8);
        let fingerprint = Fingerprint::from_parts([("hash-embedder", &*dim.to_string())]);
        Self {
            info: ModelInfo {
                name: format!("hash-{dim}"),
                dim,
                prefix: String::new(),
                document_prefix: String::new(),
                pooling: Pooling::Mean,
                max_tokens: 512,
                fingerprint,
                late_interaction: 0.0,
                off_topic_margin: None,
                language_shift: None,
                screen_layer: None,
            },
        }
    }

    fn add(&self, out: &mut [f32], token: &str, weight: f32) {
        let digest = Sha256::digest(token.as_bytes());
        for pair in digest.chunks_exact(4).take(3) {
            let v = u32::from_le_bytes([pair[0], pair[1], pair[2], pair[3]]);
            let bucket = (v >> 1) as usize % out.len();
            let sign = if v & 1 == 0 { 1.0 } else { -1.0 };
            out[bucket] += sign * weight;
        }
    }
}

impl Embedder for HashEmbedder {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|text| {
                let mut v = vec![0f32; self.info.dim];
                let words: Vec<String> = text
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .map(str::to_lowercase)
                    .collect();
                for w in &words {
                    self.add(&mut v, w, 1.0);
                }
                for pair in words.windows(2) {
                    self.add(&mut v, &format!("{} {}", pair[0], pair[1]), 0.5);
                }
                crate::l2_normalize(&mut v);
                v
            })
            .collect())
    }

    fn count_tokens(&self, text: &str) -> Result<usize> {
        Ok(text.split_whitespace().count() + 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_words_score_higher_than_unrelated() {
        let e = HashEmbedder::new(64);
        let v = e.embed_batch(&["run the unit tests", "run tests", "bake a cake"]).unwrap();
        let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        assert!(dot(&v[0], &v[1]) > dot(&v[0], &v[2]) + 0.3);
        assert!((dot(&v[0], &v[0]) - 1.0).abs() < 1e-5);
    }
}
