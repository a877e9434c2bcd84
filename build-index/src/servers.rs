//! The MCP server of each tool, for the selection section: a catalog whose tools come from
//! several servers (`tools/<server>.json`) lets each tool borrow evidence from its server's
//! other tools (see `switchyard_format::ToolServers`).

use switchyard_format::ToolServers;
use switchyard_manifest::Tool;

/// Share of a server's gap (its tools' mean fused score over the mean of every tool) added to
/// each of its tools. Chosen on the four development catalogs of MCP servers (engineering,
/// office, web shop, newsroom), where tool recall@3 with e5-small rose at every share from 0.3
/// to 1.0 and recall@5 moved by one task at most; 0.5 is the low end of that plateau
/// (`benches/RESULTS.md`, session 62).
pub const SERVER_WEIGHT: f32 = 0.5;

/// The tools' servers, or none (nothing moves) when fewer than two servers list tools.
pub(crate) fn tool_servers(tools: &[Tool]) -> ToolServers {
    let mut names: Vec<String> = Vec::new();
    let of_tool: Vec<Option<u32>> = tools
        .iter()
        .map(|t| {
            let server = t.server.as_ref()?;
            let at = names.iter().position(|n| n == server).unwrap_or_else(|| {
                names.push(server.clone());
                names.len() - 1
            });
            Some(at as u32)
        })
        .collect();
    if names.len() < 2 {
        return ToolServers::default();
    }
    ToolServers { names, of_tool, weight: SERVER_WEIGHT }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, server: Option<&str>) -> Tool {
        Tool {
            name: name.into(),
            description: format!("{name} things"),
            modes: vec!["any".into()],
            examples: Vec::new(),
            parameters: None,
            tags: Vec::new(),
            server: server.map(str::to_string),
        }
    }

    #[test]
    fn each_tool_names_its_server_in_the_order_the_servers_first_appear() {
        let s = tool_servers(&[
            tool("post", Some("slack")),
            tool("issue", Some("github")),
            tool("history", Some("slack")),
            tool("own", None),
        ]);
        assert_eq!(s.names, ["slack", "github"]);
        assert_eq!(s.of_tool, [Some(0), Some(1), Some(0), None]);
        assert_eq!(s.weight, SERVER_WEIGHT);
    }

    #[test]
    fn one_server_or_none_moves_nothing() {
        let one = [tool("a", Some("github")), tool("b", Some("github"))];
        assert_eq!(tool_servers(&one), ToolServers::default());
        let toml = [tool("a", None), tool("b", None)];
        assert_eq!(tool_servers(&toml), ToolServers::default());
    }
}
