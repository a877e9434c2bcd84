//! The cross-lingual glossary: words of German, French, Spanish, Portuguese and Italian read as
//! the English words they translate, so that the lexical side meets a task and a catalog
//! written in different languages (dictionary-based query translation, applied to both sides).
//!
//! Why: the dense side carries most of a cross-language match, and where it misses ("storniere
//! die Bestellung" against "Cancel an order") the lexical side scored nothing, since a prefix
//! stemmer joins "reservation" and "reserva" but never "stornieren" and "cancel". The table
//! (`glossary.txt`, one concept a line) covers the general vocabulary of tool catalogs, not any
//! one catalog.
//!
//! English text is never read otherwise: no word of the table is an English word in common use.
//! `glossary_words_are_no_heads` checks that no form is one of the table's own English words; a
//! maintainer adding words checks them against an English frequency list as well (every exact
//! form under Zipf 3.2 and no English word of Zipf 2.8 or more under a prefix, with the PyPI
//! package `wordfreq`), since a form that is also English would change English routing.

use crate::analyze::{fold, stem};
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// The table, one concept a line: `english words | foreign forms`.
const TABLE: &str = include_str!("glossary.txt");

/// Prefix forms need at least this many letters before their `*`.
const MIN_PREFIX: usize = 4;

/// Forms and prefixes to the stems of the English words they stand for.
struct Glossary {
    exact: BTreeMap<String, Vec<String>>,
    prefixes: BTreeMap<String, Vec<String>>,
    /// The longest prefix, in characters, which bounds the prefixes tried per word.
    longest_prefix: usize,
}

// A constant table parsed once per process (no setting is read here): every analysis of a
// catalog or a task looks words up in it.
static GLOSSARY: LazyLock<Glossary> = LazyLock::new(|| parse(TABLE));

fn parse(table: &str) -> Glossary {
    let mut g = Glossary { exact: BTreeMap::new(), prefixes: BTreeMap::new(), longest_prefix: 0 };
    for line in table.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        let Some((heads, forms)) = line.split_once('|') else {
            continue;
        };
        let mut stems: Vec<String> = Vec::new();
        for h in heads.split_whitespace() {
            let s = stem(&fold(h));
            if !stems.contains(&s) {
                stems.push(s);
            }
        }
        for form in forms.split_whitespace() {
            let form = fold(form);
            let (map, key) = match form.strip_suffix('*') {
                Some(p) => {
                    g.longest_prefix = g.longest_prefix.max(p.chars().count());
                    (&mut g.prefixes, p.to_string())
                }
                None => (&mut g.exact, form),
            };
            let entry = map.entry(key).or_default();
            for s in &stems {
                if !entry.contains(s) {
                    entry.push(s.clone());
                }
            }
        }
    }
    g
}

/// The stems of the English words `word` (folded, whole) stands for, if it is in the glossary:
/// an exact form first, then the longest prefix form it starts with.
pub(crate) fn lookup(word: &str) -> Option<&'static [String]> {
    let g = &*GLOSSARY;
    if let Some(stems) = g.exact.get(word) {
        return Some(stems);
    }
    let ends: Vec<usize> = word.char_indices().map(|(i, _)| i).skip(MIN_PREFIX).collect();
    // Prefixes of MIN_PREFIX characters up to the longest in the table, longest first (the whole
    // word counts as a prefix too: "storn*" matches "storn").
    let mut cuts: Vec<usize> = ends.into_iter().take(g.longest_prefix + 1 - MIN_PREFIX).collect();
    if word.chars().count() <= g.longest_prefix {
        cuts.push(word.len());
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts.iter().rev().find_map(|&cut| g.prefixes.get(&word[..cut]).map(Vec::as_slice))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_parses_and_prefixes_are_long_enough() {
        let mut concepts = 0;
        for line in TABLE.lines() {
            let line = line.split('#').next().unwrap_or_default().trim();
            if line.is_empty() {
                continue;
            }
            let (heads, forms) = line.split_once('|').expect("a concept line has a |");
            assert!(!heads.trim().is_empty() && !forms.trim().is_empty(), "{line}");
            for f in forms.split_whitespace() {
                assert_eq!(fold(f), f, "forms are written folded: {f}");
                if let Some(p) = f.strip_suffix('*') {
                    assert!(p.chars().count() >= MIN_PREFIX, "prefix too short: {f}");
                    assert!(!p.contains('*'), "{f}");
                }
            }
            concepts += 1;
        }
        assert!(concepts > 100, "{concepts}");
    }

    #[test]
    fn glossary_words_are_no_heads() {
        // An English word of the table read as another English word would change English text.
        let g = &*GLOSSARY;
        for line in TABLE.lines() {
            let line = line.split('#').next().unwrap_or_default().trim();
            let Some((heads, _)) = line.split_once('|') else { continue };
            for h in heads.split_whitespace() {
                assert_eq!(lookup(&fold(h)), None, "the English word {h} is a glossary form");
            }
        }
        assert!(!g.exact.is_empty() && !g.prefixes.is_empty());
    }

    #[test]
    fn forms_and_prefixes_are_found_longest_first() {
        assert_eq!(lookup("stornieren"), Some(&["cancel".to_string()][..]));
        assert_eq!(lookup("storn"), Some(&["cancel".to_string()][..]));
        // "lieferant*" (supplier) is longer than "liefer*" (deliver).
        assert_eq!(lookup("lieferanten").unwrap()[0], "suppli");
        assert_eq!(lookup("lieferung").unwrap()[0], "ship");
        assert_eq!(lookup("cancel"), None);
        assert_eq!(lookup("sto"), None);
        assert_eq!(lookup(""), None);
    }
}
