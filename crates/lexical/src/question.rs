//! Whether a text asks a question, from its words alone: the task analysis reads it, and the
//! mode step compares a task's form with the form of each mode's examples (a catalog whose
//! lookup mode is written in questions and whose default mode in commands tells the two apart
//! by that alone, in any domain).
//!
//! A text is a question when its first word after a request frame ("can you", "por favor",
//! "kannst du") opens a question in English, Portuguese, Spanish, French or German ("where",
//! "quantas", "il", no: "où"), or when it carries a question mark (`?`, `？`, `¿`) and no request
//! frame ("can you ship it today?" asks for an action), or when, with no request frame, it asks
//! in place: colloquial French, Portuguese and Spanish leave the question word where the answer
//! goes ("il nous reste combien de bougies", "a gente tem quantas caixas", "el pedido está
//! dónde"), and a text that counts ("how many", "wie viele") asks wherever it says so. Words are
//! folded (lowercase, Latin diacritics removed) before they are compared, so "qué" and "que"
//! read alike; only the in-place rule reads Spanish accents and French "où", which the spelling
//! itself marks as interrogative.

use crate::fold;

/// Version of the rules below: an index stores what they said about its mode examples, and a
/// router reads those counts only when they were made by the same rules.
pub const QUESTION_RULES_VERSION: u32 = 2;

/// Folded words that open a question. A trailing `*` matches any word starting with the rest.
#[rustfmt::skip]
pub const QUESTION_STARTS: &[&str] = &[
    "what", "whats", "why", "how", "which", "who", "when", "where", "whose", "is", "are",
    "does", "did", "has", "have", "was", "were", "qual", "quais", "quanto*", "quanta*",
    "porque", "como", "quando", "onde", "quem", "cual*", "cuant*", "donde", "cuando", "quien",
    "quel*", "combien", "pourquoi", "comment", "quand", "ou", "qui", "warum", "wieso",
    "weshalb", "wie", "wann", "wo", "wer", "welch*", "wieviel*", "que", "por", "existe",
    "gibt", "ist", "sind", "hat", "haben", "est",
];

/// Folded words that ask wherever they stand: no relative or conjunction reading of them is
/// common in a task ("combien", Portuguese "quantos", colloquial "cadê").
pub const ASK_ANYWHERE: &[&str] = &["combien", "quantos", "quantas", "cade"];

/// Folded word pairs that ask wherever they stand: a count asked for.
pub const ASK_ANYWHERE_PAIRS: &[(&str, &str)] =
    &[("how", "many"), ("how", "much"), ("wie", "viel"), ("wie", "viele")];

/// Folded words that ask when they end the text ("le colis, il en est où", "c'est quand",
/// "a reunião é quando"); earlier in a sentence they are as often relative ("l'entrepôt où").
/// French "comment" is left out: in English it ends many commands ("add a comment").
pub const ASK_AT_END: &[&str] = &["quand", "quoi", "combien", "quando", "onde", "quanto"];

/// Spanish interrogatives as written with their accent, which marks the question reading
/// anywhere in a sentence ("cuánto", against the relative "cuanto"); matched on the lowercased,
/// unfolded words.
pub const ACCENTED_INTERROGATIVES: &[&str] = &[
    "cuánto", "cuánta", "cuántos", "cuántas", "dónde", "cuándo", "quién", "quiénes", "cuál",
    "cuáles", "qué", "cómo",
];

/// Folded polite or request words that may come before the request itself ("can you",
/// "bitte", "por favor").
#[rustfmt::skip]
pub const REQUEST_FRAME: &[&str] = &[
    "can", "could", "would", "will", "please", "pls", "you", "pode", "podes", "poderia",
    "voce", "puedes", "podrias", "podria", "peux", "pouvez", "pourrais", "pourriez", "kannst",
    "konntest", "konnen", "bitte", "por", "favor", "me", "mir", "i", "need", "want", "tu",
    "vous", "du", "preciso", "quero", "necesito", "quiero", "je", "veux", "ich", "brauche",
    "mochte", "let", "lets", "s",
];

/// Whether `word` (folded) is in `list`, where an entry ending in `*` matches by prefix.
pub fn listed(list: &[&str], word: &str) -> bool {
    list.iter().any(|e| match e.strip_suffix('*') {
        Some(prefix) => word.starts_with(prefix),
        None => *e == word,
    })
}

/// The folded words of `text`, split at every character that is not a letter or a digit (so
/// elisions split: `l'API` -> l, api).
pub fn folded_words(text: &str) -> Vec<String> {
    fold(text)
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The position of the first word after the request frame, if any word is not part of it.
pub fn first_after_frame(words: &[String]) -> Option<usize> {
    words.iter().position(|w| !listed(REQUEST_FRAME, w))
}

/// Whether `words` (from [`folded_words`] of `text`) ask a question; see the module docs.
pub fn is_question_words(text: &str, words: &[String]) -> bool {
    let first = first_after_frame(words);
    let framed = first.is_some_and(|i| i > 0);
    let marked = text.trim_end().ends_with(['?', '？']) || text.contains('¿');
    first.is_some_and(|i| listed(QUESTION_STARTS, &words[i]))
        || !framed && (marked || asks_in_place(text, words))
}

/// Whether the text asks with a question word where the answer goes, or asks for a count
/// anywhere (see the module docs); the caller has checked that no request frame opens it.
fn asks_in_place(text: &str, words: &[String]) -> bool {
    let anywhere = words.iter().any(|w| ASK_ANYWHERE.contains(&w.as_str()));
    let pair =
        words.windows(2).any(|p| ASK_ANYWHERE_PAIRS.iter().any(|&(a, b)| p[0] == a && p[1] == b));
    let at_end = words.last().is_some_and(|w| ASK_AT_END.contains(&w.as_str()));
    let lowered = text.to_lowercase();
    let spoken: Vec<&str> = lowered.split(|c: char| !c.is_alphanumeric()).collect();
    let accented = spoken.iter().any(|w| ACCENTED_INTERROGATIVES.contains(w));
    // French "où" ends the question ("il en est où"); before that it is often relative.
    let ou_at_end = spoken.iter().rev().find(|w| !w.is_empty()) == Some(&"où");
    anywhere || pair || at_end || accented || ou_at_end
}

/// Whether `text` asks a question; see the module docs.
pub fn is_question(text: &str) -> bool {
    is_question_words(text, &folded_words(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_told_from_commands_in_five_languages() {
        for q in [
            "did 7702 go out already",
            "where's the package for Mr Okafor right now",
            "how many blue mugs do we still have",
            "o pedido 4410 já saiu?",
            "quantas garrafas térmicas ainda temos",
            "¿qué transportista nos sale más barato?",
            "le colis de Mme Durand, il en est où ?",
            "combien de bougies reste-t-il",
            "wie viele Thermoskannen haben wir noch",
            "ist die Bestellung 9031 schon raus?",
            "この注文はもう発送されましたか？",
            // Asked in place, with no question mark.
            "il nous reste combien de bougies parfumées",
            "on a vendu combien de sacs à dos en septembre",
            "le colis de Mme Durand il en est où",
            "la livraison c'est quand",
            "a gente ainda tem quantas caixas de fita",
            "cadê o pedido da Joana",
            "el pedido de Lucía está dónde",
            "tell me how many mugs are left",
            "sag mir wie viele Kartons noch da sind",
        ] {
            assert!(is_question(q), "{q} is a question");
        }
        for c in [
            "ship the three oldest orders with the cheap carrier",
            "can you ship order 55 today?",
            "pode mandar a etiqueta de devolução?",
            "kannst du die Bestellung stornieren?",
            "annule la commande de Paul",
            "storniere die Bestellung von Frau Weber",
            // Relative or conjunction readings of the same words.
            "déplace les chaises vers l'entrepôt où il reste de la place",
            "manda el paquete en cuanto llegue el camión",
            "envía el pedido cuando puedas",
            "ship it as soon as you know where it goes",
            "can you tell me how many mugs are left",
            "add a comment",
            "",
            "   ",
        ] {
            assert!(!is_question(c), "{c:?} is not a question");
        }
    }

    #[test]
    fn starred_entries_match_by_prefix() {
        assert!(listed(&["welch*"], "welcher"));
        assert!(!listed(&["welch"], "welcher"));
        assert!(listed(&["wo"], "wo"));
    }
}
