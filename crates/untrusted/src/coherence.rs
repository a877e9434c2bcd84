//! How much of a sentence the text around it already says: the request contrast's measure of
//! whether the sentence it found belongs to the document or was planted in it.
//!
//! A request planted in an e-mail or a table is about something else ("How have migration
//! patterns changed?" in a table of wrestlers); a request that belongs to its text picks up
//! its words ("...the detective in my novel. How would the detective question the maid?").
//! The measure is the share of the sentence's character 4-grams inside words (lowercased; and
//! character pairs inside runs of CJK script, where a character is about a word) that also
//! occur within `reach` bytes before or after it. It reads only those bytes,
//! not the whole text: over a whole 12,000-byte text, a half of an unrelated sentence's
//! 4-grams occur somewhere by chance (common endings and words), against a tenth within a
//! paragraph or two, so a bounded reach keeps the measure the same for short and long texts.

use crate::Window;
use std::collections::HashSet;
use switchyard_lexical::is_cjk;

/// Characters per gram outside CJK script.
const GRAM: usize = 4;

/// The share (0 to 1) of the distinct grams of `unit` (a span of `text`) that also occur in the
/// text within `reach` bytes before its start or after its end (cut at character boundaries).
/// 0 for a unit without grams, or with no text around it.
pub fn neighbourhood_overlap(text: &str, unit: Window, reach: usize) -> f32 {
    let (start, end) = (floor_boundary(text, unit.start), floor_boundary(text, unit.end));
    let own = grams(&text[start..end.max(start)]);
    if own.is_empty() {
        return 0.0;
    }
    let before = &text[floor_boundary(text, start.saturating_sub(reach))..start];
    let after = &text[end..floor_boundary(text, end.saturating_add(reach))];
    let mut around = grams(before);
    around.extend(grams(after));
    let shared = own.iter().filter(|g| around.contains(*g)).count();
    shared as f32 / own.len() as f32
}

/// The largest character boundary of `text` at or below `at` (clamped to its length).
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The distinct grams of `text`: the character 4-grams inside its words (runs of letters and
/// digits, lowercased), and the character pairs inside its runs of CJK script, each as its
/// characters. Grams never span two words: the short words every sentence has ("is", "the",
/// "in", "de") then add nothing, where across spaces they made a fifth of an unrelated short
/// question's grams match any English text.
fn grams(text: &str) -> HashSet<[char; GRAM]> {
    let mut out: HashSet<[char; GRAM]> = HashSet::new();
    let mut word: Vec<char> = Vec::new();
    let mut flush = |word: &mut Vec<char>| {
        out.extend(word.windows(GRAM).map(|w| [w[0], w[1], w[2], w[3]]));
        // A pair is padded with NULs, which no 4-gram of a word holds.
        out.extend(
            word.windows(2)
                .filter(|w| is_cjk(w[0]) && is_cjk(w[1]))
                .map(|w| [w[0], w[1], '\0', '\0']),
        );
        word.clear();
    };
    for c in text.chars() {
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else {
            flush(&mut word);
        }
    }
    flush(&mut word);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(text: &str, part: &str) -> Window {
        let start = text.find(part).unwrap();
        Window { start, end: start + part.len() }
    }

    #[test]
    fn a_sentence_about_its_text_overlaps_more_than_a_planted_one() {
        let planted = "| Wrestler | Reigns | Date |\n| Lanny Poffo | 1 | May 10 |\nHow have global migration patterns changed in the 21st century?\n| Randy Savage | 2 | June 3 |";
        let belongs = "My novel follows a detective in Paris who questions a maid about a stolen necklace. How would the detective question the maid about the necklace?";
        let p = neighbourhood_overlap(
            planted,
            span(planted, "How have global migration patterns changed in the 21st century?"),
            1000,
        );
        let b = neighbourhood_overlap(
            belongs,
            span(belongs, "How would the detective question the maid about the necklace?"),
            1000,
        );
        assert!(p < 0.2 && b > 0.4 && b > p, "planted {p}, belongs {b}");
    }

    #[test]
    fn only_the_reach_around_the_sentence_counts() {
        let far = format!(
            "migration patterns everywhere. {} Where do migration patterns go?",
            "x ".repeat(800)
        );
        let unit = span(&far, "Where do migration patterns go?");
        let near = neighbourhood_overlap(&far, unit, 3000);
        let bounded = neighbourhood_overlap(&far, unit, 100);
        assert!(near > bounded, "{near} vs {bounded}");
        assert_eq!(
            neighbourhood_overlap(
                "Just one sentence.",
                span("Just one sentence.", "Just one sentence."),
                1000
            ),
            0.0
        );
    }

    #[test]
    fn case_space_and_cjk_pairs_count_and_bad_spans_do_not_panic() {
        let text = "Le  RAPPORT trimestriel.\nle rapport   trimestriel est prêt";
        // Short words ("is", "the", "in") are no grams: an unrelated question shares nothing.
        let mail = "The freight report is attached; the costs in the north rose.\nWhat is the tallest mountain in Africa?";
        let q = neighbourhood_overlap(
            mail,
            span(mail, "What is the tallest mountain in Africa?"),
            1000,
        );
        assert_eq!(q, 0.0);
        let v = neighbourhood_overlap(text, span(text, "le rapport   trimestriel est"), 100);
        assert!(v > 0.6, "{v}");
        let cjk = "会议记录：预算已批准。预算什么时候到账？";
        let v = neighbourhood_overlap(cjk, span(cjk, "预算什么时候到账？"), 1000);
        assert!(v > 0.0, "{v}");
        // Spans past the end or inside a character are cut back, never a panic.
        let _ = neighbourhood_overlap(cjk, Window { start: 1, end: 10_000 }, 5);
    }
}
