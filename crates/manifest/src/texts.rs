//! The texts each item is embedded and matched by: a tool's card (name as words, description,
//! tags, parameters), its examples, and the whole lexical document.

use crate::catalog::{Mode, Skill, Tool};

/// `run_tests` -> "run tests", `AddAgenda` -> "Add Agenda": names read as words embed better.
fn humanize(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut prev_lower = false;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.') {
            // One space for a run of separators: `slack__post` reads "slack post".
            if !out.is_empty() && !out.ends_with(' ') {
                out.push(' ');
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower {
            out.push(' ');
        }
        prev_lower = c.is_lowercase() || c.is_numeric();
        out.push(c);
    }
    out.truncate(out.trim_end().len());
    out
}

impl Tool {
    /// The name as words: `run_tests` -> "run tests", `AddAgenda` -> "Add Agenda".
    pub fn name_words(&self) -> String {
        humanize(&self.name)
    }

    /// The texts embedded for this tool, one row each: its [`Tool::card`], then each example as
    /// written.
    pub fn texts(&self) -> Vec<String> {
        std::iter::once(self.card()).chain(self.examples.iter().cloned()).collect()
    }

    /// The tool's first row: `"<name as words>: <description>"`, then its tags and its
    /// parameters' names and descriptions, so a tool with a thin (or no) description is still
    /// found by what it takes. The name is included because it is often the best keyword.
    pub fn card(&self) -> String {
        let mut card = humanize(&self.name);
        if !self.description.is_empty() {
            card.push_str(": ");
            card.push_str(&self.description);
        }
        if !self.tags.is_empty() {
            card.push_str(&format!(" ({})", self.tags.join(", ")));
        }
        let params = parameter_words(self.parameters.as_ref());
        if !params.is_empty() {
            card.push_str(&format!(" Parameters: {}.", params.join("; ")));
        }
        card
    }

    /// Everything routable about the tool as one text (the lexical document): the card and the
    /// examples.
    pub fn document(&self) -> String {
        self.texts().join("\n")
    }
}

/// `"room (Room number)"` for each property of a JSON-schema object, in schema order.
fn parameter_words(schema: Option<&serde_json::Value>) -> Vec<String> {
    let Some(props) = schema.and_then(|p| p.get("properties")).and_then(|p| p.as_object()) else {
        return Vec::new();
    };
    props
        .iter()
        .map(|(name, p)| {
            let words = humanize(name).to_lowercase();
            match p.get("description").and_then(|d| d.as_str()).map(str::trim) {
                Some(d) if !d.is_empty() => format!("{words} ({d})"),
                _ => words,
            }
        })
        .collect()
}

impl Skill {
    /// The texts embedded for this skill: `"<name as words>: <description> (<tags>)"`, then
    /// each example.
    pub fn texts(&self) -> Vec<String> {
        let mut card = format!("{}: {}", humanize(&self.name), self.description);
        if !self.tags.is_empty() {
            card.push_str(&format!(" ({})", self.tags.join(", ")));
        }
        std::iter::once(card).chain(self.examples.iter().cloned()).collect()
    }

    /// Everything routable about the skill as one text (the lexical document).
    pub fn document(&self) -> String {
        self.texts().join("\n")
    }
}

impl Mode {
    /// The texts embedded for this mode: its description, then its examples.
    pub fn texts(&self) -> Vec<String> {
        std::iter::once(self.description.clone()).chain(self.examples.iter().cloned()).collect()
    }
}
