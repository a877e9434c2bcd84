//! A tool's MCP server as evidence: a task that suits several tools of one server likelier
//! wants that server, so each tool's fused score moves by the index's weight times the gap
//! between its server's mean fused score and the mean over every tool. A tool no server lists
//! does not move; neither does any tool of a catalog with fewer than two servers (its index
//! stores no servers).

use switchyard_format::ToolServers;
use switchyard_lexical::Fused;

/// Adds the server evidence to `fused` (one per tool, in the index's order) and writes what
/// each tool gained into `added`; `sums` is a reused buffer. Does nothing (and leaves `added`
/// empty) when `servers` lists none or `weight` is 0.
pub(crate) fn add_server_evidence(
    fused: &mut [Fused],
    servers: &ToolServers,
    weight: f32,
    sums: &mut Vec<(f32, u32)>,
    added: &mut Vec<f32>,
) {
    added.clear();
    if weight == 0.0 || servers.of_tool.len() != fused.len() || fused.is_empty() {
        return;
    }
    sums.clear();
    sums.resize(servers.names.len(), (0.0, 0));
    for (f, server) in fused.iter().zip(&servers.of_tool) {
        if let Some(s) = server.and_then(|s| sums.get_mut(s as usize)) {
            s.0 += f.score;
            s.1 += 1;
        }
    }
    let mean = fused.iter().map(|f| f.score).sum::<f32>() / fused.len() as f32;
    for (f, server) in fused.iter_mut().zip(&servers.of_tool) {
        let gain = match server.and_then(|s| sums.get(s as usize)) {
            Some(&(sum, n)) if n > 0 => weight * (sum / n as f32 - mean),
            _ => 0.0,
        };
        f.score += gain;
        added.push(gain);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fused(scores: &[f32]) -> Vec<Fused> {
        scores.iter().map(|&s| Fused { dense: s, late: None, lexical: 0.0, score: s }).collect()
    }

    fn servers(of_tool: &[Option<u32>]) -> ToolServers {
        ToolServers {
            names: vec!["chat".into(), "files".into()],
            of_tool: of_tool.to_vec(),
            weight: 0.5,
        }
    }

    #[test]
    fn a_tool_whose_server_suits_the_task_overtakes_a_lone_near_miss() {
        // Tools 0-1 are the chat server's, 2-3 the file server's. The task reads like chat, but
        // the file server's write tool (2) edges out the chat tool that answers it (0).
        let mut f = fused(&[0.80, 0.70, 0.82, 0.10]);
        let (mut sums, mut added) = (Vec::new(), Vec::new());
        let s = servers(&[Some(0), Some(0), Some(1), Some(1)]);
        add_server_evidence(&mut f, &s, 0.5, &mut sums, &mut added);
        // Mean 0.605; chat's mean 0.75 (+0.0725), files' 0.46 (-0.0725).
        assert!(f[0].score > f[2].score, "{f:?}");
        assert!((added[0] - 0.0725).abs() < 1e-6 && (added[2] + 0.0725).abs() < 1e-6, "{added:?}");
        assert_eq!(added[0], added[1]);
    }

    #[test]
    fn a_tool_no_server_lists_and_a_zero_weight_move_nothing() {
        let mut f = fused(&[0.9, 0.1, 0.5]);
        let (mut sums, mut added) = (Vec::new(), Vec::new());
        add_server_evidence(
            &mut f,
            &servers(&[Some(0), Some(1), None]),
            0.5,
            &mut sums,
            &mut added,
        );
        assert_eq!(added[2], 0.0);
        assert_eq!(f[2].score, 0.5);
        let mut g = fused(&[0.9, 0.1, 0.5]);
        add_server_evidence(
            &mut g,
            &servers(&[Some(0), Some(1), None]),
            0.0,
            &mut sums,
            &mut added,
        );
        assert!(added.is_empty());
        assert_eq!(g, fused(&[0.9, 0.1, 0.5]));
    }

    #[test]
    fn an_index_without_servers_moves_nothing() {
        let mut f = fused(&[0.9, 0.1]);
        let (mut sums, mut added) = (Vec::new(), Vec::new());
        add_server_evidence(&mut f, &ToolServers::default(), 0.5, &mut sums, &mut added);
        assert!(added.is_empty());
        assert_eq!(f, fused(&[0.9, 0.1]));
    }
}
