//! The parts of a task that asks for several things, each pooled from the task's one pass.
//!
//! "Delete the VM001 machine. Then optimise the employee database. Finally send me a report."
//! needs three tools, and its one vector is the average of all three requests: it sits between
//! them and near none. The model's pass has already read every token in context, so the
//! states of each sentence's tokens, averaged, give that sentence a vector of its own at the
//! cost of a sum (no second embedding). A tool's dense score is then the best of the whole
//! task's and each part's, so every request in the task can reach its tool.
//!
//! Parts are cut only where whitespace follows a sentence's end (`.`, `!`, `?`, `;`, and their
//! full-width forms) or at a line break, so the tokenizer splits each part exactly as it split
//! the whole; the router checks that the parts' pieces spell the task's before it uses them.

use std::ops::Range;
use switchyard_embed::{Embedder, TokenStates};

/// Fewest content tokens a part must have to be scored alone: a "Thanks!" or "Please." asks
/// for no tool.
pub(crate) const MIN_PART_TOKENS: usize = 4;

/// Most parts a task is scored by (each costs one pass over the catalog's rows); the rest of
/// a longer task still counts through the whole task's vector.
pub(crate) const MAX_PARTS: usize = 8;

/// The task cut after each sentence's end or line break that whitespace follows; the pieces,
/// concatenated, are the task (the whitespace stays with the part before it).
pub(crate) fn split_parts(task: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut chars = task.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let ends = match c {
            '.' => !abbreviation(&task[..i], &task[i + 1..]),
            '!' | '?' | ';' | '。' | '！' | '？' | '；' | '\n' => true,
            _ => false,
        };
        if !ends {
            continue;
        }
        // The whitespace after the end belongs to the part it closes.
        let mut end = i + c.len_utf8();
        let mut spaced = c == '\n';
        while let Some(&(j, w)) = chars.peek() {
            if !w.is_whitespace() {
                break;
            }
            spaced = true;
            end = j + w.len_utf8();
            chars.next();
        }
        if spaced && end < task.len() {
            parts.push(&task[start..end]);
            start = end;
        }
    }
    if start < task.len() {
        parts.push(&task[start..]);
    }
    parts
}

/// Whether the full stop after `before`, with `after` next, more likely closes an abbreviation
/// or an ordinal than a sentence: a word of up to three letters that is capitalised ("Dr.",
/// "Sra.", "M.") or followed by a lower-case word ("e.g. the", "etc. and"), or a number of one
/// or two digits (the German "3. Mai"). A sentence that ends in such a word stays joined to the
/// next, which costs only the parts' own scores.
fn abbreviation(before: &str, after: &str) -> bool {
    let word: Vec<char> =
        before.chars().rev().take_while(|c| c.is_alphanumeric()).take(4).collect();
    if word.is_empty() {
        return false;
    }
    if word.iter().all(|c| c.is_ascii_digit()) {
        return word.len() <= 2;
    }
    let capitalised = word.last().is_some_and(|c| c.is_uppercase());
    let next_lower = after.trim_start().chars().next().is_some_and(|c| c.is_lowercase());
    word.len() < 4 && (capitalised || next_lower)
}

/// One part of a task: where its text lies in the task, and its run of the task's content
/// tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Part {
    pub text: Range<usize>,
    pub tokens: Range<usize>,
}

/// The task's parts with at least [`MIN_PART_TOKENS`] content tokens; empty when the task has
/// fewer than two such parts, or when the parts' pieces do not spell the task's (a tokenizer
/// that merges across the cut).
pub(crate) fn task_parts(task: &str, ids: &[u32], embedder: &dyn Embedder) -> Vec<Part> {
    let texts = split_parts(task);
    if texts.len() < 2 {
        return Vec::new();
    }
    let mut parts = Vec::with_capacity(texts.len());
    let (mut at, mut offset) = (0, 0);
    for text in texts {
        let start = offset;
        offset += text.len();
        let Ok(Some(pieces)) = embedder.piece_ids(text.trim_end()) else {
            return Vec::new();
        };
        let end = at + pieces.len();
        // A model that truncated the task saw only its first tokens: the parts past them count
        // through the whole vector alone.
        let seen = end.min(ids.len());
        if ids.get(at..seen) != Some(&pieces[..seen - at]) {
            return Vec::new();
        }
        if seen - at >= MIN_PART_TOKENS {
            parts.push(Part { text: start..start + text.trim_end().len(), tokens: at..seen });
        }
        at = end;
        if at >= ids.len() {
            break;
        }
    }
    if at < ids.len() || parts.len() < 2 {
        return Vec::new();
    }
    parts.truncate(MAX_PARTS);
    parts
}

/// Each part pooled as the model pools a whole text (see [`TokenStates::pool_run`]), one
/// after another in `out`; the count, 0 when the states cannot pool a part.
pub(crate) fn part_vectors_into(tokens: &TokenStates, parts: &[Part], out: &mut Vec<f32>) -> usize {
    let dim = tokens.dim();
    out.clear();
    out.resize(parts.len() * dim, 0.0);
    for (row, part) in out.chunks_exact_mut(dim).zip(parts) {
        if tokens.pool_run(part.tokens.clone(), row).is_none() {
            out.clear();
            return 0;
        }
    }
    parts.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_is_cut_after_each_sentence_and_line_break_that_whitespace_follows() {
        assert_eq!(
            split_parts("Delete VM001. Then optimise the database!\nFinally report"),
            vec!["Delete VM001. ", "Then optimise the database!\n", "Finally report"]
        );
        // No whitespace after the stop: a version number, a file name, a URL stay whole.
        assert_eq!(split_parts("bump to 1.2.3 in setup.py"), vec!["bump to 1.2.3 in setup.py"]);
        // Titles, initials, abbreviations and ordinals end no sentence.
        for whole in [
            "book Mrs. Rosa with Dr. Silva on Thursday",
            "annule la résa de M. Dubois, il a un empêchement",
            "buch Herrn Weber ein Doppelzimmer vom 3. bis 5. Mai",
            "list the files, e.g. the logs, etc. and zip them",
            "trag Frau Leroy am 3. Mai ein",
        ] {
            assert_eq!(split_parts(whole), vec![whole]);
        }
        assert_eq!(
            split_parts("fix the app. Then check the 2010. After that"),
            vec!["fix the app. ", "Then check the 2010. ", "After that"]
        );
        assert_eq!(
            split_parts("who is cleaning the third floor? give Ana rooms 301 to 310"),
            vec!["who is cleaning the third floor? ", "give Ana rooms 301 to 310"]
        );
        // Closing punctuation ends nothing when the text ends there.
        assert_eq!(split_parts("run the tests. "), vec!["run the tests. "]);
        assert_eq!(split_parts(""), Vec::<&str>::new());
    }
}
