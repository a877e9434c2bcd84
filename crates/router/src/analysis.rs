//! Task analysis: how much work a task asks for, and what it leaves unsaid.
//!
//! Deterministic and model-free (word lists and a few shape checks, microseconds per task), in
//! the languages the default modes cover best: English, Portuguese, Spanish, French and German
//! (other languages fall back on the shape checks: identifiers, numbers, question marks,
//! length). Two results:
//!
//! - **Complexity** (`low`, `medium`, `high`): points for length, for several actions or
//!   sequence words ("then", "depois", "puis", "danach"), for broad or structural work
//!   (migrate, refactor, rewrite, "every service", "toda la aplicación"), and for a main verb
//!   that asks for a substantial piece of work (implement, investigate, a "why" question). The
//!   assembler scales the rules budget by it.
//! - **Sufficiency**: which of *intent* (what kind of action or answer), *target* (what to act
//!   on) and *scope* (where, how far) the task does not say. A task without an intent or a
//!   target ("fix it", "cuida do problema", "the login page") is insufficient; a missing scope
//!   alone is common in good tasks and only matters for high-complexity work.
//!
//! Agreement with 120 hand-labelled tasks is measured by `switchyard eval analysis` (see
//! `tests/analysis/`).

use serde::Serialize;

/// How much work a task asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Complexity {
    /// One simple action or question on one thing.
    Low,
    /// One substantial change, or a couple of steps.
    Medium,
    /// Several steps or cross-cutting work.
    High,
}

impl Complexity {
    /// The lowercase name (`low`, `medium`, `high`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// A part of a well-formed task that the task does not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Missing {
    /// What kind of action or answer is wanted.
    Intent,
    /// What to act on.
    Target,
    /// Where, or how far.
    Scope,
}

/// What the analyser found, for the decision's account.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AnalysisSignals {
    /// Words in the task.
    pub words: usize,
    /// Action verbs found (folded), in order.
    pub actions: Vec<String>,
    /// Whether the task is a question.
    pub question: bool,
    /// Words that name the target (folded), identifiers included.
    pub target_words: Vec<String>,
    /// What gave the scope: an identifier, a place phrase or an extent word.
    pub scope_by: Option<String>,
    /// Sequence words ("then", "depois", ...).
    pub steps: usize,
    /// Broad or structural words (migrate, every, ...).
    pub broad: Vec<String>,
}

/// The task analysis of the decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskAnalysis {
    /// How much work the task asks for.
    pub complexity: Complexity,
    /// The points behind it (low 0, medium 1-2, high 3 or more).
    pub points: u32,
    /// What the task does not say, in the order intent, target, scope.
    pub missing: Vec<Missing>,
    /// Whether the task says what to do and what to act on.
    pub sufficient: bool,
    /// What the analyser found.
    pub signals: AnalysisSignals,
}

impl TaskAnalysis {
    /// The sufficiency rule: a task is sufficient when it says both what to do (intent) and
    /// what to act on (target); a missing scope alone does not make it insufficient.
    pub fn is_sufficient(missing: &[Missing]) -> bool {
        !missing.contains(&Missing::Intent) && !missing.contains(&Missing::Target)
    }

    /// A one-line hint for the model when the task leaves something essential unsaid: no
    /// intent or target, or no scope for high-complexity work. `None` otherwise.
    pub fn clarification(&self) -> Option<String> {
        let scope_matters = self.complexity == Complexity::High;
        let gaps: Vec<&str> = self
            .missing
            .iter()
            .filter(|m| **m != Missing::Scope || scope_matters)
            .map(|m| match m {
                Missing::Intent => "what should be done",
                Missing::Target => "what to act on",
                Missing::Scope => "where or how far the change goes",
            })
            .collect();
        if gaps.is_empty() {
            return None;
        }
        Some(format!(
            "the task does not say {}; if the context does not make it clear, ask one short \
             question before acting",
            join_or(&gaps)
        ))
    }
}

fn join_or(parts: &[&str]) -> String {
    match parts {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// Word lists (English, Portuguese, Spanish, French, German).
#[rustfmt::skip]
mod words;


/// File names that name a place by themselves, without an extension.
const KNOWN_FILES: &[&str] =
    &["readme", "changelog", "license", "makefile", "dockerfile", "justfile", "gemfile"];

/// Whether a whitespace-separated token names a thing exactly: a path, a file name, a code
/// symbol, an ID or a number, or a known file.
fn is_identifier(token: &str) -> bool {
    let t = token.trim_matches(|c: char| !c.is_alphanumeric() && !matches!(c, '_' | '#' | '/'));
    if t.is_empty() {
        return false;
    }
    let has_digit = t.chars().any(|c| c.is_ascii_digit());
    let has_alpha = t.chars().any(char::is_alphabetic);
    let camel = t.chars().zip(t.chars().skip(1)).any(|(a, b)| a.is_lowercase() && b.is_uppercase());
    let file = t.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=5).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && ext.chars().next().is_some_and(|c| c.is_ascii_lowercase())
    });
    (t.contains('/') && t.len() > 1)
        || t.contains("::")
        || t.contains('_') && has_alpha
        || has_digit
        || camel
        || file
        || KNOWN_FILES.contains(&t.to_lowercase().as_str())
}

/// Quoted or backticked spans name a thing exactly.
fn has_quoted_span(task: &str) -> bool {
    ['`', '"', '“', '«'].iter().any(|&open| {
        let close = match open {
            '“' => '”',
            '«' => '»',
            c => c,
        };
        task.find(open).is_some_and(|i| task[i + open.len_utf8()..].contains(close))
    })
}

use switchyard_lexical::question::folded_words;

/// Analyses a task. Deterministic; a few microseconds.
pub fn analyze_task(task: &str) -> TaskAnalysis {
    use words::contains;
    let words = folded_words(task);
    let identifiers: Vec<String> =
        task.split_whitespace().filter(|t| is_identifier(t)).map(str::to_string).collect();
    let quoted = has_quoted_span(task);
    // Words inside a code symbol or a path are names, never actions (`computeTotal`).
    let identifier_words: Vec<String> = identifiers.iter().flat_map(|t| folded_words(t)).collect();

    // Skip the request frame ("can you", "por favor", "kannst du") before reading the first
    // word, so "can you take care of this?" is a request, not a question.
    let first = switchyard_lexical::question::first_after_frame(&words);
    let question = switchyard_lexical::question::is_question_words(task, &words);

    let mut actions = Vec::new();
    let mut target_words = Vec::new();
    let mut steps = 0;
    let mut broad = Vec::new();
    let mut main_verb: Option<&str> = None;
    for (i, w) in words.iter().enumerate() {
        if contains(words::STEPS, w) {
            steps += 1;
        }
        if contains(words::BROAD, w) {
            broad.push(w.clone());
        }
        let clause_start = first == Some(i)
            || i > 0 && contains(words::CLAUSE_OPENERS, &words[i - 1])
            || w == "weg" && i + 1 == words.len();
        // "dá uma olhada", "echa un vistazo", "mach das weg": the noun carries the action.
        let light_verb_noun = contains(words::LIGHT_VERB_NOUNS, w);
        let after_noun_word =
            !light_verb_noun && i > 0 && contains(words::BEFORE_NOUNS, &words[i - 1]);
        let is_action = contains(words::ACTIONS, w)
            && !identifier_words.contains(w)
            && !after_noun_word
            && (!contains(words::AMBIGUOUS, w) || clause_start);
        if is_action {
            actions.push(w.clone());
            main_verb.get_or_insert(w);
            continue;
        }
        let content = w.chars().count() >= 3
            && !w.chars().all(|c| c.is_ascii_digit())
            && !contains(words::STOP, w)
            && !contains(words::PLACEHOLDERS, w)
            && !contains(words::QUESTION_STARTS, w)
            && !contains(words::REQUEST, w)
            && !contains(words::VAGUE, w)
            && !contains(words::EXTENT, w)
            && !contains(words::STEPS, w)
            && !contains(words::PLACE_PREPOSITIONS, w);
        if content {
            target_words.push(w.clone());
        }
    }
    target_words.extend(identifiers.iter().cloned());
    if quoted && target_words.is_empty() {
        target_words.push("(quoted)".to_string());
    }

    let scope_by = scope_evidence(&words, &identifiers, quoted);

    let mut missing = Vec::new();
    if actions.is_empty() && !question {
        missing.push(Missing::Intent);
    }
    if target_words.is_empty() {
        missing.push(Missing::Target);
    }
    if scope_by.is_none() {
        missing.push(Missing::Scope);
    }

    // Complexity points: length, several actions or chained steps, broad or structural work,
    // and a main request that is itself a substantial piece of work.
    let n = words.len();
    let mut points = u32::from(n > 18) + u32::from(n > 30);
    let distinct_actions = {
        let mut a = actions.clone();
        a.sort();
        a.dedup();
        a.len()
    };
    points += distinct_actions.saturating_sub(1).min(2) as u32;
    points += steps.min(2) as u32;
    points += broad.len().min(2) as u32;
    let why = words.iter().any(|w| contains(words::WHY, w))
        || words.windows(2).any(|p| p[0] == "por" && p[1] == "que");
    let substantial = main_verb.is_some_and(|v| contains(words::SUBSTANTIAL, v));
    points += u32::from(why || substantial);
    let complexity = match points {
        0 => Complexity::Low,
        1 | 2 => Complexity::Medium,
        _ => Complexity::High,
    };
    let sufficient = TaskAnalysis::is_sufficient(&missing);
    TaskAnalysis {
        complexity,
        points,
        missing,
        sufficient,
        signals: AnalysisSignals {
            words: n,
            actions,
            question,
            target_words,
            scope_by,
            steps,
            broad,
        },
    }
}

/// What bounds the task's place or extent: an identifier, an extent word, or a place
/// preposition followed by a word that names something.
fn scope_evidence(words: &[String], identifiers: &[String], quoted: bool) -> Option<String> {
    use words::contains;
    if let Some(id) = identifiers.first() {
        return Some(format!("identifier {id}"));
    }
    if quoted {
        return Some("a quoted name".to_string());
    }
    if let Some(w) = words.iter().find(|w| contains(words::EXTENT, w)) {
        return Some(format!("extent word {w}"));
    }
    for (i, w) in words.iter().enumerate() {
        if !contains(words::PLACE_PREPOSITIONS, w) {
            continue;
        }
        // The first word after the article(s) must name something, not be a verb ("to fix").
        let next = words[i + 1..].iter().find(|n| !contains(words::STOP, n) || is_place(n));
        if let Some(n) = next
            && n.chars().count() >= 3
            && !contains(words::ACTIONS, n)
            && !contains(words::PLACEHOLDERS, n)
            && !contains(words::VAGUE, n)
        {
            return Some(format!("place {w} {n}"));
        }
    }
    None
}

/// Words that are function words elsewhere but name a place after a preposition.
fn is_place(word: &str) -> bool {
    matches!(word, "main" | "master")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn missing(task: &str) -> Vec<Missing> {
        analyze_task(task).missing
    }

    #[test]
    fn a_pronoun_alone_names_no_target_in_any_language() {
        for task in ["fix it", "arruma isso", "arregla eso", "corrige ça", "reparier das"] {
            assert_eq!(missing(task), [Missing::Target, Missing::Scope], "{task}");
            assert!(!analyze_task(task).sufficient, "{task}");
        }
    }

    #[test]
    fn a_placeholder_verb_names_no_intent() {
        for task in ["can you take care of this?", "cuida do problema", "occupe-toi de ce truc"] {
            assert_eq!(missing(task), [Missing::Intent, Missing::Target, Missing::Scope], "{task}");
        }
    }

    #[test]
    fn a_noun_phrase_alone_names_a_target_but_no_intent() {
        assert_eq!(missing("the flaky login test"), [Missing::Intent, Missing::Scope]);
        assert_eq!(missing("la factura de marzo"), [Missing::Intent]);
    }

    #[test]
    fn identifiers_places_and_time_spans_give_the_scope() {
        for task in [
            "rename getUser to fetchUser in src/api/client.ts",
            "what's the status of order 7702",
            "restart the auth deployment in the eu-west cluster",
            "quantos pedidos foram cancelados na semana passada?",
            "warum ist der Build auf dem main-Branch seit gestern rot?",
            "update the `billing` docs",
        ] {
            assert_eq!(missing(task), [], "{task}");
            assert!(analyze_task(task).sufficient, "{task}");
        }
        assert_eq!(missing("bump the version"), [Missing::Scope]);
        assert!(analyze_task("bump the version").sufficient);
    }

    #[test]
    fn a_question_has_an_intent_without_a_verb() {
        let a = analyze_task("did 7702 go out already?");
        assert!(a.signals.question);
        assert!(!a.missing.contains(&Missing::Intent));
    }

    #[test]
    fn complexity_grows_with_steps_breadth_and_substance() {
        assert_eq!(analyze_task("rename tmp to buffer in src/io.rs").complexity, Complexity::Low);
        assert_eq!(
            analyze_task("add retry with backoff to the payment webhook handler").complexity,
            Complexity::Medium
        );
        assert_eq!(
            analyze_task(
                "primeiro migra o banco para postgres 16, depois atualiza os drivers em todos os \
                 serviços e por fim remove o código antigo"
            )
            .complexity,
            Complexity::High
        );
    }

    #[test]
    fn the_clarification_names_what_is_missing_and_only_when_it_matters() {
        let hint = analyze_task("fix it").clarification().unwrap();
        assert!(hint.contains("what to act on"), "{hint}");
        assert!(!hint.contains("where"), "{hint}");
        assert_eq!(analyze_task("bump the version").clarification(), None);
        let broad =
            analyze_task("migrate every service to the new logger and then delete the old one");
        assert_eq!(broad.complexity, Complexity::High);
    }

    #[test]
    fn empty_and_odd_input_never_panics() {
        for task in ["", "   ", "?", "修复登录测试", "🙂🙂", "a.b", "/", "#", "``"] {
            let _ = analyze_task(task);
        }
    }
}
