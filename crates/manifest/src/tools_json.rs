//! `tools.json`: tools as an MCP server lists them (the `tools/list` result,
//! `{"tools": [{"name", "description", "inputSchema"}]}`) or as function-calling APIs declare
//! them (`[{"type": "function", "function": {"name", "description", "parameters"}}]`, or the
//! bare `{"name", "description", "input_schema"}` objects), so a catalog can route over an
//! existing server's tools without rewriting them in TOML. Such a tool is offered in every mode
//! and has no examples; its name is kept exactly as written, because it is what the agent calls.

use crate::catalog::{Letters, Source, Tool, Warning, name_problem, near_duplicates};
use crate::{ManifestError, Result};
use serde_json::Value;
use std::collections::BTreeMap;

/// The file's name in a manifest folder.
pub const TOOLS_JSON: &str = "tools.json";

/// Where a tool's parameters may be, by the formats above, in the order looked at.
const SCHEMA_KEYS: [&str; 3] = ["inputSchema", "parameters", "input_schema"];

/// One tool of `tools.json`, with the line its name is on.
struct JsonTool {
    tool: Tool,
    line: usize,
}

/// Adds the tools of `tools.json` (already read into `src`) to `tools`, those of `tools.toml`
/// with their lines in `in_toml`.
pub(crate) fn add(
    src: &Source,
    in_toml: &BTreeMap<String, usize>,
    tools: &mut Vec<Tool>,
    warnings: &mut Vec<Warning>,
) -> Result<()> {
    let mut lines = BTreeMap::new();
    for JsonTool { tool, line } in parse(src)? {
        let earlier = match (in_toml.get(&tool.name), lines.get(&tool.name)) {
            (Some(first), _) => Some(format!("in tools.toml at line {first}")),
            (None, Some(first)) => Some(format!("at line {first}")),
            (None, None) => None,
        };
        if let Some(earlier) = earlier {
            return Err(ManifestError::Invalid {
                path: src.path.clone(),
                line,
                field: "tools.name".into(),
                message: format!(
                    "{:?} is already defined {earlier}; tool names must be unique across tools.toml and {TOOLS_JSON}",
                    tool.name
                ),
            });
        }
        crate::tools_toml::tool_warnings(src, line, &tool, warnings);
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
        };
        out.push(JsonTool { tool, line });
    }
    Ok(out)
}

fn line_at(src: &Source, byte: usize) -> usize {
    src.line(byte..byte)
}
