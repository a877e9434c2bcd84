//! `tools.json` and `tools/*.json`: tools as an MCP server lists them (the `tools/list` result,
//! `{"tools": [{"name", "description", "inputSchema"}]}`) or as function-calling APIs declare
//! them (`[{"type": "function", "function": {"name", "description", "parameters"}}]`, or the
//! bare `{"name", "description", "input_schema"}` objects), so a catalog can route over an
//! existing server's tools without rewriting them in TOML. Such a tool is offered in every mode
//! and has no examples unless an `[[extend]]` entry of `tools.toml` gives it some
//! ([`crate::extend`]); its name is kept exactly as written, because it is what the agent calls.
//! A harness with several servers puts one list per server in `tools/` (`tools/github.json`,
//! `tools/slack.json`), read in name order.

use crate::catalog::{Letters, Source, Tool, Warning, name_problem, near_duplicates};
use crate::{ManifestError, Result};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The file's name in a manifest folder.
pub const TOOLS_JSON: &str = "tools.json";
/// The folder of one JSON tool list per server, in a manifest folder.
pub const TOOLS_DIR: &str = "tools";

/// The folder's JSON tool lists: `tools.json`, then `tools/*.json` in name order; and a warning
/// for each other file in `tools/` (it is not read).
pub(crate) fn sources(dir: &Path) -> Result<(Vec<Source>, Vec<Warning>)> {
    let mut out: Vec<Source> = crate::catalog::read(dir, TOOLS_JSON)?.into_iter().collect();
    let mut warnings = Vec::new();
    let folder = dir.join(TOOLS_DIR);
    if !folder.is_dir() {
        return Ok((out, warnings));
    }
    let io = |source| ManifestError::Io { path: folder.clone(), source };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&folder).map_err(io)? {
        let name = entry.map_err(io)?.file_name().to_string_lossy().into_owned();
        names.push(name);
    }
    names.sort();
    for name in names.iter().filter(|n| !n.starts_with('.')) {
        if name.ends_with(".json") {
            out.extend(crate::catalog::read(&folder, name)?);
        } else {
            warnings.push(Warning {
                path: folder.join(name),
                line: 1,
                message: format!("{TOOLS_DIR}/ holds one JSON tool list per server; {name} is not a .json file and is not read"),
            });
        }
    }
    Ok((out, warnings))
}

/// Where a tool's parameters may be, by the formats above, in the order looked at.
const SCHEMA_KEYS: [&str; 3] = ["inputSchema", "parameters", "input_schema"];

/// One tool of `tools.json`, with the line its name is on.
struct JsonTool {
    tool: Tool,
    line: usize,
}

/// Adds the tools of one JSON list (already read into `src`) to `tools`; `defined` holds every
/// tool name read so far, with its file and line, and gets this list's.
pub(crate) fn add(
    src: &Source,
    defined: &mut BTreeMap<String, (PathBuf, usize)>,
    tools: &mut Vec<Tool>,
    described: &BTreeSet<&str>,
    warnings: &mut Vec<Warning>,
) -> Result<()> {
    let mut lines = BTreeMap::new();
    for JsonTool { tool, line } in parse(src)? {
        if let Some((file, first)) = defined.get(&tool.name) {
            let place = if *file == src.path {
                format!("at line {first}")
            } else if file.file_name().is_some_and(|f| f == "tools.toml") {
                format!(
                    "in {} at line {first} (to add examples, tags, modes or a description to this server's tool, write an [[extend]] entry there instead of a [[tool]])",
                    file.display()
                )
            } else {
                format!("in {} at line {first}", file.display())
            };
            return Err(ManifestError::Invalid {
                path: src.path.clone(),
                line,
                field: "tools.name".into(),
                message: format!(
                    "{:?} is already defined {place}; tool names must be unique across the catalog's tool files (prefix them with the server's name if two servers share one)",
                    tool.name
                ),
            });
        }
        if !described.contains(tool.name.as_str()) {
            let how = " (a server's tool gets one from an [[extend]] entry with a `description` in tools.toml)";
            crate::tools_toml::tool_warnings(src, line, &tool, how, warnings);
        }
        defined.insert(tool.name.clone(), (src.path.clone(), line));
        lines.insert(tool.name.clone(), line);
        tools.push(tool);
    }
    let from_json = tools.iter().filter(|t| lines.contains_key(&t.name));
    near_duplicates(
        src,
        from_json.map(|t| (t.name.as_str(), t.description.as_str(), lines[&t.name])),
        warnings,
    );
    Ok(())
}

/// Parses `tools.json`'s tools, each with the line its name is on; names are checked here,
/// their uniqueness by [`add`].
fn parse(src: &Source) -> Result<Vec<JsonTool>> {
    // Editors on Windows save JSON with a byte-order mark, which JSON parsers refuse.
    let text = src.text().strip_prefix('\u{feff}').unwrap_or(src.text());
    let root: Value = serde_json::from_str(text).map_err(|e| ManifestError::Parse {
        path: src.path.clone(),
        line: e.line().max(1),
        message: format!(
            "{e}; the file must be JSON (an MCP tools/list result or an array of tools)"
        ),
    })?;
    let invalid = |line: usize, field: String, message: String| ManifestError::Invalid {
        path: src.path.clone(),
        line,
        field,
        message,
    };
    let entries = match &root {
        Value::Array(a) => a,
        Value::Object(o) => match o.get("tools").or_else(|| root.pointer("/result/tools")) {
            Some(Value::Array(a)) => a,
            _ => {
                return Err(invalid(
                    1,
                    "tools".into(),
                    "no \"tools\" array; write an MCP tools/list result ({\"tools\": [...]}) or an array of tools".into(),
                ));
            }
        },
        _ => {
            return Err(invalid(
                1,
                "(file)".into(),
                "expected an MCP tools/list result ({\"tools\": [...]}) or an array of tools"
                    .into(),
            ));
        }
    };
    if entries.is_empty() {
        return Err(invalid(
            1,
            "tools".into(),
            "no tools; add at least one or remove the file".into(),
        ));
    }
    let server = server_of(&src.path);
    let mut searched_to = 0;
    let mut out = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        // OpenAI's form wraps the tool in {"type": "function", "function": {...}}.
        let entry = entry.get("function").filter(|f| f.is_object()).unwrap_or(entry);
        let field = |key: &str| format!("tools[{i}].{key}");
        let Some(obj) = entry.as_object() else {
            return Err(invalid(
                line_at(src, searched_to),
                format!("tools[{i}]"),
                "is not an object; each tool is {\"name\", \"description\", \"inputSchema\"}"
                    .into(),
            ));
        };
        let name = match obj.get("name") {
            Some(Value::String(s)) => s.clone(),
            _ => {
                return Err(invalid(
                    line_at(src, searched_to),
                    field("name"),
                    "is missing or not a string; every tool needs the name the agent calls".into(),
                ));
            }
        };
        // The line of this tool's name: the first time its JSON string appears after the last
        // tool's (good enough to point at; JSON parsers give no positions for values).
        let quoted = serde_json::to_string(&name).unwrap_or_default();
        if let Some(at) = src.text()[searched_to..].find(&quoted) {
            searched_to += at + quoted.len();
        }
        let line = line_at(src, searched_to);
        if let Some(problem) = name_problem(&name, Letters::AnyCase) {
            return Err(invalid(line, field("name"), problem));
        }
        let description = match obj.get("description") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.trim().to_string(),
            Some(_) => {
                return Err(invalid(line, field("description"), "is not a string".into()));
            }
        };
        let schema = SCHEMA_KEYS.iter().find_map(|k| obj.get(*k).map(|v| (*k, v)));
        let parameters = match schema {
            None | Some((_, Value::Null)) => None,
            Some((_, v @ Value::Object(_))) => Some(v.clone()),
            Some((key, _)) => {
                return Err(invalid(line, field(key), "is not a JSON-schema object".into()));
            }
        };
        // MCP's display name, when it says more than the name does.
        let tags = match obj.get("title").or_else(|| entry.pointer("/annotations/title")) {
            Some(Value::String(t)) if !t.trim().is_empty() && t.trim() != name => {
                vec![t.trim().to_string()]
            }
            _ => Vec::new(),
        };
        let tool = Tool {
            name,
            description,
            modes: vec!["any".into()],
            examples: Vec::new(),
            parameters,
            tags,
            server: server.clone(),
        };
        out.push(JsonTool { tool, line });
    }
    Ok(out)
}

/// The server a tool list belongs to: the stem of `tools/<server>.json`; `None` for a lone
/// `tools.json`, whose tools are not told apart by server.
fn server_of(path: &Path) -> Option<String> {
    let in_tools_dir = path.parent()?.file_name()? == TOOLS_DIR;
    let stem = path.file_stem()?.to_str()?;
    in_tools_dir.then(|| stem.to_string())
}

fn line_at(src: &Source, byte: usize) -> usize {
    src.line(byte..byte)
}
