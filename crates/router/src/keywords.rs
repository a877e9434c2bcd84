//! Deterministic keyword rules: case-insensitive, whole-word, any language.
//!
//! A task is split into lowercase words at every character that is not alphanumeric (Unicode
//! aware, so "corrige," and "Überprüfe" work). A keyword of several words matches a run of
//! consecutive task words. Scripts written without spaces (CJK) have no word boundaries, so a
//! keyword containing such characters matches as a substring.

/// Lowercase words of `text`, with their character offsets.
pub fn words(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if c.is_alphanumeric() || c == '\'' && !cur.is_empty() {
            if cur.is_empty() {
                start = i;
            }
            cur.extend(c.to_lowercase());
        } else if !cur.is_empty() {
            out.push((start, std::mem::take(&mut cur)));
        }
    }
    if !cur.is_empty() {
        out.push((start, cur));
    }
    out
}

fn is_unspaced_script(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF)
}

/// A compiled keyword.
#[derive(Debug, Clone)]
pub struct Keyword {
    /// As written in the manifest (lowercased).
    pub text: String,
    words: Vec<String>,
    substring: bool,
}

impl Keyword {
    /// Compiles a keyword.
    pub fn new(text: &str) -> Self {
        let lower = text.to_lowercase();
        Self {
            substring: lower.chars().any(is_unspaced_script),
            words: words(&lower).into_iter().map(|(_, w)| w).collect(),
            text: lower,
        }
    }

    /// Byte offset of the first match in the task, if any.
    pub fn find(&self, task_lower: &str, task_words: &[(usize, String)]) -> Option<usize> {
        if self.substring {
            return task_lower.find(&self.text);
        }
        if self.words.is_empty() {
            return None;
        }
        task_words
            .windows(self.words.len())
            .find(|w| w.iter().zip(&self.words).all(|((_, a), b)| a == b))
            .map(|w| w[0].0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(k: &str, t: &str) -> bool {
        let lower = t.to_lowercase();
        Keyword::new(k).find(&lower, &words(t)).is_some()
    }

    #[test]
    fn whole_words_only() {
        assert!(hit("review", "Please REVIEW this"));
        assert!(!hit("review", "the reviewer said"));
        assert!(hit("check", "check, then fix"));
        assert!(!hit("plan", "explanation"));
    }

    #[test]
    fn other_languages_and_phrases() {
        assert!(hit("überprüfe", "Überprüfe den Code"));
        assert!(hit("corrige", "corrige le bug, stp"));
        assert!(hit("code review", "do a code review now"));
        assert!(hit("確認", "このコードを確認してください"));
    }
}
