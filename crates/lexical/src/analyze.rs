//! Text to terms, the same way at build time and at run time.

use unicode_segmentation::UnicodeSegmentation;

/// Version of the analyser; stored with the statistics, since terms only mean something to the
/// analyser that made them. Bump it whenever [`analyze`] changes its output.
pub const ANALYZER_VERSION: u32 = 1;

/// Alphabetic terms are cut to this many characters: a stemmer with no language tables that
/// also joins a word's forms across the languages we serve (deploy, deployment, deployed).
pub const STEM_PREFIX: usize = 6;

/// Whether `c` is of a CJK script (Han, kana, Hangul), where a character is about a word: the
/// analyser and the screen's overlap measure read such runs as character pairs.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF   // Hiragana, Katakana
        | 0x3400..=0x4DBF // CJK Extension A
        | 0x4E00..=0x9FFF // CJK Unified Ideographs
        | 0xAC00..=0xD7AF // Hangul syllables
        | 0xF900..=0xFAFF) // CJK Compatibility Ideographs
}

/// Lowercase with the diacritics of Latin scripts removed (`É` → `e`, `ß` → `ss`, `œ` → `oe`).
fn fold_into(c: char, out: &mut String) {
    for l in c.to_lowercase() {
        let folded: &str = match l {
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' => "a",
            'ç' | 'ć' | 'č' | 'ĉ' | 'ċ' => "c",
            'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ĕ' | 'ė' | 'ę' | 'ě' => "e",
            'ì' | 'í' | 'î' | 'ï' | 'ĩ' | 'ī' | 'ĭ' | 'į' | 'ı' => "i",
            'ñ' | 'ń' | 'ň' | 'ņ' => "n",
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ŏ' | 'ő' => "o",
            'ù' | 'ú' | 'û' | 'ü' | 'ũ' | 'ū' | 'ŭ' | 'ů' | 'ű' | 'ų' => "u",
            'ý' | 'ÿ' => "y",
            'ś' | 'š' | 'ş' => "s",
            'ź' | 'ž' | 'ż' => "z",
            'ł' => "l",
            'ď' | 'đ' => "d",
            'ť' | 'ţ' => "t",
            'ř' => "r",
            'ğ' => "g",
            'ß' => "ss",
            'æ' => "ae",
            'œ' => "oe",
            _ => {
                out.push(l);
                continue;
            }
        };
        out.push_str(folded);
    }
}

/// `text` lowercased with the diacritics of Latin scripts removed, the same folding the
/// analyser applies to every term (`Überprüfe` → `uberprufe`): for callers that match words
/// against their own lists.
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        fold_into(c, &mut out);
    }
    out
}

/// Splits one segmented word at name boundaries: `_`, `-`, `.`, `:` and a lower-to-upper step.
fn name_parts(word: &str) -> impl Iterator<Item = &str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut prev: Option<char> = None;
    for (i, c) in word.char_indices() {
        if matches!(c, '_' | '-' | '.' | ':' | '\'' | '’') {
            parts.push(&word[start..i]);
            start = i + c.len_utf8();
            prev = None;
            continue;
        }
        if c.is_uppercase() && prev.is_some_and(|p| p.is_lowercase() || p.is_numeric()) {
            parts.push(&word[start..i]);
            start = i;
        }
        prev = Some(c);
    }
    parts.push(&word[start..]);
    parts.into_iter().filter(|p| !p.is_empty())
}

fn push_term(part: &str, out: &mut Vec<String>) {
    let mut folded = fold(part);
    if folded.chars().count() < 2 {
        return;
    }
    if folded.chars().any(char::is_alphabetic)
        && let Some((cut, _)) = folded.char_indices().nth(STEM_PREFIX)
    {
        folded.truncate(cut);
    }
    out.push(folded);
}

/// The terms of `text`, in order (duplicates kept: they are term frequencies).
pub fn analyze(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    // A run of CJK characters, emitted as bigrams when it ends.
    let mut cjk: Vec<char> = Vec::new();
    let flush = |cjk: &mut Vec<char>, out: &mut Vec<String>| {
        match cjk.len() {
            0 => {}
            1 => out.push(cjk[0].to_string()),
            _ => out.extend(cjk.windows(2).map(|w| w.iter().collect::<String>())),
        }
        cjk.clear();
    };
    for word in text.split_word_bounds() {
        if word.chars().all(is_cjk) && !word.is_empty() {
            cjk.extend(word.chars());
            continue;
        }
        flush(&mut cjk, &mut out);
        if !word.chars().any(char::is_alphanumeric) {
            continue;
        }
        for part in name_parts(word) {
            push_term(part, &mut out);
        }
    }
    flush(&mut cjk, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_words_in_every_convention() {
        assert_eq!(analyze("getWeatherForecast"), ["get", "weathe", "foreca"]);
        assert_eq!(
            analyze("run_tests git-diff TheClique::Songkick"),
            ["run", "tests", "git", "diff", "the", "clique", "songki"]
        );
        assert_eq!(analyze("AddAgenda GPT4"), ["add", "agenda", "gpt4"]);
    }

    #[test]
    fn accents_fold_and_forms_meet_across_languages() {
        assert_eq!(analyze("Réservation"), analyze("reservation"));
        assert_eq!(analyze("réserver")[0], analyze("Reservierung")[0]);
        assert_eq!(analyze("Straße"), ["strass"]);
    }

    #[test]
    fn cjk_runs_become_bigrams() {
        assert_eq!(analyze("运行单元测试"), ["运行", "行单", "单元", "元测", "测试"]);
        assert_eq!(analyze("run 测试 now"), ["run", "测试", "now"]);
    }

    #[test]
    fn one_letter_terms_and_punctuation_are_dropped() {
        assert_eq!(analyze("a / b -- ok?"), ["ok"]);
        assert!(analyze("").is_empty());
    }
}
