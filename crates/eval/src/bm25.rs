//! The lexical baseline every evaluation reports next to the router: Okapi BM25 over each
//! tool's name and description (k1 = 1.2, b = 0.75, Lucene's non-negative idf).

use std::collections::{BTreeMap, HashMap};

/// Lowercased alphanumeric runs, with `camelCase` and `snake_case` names split into words.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            // "AddAgenda" -> "add", "agenda": a lower-to-upper step starts a word.
            if c.is_uppercase() && prev_lower && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = c.is_lowercase() || c.is_numeric();
            cur.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A BM25 index over documents given as text.
#[derive(Debug, Clone)]
pub struct Bm25 {
    docs: Vec<BTreeMap<String, u32>>,
    lengths: Vec<f32>,
    avg_len: f32,
    idf: HashMap<String, f32>,
    k1: f32,
    b: f32,
}

impl Bm25 {
    /// Indexes `docs` with k1 = 1.2, b = 0.75.
    pub fn new<S: AsRef<str>>(docs: &[S]) -> Self {
        let docs: Vec<BTreeMap<String, u32>> = docs
            .iter()
            .map(|d| {
                let mut tf = BTreeMap::new();
                for t in tokenize(d.as_ref()) {
                    *tf.entry(t).or_insert(0) += 1;
                }
                tf
            })
            .collect();
        let lengths: Vec<f32> = docs.iter().map(|d| d.values().sum::<u32>() as f32).collect();
        let avg_len = lengths.iter().sum::<f32>() / lengths.len().max(1) as f32;
        let mut df: HashMap<String, u32> = HashMap::new();
        for d in &docs {
            for t in d.keys() {
                *df.entry(t.clone()).or_insert(0) += 1;
            }
        }
        let n = docs.len() as f32;
        let idf = df
            .into_iter()
            .map(|(t, f)| (t, ((n - f as f32 + 0.5) / (f as f32 + 0.5) + 1.0).ln()))
            .collect();
        Self { docs, lengths, avg_len, idf, k1: 1.2, b: 0.75 }
    }

    /// The score of every document for `query`, in document order.
    pub fn scores(&self, query: &str) -> Vec<f32> {
        let terms = tokenize(query);
        self.docs
            .iter()
            .zip(&self.lengths)
            .map(|(doc, &len)| {
                terms
                    .iter()
                    .map(|t| {
                        let Some(&tf) = doc.get(t) else { return 0.0 };
                        let tf = tf as f32;
                        let idf = self.idf.get(t).copied().unwrap_or(0.0);
                        let norm = self.k1 * (1.0 - self.b + self.b * len / self.avg_len.max(1e-6));
                        idf * tf * (self.k1 + 1.0) / (tf + norm)
                    })
                    .sum()
            })
            .collect()
    }

    /// Document ids best-first (ties by ascending id), at most `k`; documents scoring 0 are left out.
    pub fn top(&self, query: &str, k: usize) -> Vec<usize> {
        let scores = self.scores(query);
        let mut ids: Vec<usize> = (0..scores.len()).filter(|&i| scores[i] > 0.0).collect();
        ids.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        ids.truncate(k);
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_names_and_lowercases() {
        assert_eq!(
            tokenize("AddAgenda: add_alarm, GPT4 now"),
            ["add", "agenda", "add", "alarm", "gpt4", "now"]
        );
    }

    #[test]
    fn ranks_the_document_sharing_rare_terms_first() {
        let bm = Bm25::new(&[
            "weather forecast for a city",
            "book a flight",
            "weather of the stock market",
        ]);
        assert_eq!(bm.top("flight booking", 3), [1]);
        assert_eq!(bm.top("city weather forecast", 3)[0], 0);
    }
}
