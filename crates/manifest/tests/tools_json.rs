//! `tools.json`: an MCP server's tool list, or function-calling tools, as a catalog's tools.
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use common::{err, load};

/// What an MCP server answers to `tools/list`, pretty-printed as servers' dumps are.
const MCP_LIST: &str = r#"{
  "tools": [
    {
      "name": "getForecast",
      "title": "Weather forecast",
      "description": "Get the weather forecast for a city.",
      "inputSchema": {
        "type": "object",
        "properties": {
          "city": { "type": "string", "description": "City name" },
          "days": { "type": "integer" }
        },
        "required": ["city"]
      },
      "annotations": { "readOnlyHint": true }
    },
    {
      "name": "list_alerts",
      "inputSchema": { "type": "object", "properties": { "region": { "type": "string" } } }
    }
  ]
}"#;

#[test]
fn an_mcp_tool_list_is_a_catalog_with_names_kept_as_the_server_wrote_them() {
    let c = load(&[("tools.json", MCP_LIST)]);
    let names: Vec<&str> = c.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["getForecast", "list_alerts"]);
    let forecast = &c.tools[0];
    assert_eq!(forecast.modes, ["any"]);
    assert_eq!(forecast.tags, ["Weather forecast"]);
    assert_eq!(
        forecast.card(),
        "get Forecast: Get the weather forecast for a city. (Weather forecast) Parameters: city (City name); days."
    );
    assert_eq!(forecast.parameters.as_ref().unwrap()["required"][0], "city");
    // No description: routable by its name and parameters, with a warning on its line.
    assert_eq!(c.tools[1].card(), "list alerts Parameters: region.");
    let w: Vec<String> = c.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].ends_with(":18: warning: tool.description: list_alerts has no description; it stays routable by its name and parameters, but one sentence saying what it does routes far better (a server's tool gets one from an [[extend]] entry with a `description` in tools.toml)"), "{w:?}");
}

#[test]
fn function_calling_tools_load_in_openai_and_anthropic_form() {
    let openai = r#"[{"type": "function", "function": {"name": "refund_order", "description": "Refund an order.", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}}]"#;
    let c = load(&[("tools.json", openai)]);
    assert_eq!(
        (c.tools[0].name.as_str(), c.tools[0].description.as_str()),
        ("refund_order", "Refund an order.")
    );
    assert!(c.tools[0].card().ends_with("Parameters: order id."));
    let anthropic = r#"[{"name": "refund_order", "description": "Refund an order.", "input_schema": {"type": "object", "properties": {"reason": {"type": "string"}}}}]"#;
    let c = load(&[("tools.json", anthropic)]);
    assert!(c.tools[0].card().ends_with("Parameters: reason."));
    // The JSON-RPC response itself, as a client logs it.
    let response = r#"{"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "ping"}]}}"#;
    assert_eq!(load(&[("tools.json", response)]).tools[0].name, "ping");
    // Saved with a byte-order mark, as editors on Windows do.
    let with_bom = format!("\u{feff}{response}");
    assert_eq!(load(&[("tools.json", &with_bom)]).tools[0].name, "ping");
}

#[test]
fn tools_json_beside_tools_toml_adds_its_tools_and_shares_their_modes_rules() {
    let toml = "[[mode]]\nname = \"plan\"\ndescription = \"Plan\"\nkeywords = []\n";
    let tools =
        "[[tool]]\nname = \"read_file\"\ndescription = \"Read a file\"\nmodes = [\"plan\"]\n";
    let c = load(&[("modes.toml", toml), ("tools.toml", tools), ("tools.json", MCP_LIST)]);
    let names: Vec<&str> = c.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["getForecast", "list_alerts", "read_file"]);
    // A name in both files is refused, naming both places.
    let twice = r#"{"tools": [{"name": "read_file", "description": "Read a file"}]}"#;
    let e = err(&[("modes.toml", toml), ("tools.toml", tools), ("tools.json", twice)]);
    assert!(
        e.starts_with(
            "DIR/tools.json:1: tools.name: \"read_file\" is already defined in DIR/tools.toml at line 2"
        ) && e.contains("write an [[extend]] entry there instead of a [[tool]]"),
        "{e}"
    );
    // Neither file: the error names both.
    let e = err(&[("modes.toml", toml)]);
    assert!(e.contains("no tools.toml or tools.json"), "{e}");
}

#[test]
fn a_broken_tools_json_is_refused_naming_the_line_and_the_field() {
    for (json, says) in [
        ("{\"tools\": [\n  {\"name\": \"a\",}\n]}", "DIR/tools.json:2: "),
        ("{\"tools\": [\n  {\"name\": \"a\",}\n]}", "must be JSON"),
        ("{\"servers\": []}", "tools: no \"tools\" array"),
        ("[]", "no tools; add at least one"),
        (
            "[{\"name\": \"a\"},\n {\"description\": \"no name\"}]",
            "DIR/tools.json:1: tools[1].name: is missing",
        ),
        (
            "[{\"name\": \"a\"},\n {\"name\": \"get weather\"}]",
            "DIR/tools.json:2: tools[1].name: \"get weather\" is not allowed; use letters",
        ),
        (
            "[{\"name\": \"a\", \"inputSchema\": \"city\"}]",
            "tools[0].inputSchema: is not a JSON-schema object",
        ),
        ("[{\"name\": \"a\", \"description\": 3}]", "tools[0].description: is not a string"),
        ("[{\"name\": \"a\"}, {\"name\": \"a\"}]", "\"a\" is already defined at line 1"),
    ] {
        let e = err(&[("tools.json", json)]);
        assert!(e.contains(says), "{json}: {e}");
    }
}

#[test]
fn several_servers_each_bring_their_own_list_in_the_tools_folder() {
    let github = r#"{"tools": [{"name": "github__create_issue", "description": "Open an issue"}]}"#;
    let slack =
        r#"{"tools": [{"name": "slack__post_message", "description": "Post to a channel"}]}"#;
    let c = load(&[
        ("tools/slack.json", slack),
        ("tools/github.json", github),
        ("tools/README.md", "how we dumped these"),
        ("tools/.hidden", "x"),
        ("tools.json", MCP_LIST),
    ]);
    let names: Vec<&str> = c.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["getForecast", "github__create_issue", "list_alerts", "slack__post_message"]
    );
    // A run of separators reads as one space.
    assert_eq!(c.tools[3].name_words(), "slack post message");
    // Each tool of the folder knows its server by the file's name; a lone tools.json has none.
    let servers: Vec<Option<&str>> = c.tools.iter().map(|t| t.server.as_deref()).collect();
    assert_eq!(servers, [None, Some("github"), None, Some("slack")]);
    let w: Vec<String> = c.warnings.iter().map(ToString::to_string).collect();
    assert!(
        w.iter().any(|w| w.contains("tools/README.md:1: warning: tools/ holds one JSON tool list per server; README.md is not a .json file")),
        "{w:?}"
    );
    assert!(!w.iter().any(|w| w.contains(".hidden")), "{w:?}");
    // The folder alone is a catalog.
    assert_eq!(load(&[("tools/github.json", github)]).tools.len(), 1);
    // Two servers with one name: refused, naming the other file; a prefix fixes it.
    let e = err(&[("tools/a.json", github), ("tools/b.json", github)]);
    assert!(
        e.starts_with("DIR/tools/b.json:1: tools.name: \"github__create_issue\" is already defined in DIR/tools/a.json at line 1")
            && e.contains("prefix them with the server's name"),
        "{e}"
    );
}
