//! `tools.toml`: the tools the agent can call, each `[[tool]]` with its name, description,
//! modes, examples, tags and parameters; and `[[extend]]` entries, which add to the tools of
//! the JSON lists (see [`crate::extend`]).

use crate::catalog::{
    Letters, Source, Tool, Warning, check_modes, clean_list, long_text, near_duplicates, unique,
};
use crate::extend::Extension;
use crate::{ManifestError, Result};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolsFile {
    #[serde(default)]
    tool: Vec<RawTool>,
    #[serde(default)]
    extend: Vec<crate::extend::RawExtension>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    name: Spanned<String>,
    #[serde(default)]
    description: Option<Spanned<String>>,
    #[serde(default)]
    modes: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    examples: Vec<String>,
    #[serde(default)]
    parameters: Option<toml::Table>,
    #[serde(default)]
    tags: Vec<String>,
}

/// The tools of `tools.toml`, with their names' lines in `seen`, and its checked `[[extend]]`
/// entries.
pub(crate) fn parse(
    src: &Source,
    mode_names: &BTreeSet<String>,
    seen: &mut BTreeMap<String, usize>,
    warnings: &mut Vec<Warning>,
) -> Result<(Vec<Tool>, Vec<Extension>)> {
    let file: ToolsFile = src.parse()?;
    if file.tool.is_empty() && file.extend.is_empty() {
        return Err(ManifestError::Invalid {
            path: src.path.clone(),
            line: 1,
            field: "tool".into(),
            message: "no [[tool]] entries; add at least one (or [[extend]] entries, beside a tools.json or tools/*.json)".into(),
        });
    }
    let mut tools = Vec::new();
    for t in file.tool {
        let name = unique(src, seen, &t.name, "tool.name", Letters::AnyCase)?;
        let parameters = match t.parameters {
            Some(table) => Some(serde_json::to_value(&table).map_err(|e| {
                src.invalid(
                    t.name.span(),
                    "tool.parameters",
                    format!("not representable as JSON: {e}"),
                )
            })?),
            None => None,
        };
        let line = src.line(t.name.span());
        let description = t.description.as_ref().map(|d| d.get_ref().trim().to_string());
        let tool = Tool {
            description: description.unwrap_or_default(),
            modes: check_modes(src, t.modes.as_ref(), mode_names, "tool.modes")?,
            examples: clean_list(t.examples),
            parameters,
            tags: clean_list(t.tags),
            name,
            server: None,
        };
        tool_warnings(src, line, &tool, "", warnings);
        tools.push(tool);
    }
    near_duplicates(
        src,
        tools.iter().map(|t| (t.name.as_str(), t.description.as_str(), seen[&t.name])),
        warnings,
    );
    let extensions = crate::extend::check(src, file.extend, mode_names, seen, warnings)?;
    Ok((tools, extensions))
}

/// The warnings any tool may get, from whichever file: no description, or a very long one.
/// `how_to_describe` ends the first one: where to write a description for a tool of that file.
pub(crate) fn tool_warnings(
    src: &Source,
    line: usize,
    tool: &Tool,
    how_to_describe: &str,
    warnings: &mut Vec<Warning>,
) {
    let name = &tool.name;
    if tool.description.is_empty() {
        warnings.push(Warning {
            path: src.path.clone(),
            line,
            message: format!(
                "tool.description: {name} has no description; it stays routable by its name{}, but one sentence saying what it does routes far better{how_to_describe}",
                if tool.parameters.is_some() { " and parameters" } else { "" }
            ),
        });
    }
    long_text(src, line, "tool.description", name, &tool.description, warnings);
}
