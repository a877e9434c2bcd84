//! Words for what a task names by its form rather than by a word: a URL, an e-mail address, a
//! file path or file name, a chat channel (`#deploys`), a mention (`@maya`), a time of day
//! (`15:30`). A tool that takes such a thing says so in its parameters (`url`, `email`, `path`,
//! `channel_id`, `user`, `time`), and a task that holds one seldom says the word: "résume-moi
//! https://…", "tell #deploys the hotfix is out", "read /var/log/app/error.log". The forms are
//! the same in every language, so the words are added to the task's lexical terms whatever
//! language it is in. Only the lexical side reads them; the embedding sees the task as written.

use crate::analyze;

/// The words tools use for each kind of thing a task can name by form, in [`Kind`]'s order.
const WORDS: [&str; 6] =
    ["url link website", "email mail", "path file", "channel", "user username", "time"];

/// Extensions that make a word a file name (`notes.md`, `docker-compose.yml`).
const FILE_EXTENSIONS: &[&str] = &[
    "md", "txt", "log", "yml", "yaml", "json", "jsonl", "csv", "tsv", "toml", "ini", "cfg", "conf",
    "env", "xml", "html", "htm", "css", "pdf", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt",
    "ods", "png", "jpg", "jpeg", "gif", "svg", "zip", "gz", "tar", "sql", "db", "sqlite", "py",
    "rs", "js", "ts", "tsx", "jsx", "go", "java", "kt", "rb", "php", "c", "h", "cpp", "hpp", "cs",
    "sh", "lock",
];

/// The kinds of things a task can name by form; each indexes [`WORDS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Url,
    Email,
    Path,
    Channel,
    Mention,
    Time,
}

/// The lexical terms of the kinds of things `text` names by form (each kind once, in a fixed
/// order); empty when it names none.
///
/// ```
/// use switchyard_lexical::{analyze, entity_terms};
///
/// assert_eq!(entity_terms("résume-moi https://blog.example.com/post"), analyze("url link website"));
/// assert_eq!(entity_terms("tell #deploys at 15:30"), analyze("channel time"));
/// assert!(entity_terms("fix issue #412 by Friday").is_empty());
/// ```
pub fn entity_terms(text: &str) -> Vec<String> {
    let mut found = [false; WORDS.len()];
    // Every form holds one of these bytes; most words hold none and are passed over unread.
    let may_be_form =
        |w: &&str| w.bytes().any(|b| matches!(b, b':' | b'/' | b'@' | b'#' | b'.' | b'\\'));
    for word in text.split_whitespace().filter(may_be_form) {
        if let Some(kind) = kind_of(word) {
            found[kind as usize] = true;
        }
    }
    WORDS.iter().zip(found).filter(|(_, f)| *f).flat_map(|(words, _)| analyze(words)).collect()
}

/// The kind of thing one whitespace-separated word of a task is, if any.
fn kind_of(word: &str) -> Option<Kind> {
    // Quotes, brackets and sentence punctuation around a word are not part of it.
    let quote = |c: char| {
        matches!(c, '"' | '\'' | '`' | '(' | ')' | '[' | ']' | '<' | '>' | '«' | '»' | '“' | '”')
    };
    let word = word
        .trim_start_matches(|c| quote(c) || matches!(c, '¿' | '¡'))
        .trim_end_matches(|c| quote(c) || matches!(c, '.' | ',' | ';' | ':' | '!' | '?'));
    let starts =
        |prefix: &str| word.get(..prefix.len()).is_some_and(|p| p.eq_ignore_ascii_case(prefix));
    if starts("http://") || starts("https://") || starts("www.") {
        return (word.len() > 8).then_some(Kind::Url);
    }
    if let Some((user, domain)) = word.split_once('@') {
        if user.is_empty() {
            return starts_with_letter(domain).then_some(Kind::Mention);
        }
        // A domain with a dot inside it: a name before and a top-level domain after.
        let dot = domain.rfind('.').filter(|&i| i > 0 && i + 1 < domain.len());
        return (dot.is_some() && !domain.contains('@')).then_some(Kind::Email);
    }
    if let Some(name) = word.strip_prefix('#') {
        return starts_with_letter(name).then_some(Kind::Channel);
    }
    if is_path(word) {
        return Some(Kind::Path);
    }
    is_time(word).then_some(Kind::Time)
}

fn starts_with_letter(s: &str) -> bool {
    s.chars().next().is_some_and(char::is_alphabetic)
}

/// `/var/log/app.log`, `~/notes`, `./src/main.rs`, `C:\Users\me`, or a file name with a known
/// extension (`notes.md`); not a fraction, a date or "and/or".
fn is_path(word: &str) -> bool {
    let rooted = ["/", "~/", "./", "../"].iter().find_map(|p| word.strip_prefix(p));
    if let Some(rest) = rooted {
        return starts_with_letter(rest) || rest.starts_with(['.', '_']);
    }
    let bytes = word.as_bytes();
    if bytes.len() > 3 && bytes[0].is_ascii_alphabetic() && &bytes[1..3] == b":\\" {
        return true;
    }
    match word.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && stem.chars().any(char::is_alphabetic)
                && FILE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
        }
        None => false,
    }
}

/// A time of day: `9:05`, `15:30`, `23:59`.
fn is_time(word: &str) -> bool {
    let Some((h, m)) = word.split_once(':') else { return false };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(h)
        && h.len() <= 2
        && m.len() == 2
        && digits(m)
        && h.parse::<u32>().is_ok_and(|h| h < 24)
        && m.parse::<u32>().is_ok_and(|m| m < 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<Kind> {
        text.split_whitespace().filter_map(kind_of).collect()
    }

    #[test]
    fn each_form_is_read_in_any_language_with_its_punctuation() {
        use Kind::*;
        assert_eq!(kinds("résume-moi cette page : https://blog.example.com/post-mortem"), [Url]);
        assert_eq!(kinds("escribe a julie@exemple.fr (urgente)"), [Email]);
        assert_eq!(kinds("lee las últimas 50 líneas de /var/log/app/error.log."), [Path]);
        assert_eq!(kinds("was steht in \"docker-compose.yml\"?"), [Path]);
        assert_eq!(kinds("avísale a #general y a @maya"), [Channel, Mention]);
        assert_eq!(kinds("si son las 15:00 en Madrid"), [Time]);
        assert_eq!(kinds(r"abre C:\Users\ana\notas"), [Path]);
    }

    #[test]
    fn look_alikes_are_not_read_as_forms() {
        for text in [
            "merge #412 and/or #77",
            "version 1.4.2 of the API",
            "it costs 3.50 and the ratio is 3:1",
            "at 25:00 or 9:5",
            "e.g. the U.S. team",
            "write to me@",
            "a score of 4/5 on 12/05",
        ] {
            assert!(kinds(text).is_empty(), "{text}: {:?}", kinds(text));
        }
    }

    #[test]
    fn each_kind_adds_its_words_once() {
        let terms = entity_terms("copy /a/b.txt to /c/d.txt and ./e.md");
        assert_eq!(terms, analyze("path file"));
    }
}
