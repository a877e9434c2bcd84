use crate::{ManifestError, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use toml::Spanned;

/// A tool the agent can call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tool {
    /// Unique id, `[A-Za-z0-9_.-]+`, kept as written: the name the agent calls.
    pub name: String,
    /// What it does, in one or two sentences.
    pub description: String,
    /// Modes it is offered in (`any` for all).
    pub modes: Vec<String>,
    /// Utterances a user might type for it.
    pub examples: Vec<String>,
    /// The callable definition (JSON schema), emitted as-is, never turned into prose.
    pub parameters: Option<serde_json::Value>,
    /// Free words that describe the tool (domain, product names), routed on like its text.
    pub tags: Vec<String>,
    /// The MCP server that lists it: the stem of its `tools/<server>.json` file. `None` for a
    /// tool of `tools.toml` or of a lone `tools.json`. Selection reads a server's other tools
    /// as evidence for each of its tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

/// A skill: instructions the agent can follow.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skill {
    /// Unique id.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// Modes it is offered in.
    pub modes: Vec<String>,
    /// Utterances that call for it.
    pub examples: Vec<String>,
    /// The full instructions, read from the `body` file.
    pub body: Option<String>,
    /// Free words that describe the skill, routed on like its text.
    pub tags: Vec<String>,
}

/// A working mode of the agent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mode {
    /// Unique id.
    pub name: String,
    /// What the mode is for.
    pub description: String,
    /// Whole-word, case-insensitive keywords that select it (any language).
    pub keywords: Vec<String>,
    /// Tasks typical of the mode, for the semantic fallback.
    pub examples: Vec<String>,
    /// Tools always included in this mode.
    pub base_tools: Vec<String>,
    /// Skills always included in this mode.
    pub base_skills: Vec<String>,
    /// The mode's rules text, read from the `rules` file.
    pub rules: Option<String>,
    /// Whether this is the mode used when no rule decides (at most one mode declares it).
    pub default: bool,
    /// Context hints that select this mode (`interactive`, `git_changes`).
    pub hints: Vec<String>,
}

/// The context hints a mode may declare, in the order the router checks them.
pub const HINTS: [&str; 2] = ["interactive", "git_changes"];

/// A known injection attack.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pattern {
    /// The attack text.
    pub text: String,
    /// Language tag.
    pub lang: String,
    /// Category (e.g. `override`, `exfiltration`).
    pub category: Option<String>,
}

/// A benign text that looks like an attack, used to keep false positives down.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Benign {
    /// The text.
    pub text: String,
    /// Language tag.
    pub lang: String,
}

/// Something suspicious that is not an error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Warning {
    /// The file.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// What looks wrong.
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: warning: {}", self.path.display(), self.line, self.message)
    }
}

/// A validated manifest folder. Items are sorted by name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Catalog {
    /// Tools.
    pub tools: Vec<Tool>,
    /// Skills.
    pub skills: Vec<Skill>,
    /// Modes.
    pub modes: Vec<Mode>,
    /// Injection patterns, in file order.
    pub patterns: Vec<Pattern>,
    /// Benign look-alikes, in file order.
    pub benign: Vec<Benign>,
    /// Thinking modes (`thinking.toml`), sorted by name; empty without the file.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub thinking: Vec<crate::ThinkingMode>,
    /// The folder's `constitution.md`, the first layer of every prompt assembled from its
    /// index; `None` without the file (the assembler's built-in one applies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub constitution: Option<String>,
    /// What `off_topic.toml` says about the off-topic check (the default without the file;
    /// left out of the content hash then, so older catalogs hash as before).
    #[serde(skip_serializing_if = "crate::OffTopicSettings::is_default")]
    pub off_topic: crate::OffTopicSettings,
    /// Non-fatal findings.
    #[serde(skip)]
    pub warnings: Vec<Warning>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SkillsFile {
    #[serde(default)]
    skill: Vec<RawSkill>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSkill {
    name: Spanned<String>,
    description: Spanned<String>,
    #[serde(default)]
    modes: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    examples: Vec<String>,
    #[serde(default)]
    body: Option<Spanned<String>>,
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModesFile {
    #[serde(default)]
    mode: Vec<RawMode>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMode {
    name: Spanned<String>,
    description: Spanned<String>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    default: Option<Spanned<bool>>,
    #[serde(default)]
    hints: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    examples: Vec<String>,
    #[serde(default)]
    base_tools: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    base_skills: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    rules: Option<Spanned<String>>,
}

/// One TOML file being read: its path and text, for line numbers.
pub(crate) struct Source {
    pub(crate) path: PathBuf,
    text: String,
}

impl Source {
    /// A text that did not come from a file (`path` names where it did come from).
    pub(crate) fn new(path: PathBuf, text: String) -> Self {
        Self { path, text }
    }

    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    fn is_blank(&self) -> bool {
        self.text.trim().is_empty()
    }

    fn into_text(self) -> String {
        self.text
    }

    pub(crate) fn line(&self, span: std::ops::Range<usize>) -> usize {
        self.text[..span.start.min(self.text.len())].matches('\n').count() + 1
    }

    pub(crate) fn invalid(
        &self,
        span: std::ops::Range<usize>,
        field: &str,
        message: impl Into<String>,
    ) -> ManifestError {
        ManifestError::Invalid {
            path: self.path.clone(),
            line: self.line(span),
            field: field.into(),
            message: message.into(),
        }
    }

    pub(crate) fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T> {
        toml::from_str(&self.text).map_err(|e| {
            let mut message = e.message().trim().to_string();
            // The parser's "duplicate key" says neither which key nor what to do.
            if message == "duplicate key"
                && let Some(key) = e.span().and_then(|s| self.text.get(s))
            {
                message = format!(
                    "duplicate key `{}`: a key may appear once per entry; remove one of them",
                    key.trim()
                );
            }
            ManifestError::Parse {
                path: self.path.clone(),
                line: e.span().map_or(1, |s| self.line(s)),
                message,
            }
        })
    }
}

pub(crate) fn read(dir: &Path, file: &str) -> Result<Option<Source>> {
    let path = dir.join(file);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ManifestError::Io { path, source: e }),
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Some(Source { path, text })),
        Err(e) => {
            let good = e.utf8_error().valid_up_to();
            let line = e.as_bytes()[..good].iter().filter(|&&b| b == b'\n').count() + 1;
            Err(ManifestError::Invalid {
                path,
                line,
                field: "(file)".into(),
                message: format!(
                    "byte {good} is not valid UTF-8; save the file as UTF-8 (manifests may use any \
                     language, but only in UTF-8)"
                ),
            })
        }
    }
}

/// Which letters a name may use.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Letters {
    /// Lowercase only: the names of modes, skills and thinking modes, which are switchyard's
    /// own identifiers (`--mode plan`).
    Lower,
    /// Either case: tool names are the ones the agent calls, and MCP servers and function-calling
    /// APIs name tools in camelCase too (`getWeather`), so they are kept exactly as written.
    AnyCase,
}

/// What is wrong with a name, if anything, and what is allowed.
pub(crate) fn name_problem(name: &str, letters: Letters) -> Option<String> {
    let (letter, allowed): (fn(&u8) -> bool, _) = match letters {
        Letters::Lower => (u8::is_ascii_lowercase, "lowercase letters"),
        Letters::AnyCase => (u8::is_ascii_alphabetic, "letters"),
    };
    let valid = !name.is_empty()
        && name.bytes().all(|b| letter(&b) || b.is_ascii_digit() || b"_.-".contains(&b));
    (!valid).then(|| format!("{name:?} is not allowed; use {allowed}, digits, `_`, `.` and `-`"))
}

/// Reads a file named by a manifest field, refusing paths that leave the folder.
pub(crate) fn read_relative(
    src: &Source,
    dir: &Path,
    rel: &Spanned<String>,
    field: &str,
) -> Result<String> {
    let p = Path::new(rel.get_ref());
    if p.is_absolute() || p.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return Err(src.invalid(
            rel.span(),
            field,
            format!(
                "{:?} escapes the manifest folder; use a path relative to {} without `..`",
                rel.get_ref(),
                dir.display()
            ),
        ));
    }
    let full = dir.join(p);
    let canonical_dir =
        dir.canonicalize().map_err(|e| ManifestError::Io { path: dir.to_path_buf(), source: e })?;
    match full.canonicalize() {
        Ok(c) if !c.starts_with(&canonical_dir) => Err(src.invalid(
            rel.span(),
            field,
            format!("{:?} resolves outside the manifest folder (symlink?)", rel.get_ref()),
        )),
        Ok(c) => std::fs::read_to_string(&c).map_err(|e| {
            src.invalid(rel.span(), field, format!("cannot read {}: {e}", c.display()))
        }),
        Err(_) => Err(src.invalid(
            rel.span(),
            field,
            format!("{} does not exist; create it or remove the field", full.display()),
        )),
    }
}

pub(crate) fn non_empty(src: &Source, s: &Spanned<String>, field: &str) -> Result<String> {
    let t = s.get_ref().trim();
    if t.is_empty() {
        return Err(src.invalid(
            s.span(),
            field,
            "must not be empty; write one or two sentences saying what it does",
        ));
    }
    Ok(t.to_string())
}

pub(crate) fn unique(
    src: &Source,
    seen: &mut BTreeMap<String, usize>,
    name: &Spanned<String>,
    field: &str,
    letters: Letters,
) -> Result<String> {
    let n = name.get_ref().clone();
    if let Some(problem) = name_problem(&n, letters) {
        return Err(src.invalid(name.span(), field, problem));
    }
    if let Some(first) = seen.get(&n) {
        return Err(src.invalid(
            name.span(),
            field,
            format!("{n:?} is already defined at line {first}; names must be unique"),
        ));
    }
    seen.insert(n.clone(), src.line(name.span()));
    Ok(n)
}

/// The modes a tool or skill lists, checked against the catalog's; every mode (`"any"`) when it
/// lists none: a catalog of names and descriptions alone is a catalog.
pub(crate) fn check_modes(
    src: &Source,
    modes: Option<&Spanned<Vec<String>>>,
    known: &BTreeSet<String>,
    field: &str,
) -> Result<Vec<String>> {
    let Some(modes) = modes else { return Ok(vec!["any".to_string()]) };
    if modes.get_ref().is_empty() {
        return Err(src.invalid(modes.span(), field, "must list at least one mode, or \"any\""));
    }
    for m in modes.get_ref() {
        if m != "any" && !known.contains(m) {
            let allowed: Vec<&str> = known.iter().map(String::as_str).chain(["any"]).collect();
            return Err(src.invalid(
                modes.span(),
                field,
                format!("mode {m:?} does not exist; allowed: {}", allowed.join(", ")),
            ));
        }
    }
    Ok(modes.get_ref().clone())
}

pub(crate) fn clean_list(items: Vec<String>) -> Vec<String> {
    items.into_iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
}

/// Lowercase word set, for near-duplicate detection.
fn words(s: &str) -> BTreeSet<String> {
    s.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 2).map(str::to_lowercase).collect()
}

impl Catalog {
    /// Loads and validates a manifest folder.
    pub fn load(dir: &Path) -> Result<Self> {
        let tools_src = read(dir, "tools.toml")?;
        let (json_srcs, ignored) = crate::tools_json::sources(dir)?;
        if tools_src.is_none() && json_srcs.is_empty() {
            return Err(ManifestError::NoTools { dir: dir.to_path_buf() });
        }
        let modes_src = read(dir, "modes.toml")?;
        let skills_src = read(dir, "skills.toml")?;
        let inj_src = read(dir, "injection.toml")?;
        let constitution = match read(dir, "constitution.md")? {
            Some(src) if src.is_blank() => {
                return Err(src.invalid(0..0, "(file)", "is empty; write the agent's standing instructions in it, or delete it to use the built-in constitution"));
            }
            Some(src) => Some(src.into_text()),
            None => None,
        };
        let off_topic = crate::off_topic::load(dir)?;
        let thinking = match read(dir, "thinking.toml")? {
            Some(src) => crate::thinking::load(&src, dir)?,
            None => Vec::new(),
        };
        let mut warnings = ignored;

        // Modes first: tools and skills refer to them.
        let mut raw_modes = Vec::new();
        let mut mode_names = BTreeSet::new();
        if let Some(src) = &modes_src {
            let file: ModesFile = src.parse()?;
            if file.mode.is_empty() {
                // Otherwise the tools' modes would be refused with "allowed: any", which names
                // the wrong file.
                return Err(src.invalid(
                    0..0,
                    "mode",
                    "no [[mode]] entries; add at least one, or delete the file (a catalog without modes offers every tool to every task)",
                ));
            }
            let mut seen = BTreeMap::new();
            for m in file.mode {
                let name = unique(src, &mut seen, &m.name, "mode.name", Letters::Lower)?;
                mode_names.insert(name.clone());
                raw_modes.push((name, m));
            }
        }

        let mut seen = BTreeMap::new();
        let (mut tools, mut extensions) = (Vec::new(), Vec::new());
        if let Some(src) = &tools_src {
            (tools, extensions) =
                crate::tools_toml::parse(src, &mode_names, &mut seen, &mut warnings)?;
        }
        let toml_path = tools_src.as_ref().map(|s| s.path.clone()).unwrap_or_default();
        let mut defined: BTreeMap<String, (PathBuf, usize)> =
            seen.into_iter().map(|(name, line)| (name, (toml_path.clone(), line))).collect();
        // A server's tool that `[[extend]]` describes gets no "no description" warning.
        let described: BTreeSet<&str> =
            extensions.iter().filter(|e| e.describes()).map(|e| e.name()).collect();
        for src in &json_srcs {
            crate::tools_json::add(src, &mut defined, &mut tools, &described, &mut warnings)?;
        }
        if let Some(src) = &tools_src {
            crate::extend::apply(src, std::mem::take(&mut extensions), &mut tools)?;
        }

        let mut skills = Vec::new();
        if let Some(src) = &skills_src {
            let file: SkillsFile = src.parse()?;
            let mut seen = BTreeMap::new();
            let mut lines = BTreeMap::new();
            for s in file.skill {
                let name = unique(src, &mut seen, &s.name, "skill.name", Letters::Lower)?;
                lines.insert(name.clone(), src.line(s.name.span()));
                let body = match &s.body {
                    Some(rel) => Some(read_relative(src, dir, rel, "skill.body")?),
                    None => None,
                };
                let description = non_empty(src, &s.description, "skill.description")?;
                let line = src.line(s.name.span());
                long_text(src, line, "skill.description", &name, &description, &mut warnings);
                skills.push(Skill {
                    description,
                    modes: check_modes(src, s.modes.as_ref(), &mode_names, "skill.modes")?,
                    examples: clean_list(s.examples),
                    body,
                    tags: clean_list(s.tags),
                    name,
                });
            }
            near_duplicates(
                src,
                skills.iter().map(|t| (t.name.as_str(), t.description.as_str(), lines[&t.name])),
                &mut warnings,
            );
        }

        let tool_names: BTreeSet<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let skill_names: BTreeSet<&str> = skills.iter().map(|t| t.name.as_str()).collect();
        let mut modes = Vec::new();
        let mut default_at: Option<(String, usize)> = None;
        let mut hint_owner: BTreeMap<String, String> = BTreeMap::new();
        if let Some(src) = &modes_src {
            for (name, m) in raw_modes {
                let is_default = m.default.as_ref().is_some_and(|d| *d.get_ref());
                if let Some(d) = m.default.as_ref().filter(|d| *d.get_ref()) {
                    if let Some((other, line)) = &default_at {
                        return Err(src.invalid(
                            d.span(),
                            "mode.default",
                            format!("{other} (line {line}) is already the default mode; mark only one mode `default = true`"),
                        ));
                    }
                    default_at = Some((name.clone(), src.line(d.span())));
                }
                let mut hints = Vec::new();
                if let Some(h) = &m.hints {
                    for hint in h.get_ref() {
                        if !HINTS.contains(&hint.as_str()) {
                            return Err(src.invalid(
                                h.span(),
                                "mode.hints",
                                format!("{hint:?} is not a hint; allowed: {}", HINTS.join(", ")),
                            ));
                        }
                        if let Some(other) = hint_owner.insert(hint.clone(), name.clone()) {
                            return Err(src.invalid(
                                h.span(),
                                "mode.hints",
                                format!("hint {hint:?} already selects mode {other}; a hint selects one mode"),
                            ));
                        }
                        hints.push(hint.clone());
                    }
                }
                let check = |list: &Option<Spanned<Vec<String>>>,
                             known: &BTreeSet<&str>,
                             field: &str,
                             what: &str|
                 -> Result<Vec<String>> {
                    let Some(list) = list else { return Ok(Vec::new()) };
                    for item in list.get_ref() {
                        if !known.contains(item.as_str()) {
                            return Err(src.invalid(list.span(), field, format!("{what} {item:?} does not exist; define it in {what}s.toml or remove it here")));
                        }
                    }
                    Ok(list.get_ref().clone())
                };
                let rules = match &m.rules {
                    Some(rel) => Some(read_relative(src, dir, rel, "mode.rules")?),
                    None => None,
                };
                modes.push(Mode {
                    description: non_empty(src, &m.description, "mode.description")?,
                    keywords: clean_list(m.keywords)
                        .into_iter()
                        .map(|k| k.to_lowercase())
                        .collect(),
                    examples: clean_list(m.examples),
                    base_tools: check(&m.base_tools, &tool_names, "mode.base_tools", "tool")?,
                    base_skills: check(&m.base_skills, &skill_names, "mode.base_skills", "skill")?,
                    rules,
                    default: is_default,
                    hints,
                    name,
                });
            }
        }

        let (patterns, benign) = match &inj_src {
            Some(src) => crate::injection::parse(src)?,
            None => (Vec::new(), Vec::new()),
        };

        tools.sort_by(|a, b| a.name.cmp(&b.name));
        skills.sort_by(|a, b| a.name.cmp(&b.name));
        modes.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Self {
            tools,
            skills,
            modes,
            patterns,
            benign,
            thinking,
            constitution,
            off_topic,
            warnings,
        })
    }

    /// sha256 of the catalog's canonical JSON (bodies and rules included): two folders with the
    /// same content hash the same, whatever their formatting or location.
    pub fn content_hash(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        Sha256::digest(&json).iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The mode chosen when no rule decides: the one marked `default = true`; for catalogs
    /// that mark none, `act` if defined, else the first mode, else `act`.
    pub fn default_mode(&self) -> String {
        if let Some(m) = self.modes.iter().find(|m| m.default) {
            return m.name.clone();
        }
        if self.modes.iter().any(|m| m.name == "act") || self.modes.is_empty() {
            "act".into()
        } else {
            self.modes[0].name.clone()
        }
    }
}

/// Longest description, in characters, before a warning: the models read at most a few hundred
/// tokens of a row, so the rest never counts.
const LONG_DESCRIPTION: usize = 1500;

pub(crate) fn long_text(
    src: &Source,
    line: usize,
    field: &str,
    name: &str,
    text: &str,
    warnings: &mut Vec<Warning>,
) {
    let n = text.chars().count();
    if n > LONG_DESCRIPTION {
        warnings.push(Warning {
            path: src.path.clone(),
            line,
            message: format!(
                "{field}: {name}'s description is {n} characters; the model reads about the first {LONG_DESCRIPTION}, so put what it does first (the rest still counts for lexical matching)"
            ),
        });
    }
}

pub(crate) fn near_duplicates<'a>(
    src: &Source,
    items: impl Iterator<Item = (&'a str, &'a str, usize)>,
    warnings: &mut Vec<Warning>,
) {
    let items: Vec<(&str, BTreeSet<String>, usize)> =
        items.map(|(n, d, l)| (n, words(d), l)).collect();
    for (i, (a, wa, _)) in items.iter().enumerate() {
        for (b, wb, line) in &items[i + 1..] {
            let inter = wa.intersection(wb).count();
            let union = wa.union(wb).count().max(1);
            if inter * 10 >= union * 9 {
                warnings.push(Warning {
                    path: src.path.clone(),
                    line: *line,
                    message: format!("{b} and {a} have near-identical descriptions; the router cannot tell them apart"),
                });
            }
        }
    }
}
