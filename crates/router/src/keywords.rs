//! Deterministic keyword rules: case-insensitive, whole-word, any language.
//!
//! A task is split into lowercase words at every character that is not alphanumeric (Unicode
//! aware, so "corrige," and "Überprüfe" work). A keyword of several words matches a run of
//! consecutive task words. Scripts written without spaces (CJK) have no word boundaries, so a
//! keyword containing such characters matches as a substring. A keyword ending in `*` matches
//! any word that starts with its last word ("risk*" matches "risky" and "risks"), so one entry
//! covers a word's inflections.

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

/// A word without a French or Italian elided article or pronoun ("l'avocat" -> "avocat",
/// "dell'acqua" -> "acqua", "qu'est" -> "est"): up to four letters before the apostrophe.
/// English possessives keep theirs ("devil's" has five letters before it).
fn without_elision(word: &str) -> &str {
    match word.split_once('\'') {
        Some((head, rest)) if !rest.is_empty() && head.chars().count() <= 4 => rest,
        _ => word,
    }
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
    /// The last word matches as a prefix (the keyword ended in `*`).
    prefix: bool,
}

impl Keyword {
    /// Compiles a keyword.
    pub fn new(text: &str) -> Self {
        let lower = text.trim().to_lowercase();
        let (body, prefix) = match lower.strip_suffix('*') {
            Some(body) => (body.to_string(), true),
            None => (lower.clone(), false),
        };
        Self {
            substring: body.chars().any(is_unspaced_script),
            words: words(&body).into_iter().map(|(_, w)| w).collect(),
            text: if prefix && body.chars().any(is_unspaced_script) { body } else { lower },
            prefix,
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
            .find(|w| {
                let last = self.words.len() - 1;
                w.iter().zip(&self.words).enumerate().all(|(i, ((_, a), b))| {
                    // Only the first word may carry an elided article ("l'avocat du diable").
                    let a = if i == 0 { without_elision(a) } else { a.as_str() };
                    if self.prefix && i == last { a.starts_with(b.as_str()) } else { a == b }
                })
            })
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

    #[test]
    fn elided_articles_do_not_hide_a_keyword() {
        assert!(hit("avocat du diable", "Joue l'avocat du diable"));
        assert!(hit("événement*", "une architecture d'événements"));
        assert!(hit("devil's advocate", "play devil's advocate"));
        assert!(!hit("s advocate", "play devil's advocate"));
    }

    #[test]
    fn a_trailing_star_matches_inflections_of_the_last_word() {
        assert!(hit("risk*", "what are the risks here"));
        assert!(hit("risk*", "that sounds risky"));
        assert!(!hit("risk*", "asterisk"));
        assert!(!hit("risk", "the risks"));
        assert!(hit("failure mode*", "list the failure modes"));
        assert!(!hit("failure mode*", "failure in the modes"));
        assert!(hit("リスク*", "リスクは何ですか"));
    }
}
