//! The trainer: candle autograd and AdamW on precomputed, frozen embeddings.
//!
//! Each step takes a batch of queries from one set and scores them against every tool of that
//! set's catalog, both sides mapped by the adapter; the loss is the contrastive cross-entropy
//! of the gold tools (several for a multi-tool query: the log of their summed probability).
//! After every epoch the adapter is measured on the validation queries (queries whose gold
//! tools were never trained on, so the figure is about tools the adapter has not seen) and the
//! best epoch is kept; the identity counts as epoch 0, so an adapter that does not help on
//! validation comes out as the identity. Everything is seeded: one input gives one file.

use crate::{Adapter, AdapterError, AdapterInfo, SetSummary};
use candle_core::{D, DType, Device, Tensor, Var};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};

/// One labelled query: its embedding and the indexes of its gold tools in the set's catalog.
#[derive(Debug, Clone)]
pub struct Example {
    /// The query's embedding (L2-normalised).
    pub query: Vec<f32>,
    /// Gold tools (indexes into [`TrainSet::tools`] rows).
    pub gold: Vec<usize>,
}

/// A catalog with its labelled queries, split into training and validation.
#[derive(Debug, Clone)]
pub struct TrainSet {
    /// The set's name as given on the command line.
    pub name: String,
    /// Tool rows, row-major, `dim` columns, L2-normalised.
    pub tools: Vec<f32>,
    /// Queries to train on.
    pub train: Vec<Example>,
    /// Queries to choose the epoch on.
    pub validation: Vec<Example>,
}

/// The trainer's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainConfig {
    /// Rank of the residual.
    pub rank: usize,
    /// Softmax temperature.
    pub temperature: f64,
    /// AdamW learning rate.
    pub learning_rate: f64,
    /// AdamW weight decay.
    pub weight_decay: f64,
    /// Queries per step.
    pub batch: usize,
    /// Map the tools' descriptions too (a symmetric map); otherwise only query-like texts
    /// (tasks, and tools' example requests) are mapped, which lets the map turn how people ask
    /// into how tools are described.
    pub both_sides: bool,
    /// Most epochs.
    pub max_epochs: usize,
    /// Queries drawn from each set per epoch (a fresh sample each epoch; all when smaller),
    /// so a large set is checked on validation often and a small one is not drowned out.
    pub epoch_queries: usize,
    /// Stop after this many epochs without a better validation recall.
    pub patience: usize,
    /// Seed of the initialisation and the shuffles.
    pub seed: u64,
}

impl Default for TrainConfig {
    fn default() -> Self {
        Self {
            rank: 32,
            temperature: 0.05,
            learning_rate: 2e-3,
            weight_decay: 0.01,
            batch: 64,
            both_sides: false,
            max_epochs: 8,
            epoch_queries: 2048,
            patience: 2,
            seed: 0x5711_7c4a,
        }
    }
}

/// What one epoch did.
#[derive(Debug, Clone)]
pub struct EpochReport {
    /// 1-based.
    pub epoch: usize,
    /// Mean training loss over the epoch's steps.
    pub loss: f64,
    /// Validation recall@5 per set, in input order.
    pub validation_recall5: Vec<f64>,
}

/// Recall@k of one query: the share of its gold tools among the `k` best rows.
pub fn recall_at(scores: &[f32], gold: &[usize], k: usize) -> f64 {
    if gold.is_empty() {
        return 0.0;
    }
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let top = &order[..k.min(order.len())];
    gold.iter().filter(|g| top.contains(g)).count() as f64 / gold.len() as f64
}

/// Mean validation recall@5 of `adapter` on `set` (the identity when `None`).
pub fn validation_recall5(adapter: Option<&Adapter>, set: &TrainSet, dim: usize) -> f64 {
    if set.validation.is_empty() {
        return 0.0;
    }
    let tools = match adapter {
        Some(a) if a.info.both_sides => a.apply_rows(&set.tools),
        _ => set.tools.clone(),
    };
    let mut q = Vec::with_capacity(dim);
    let total: f64 = set
        .validation
        .iter()
        .map(|ex| {
            match adapter {
                Some(a) => a.apply(&ex.query, &mut q),
                None => q.clone_from(&ex.query),
            }
            let scores: Vec<f32> = tools
                .chunks_exact(dim)
                .map(|t| t.iter().zip(&q).map(|(a, b)| a * b).sum())
                .collect();
            recall_at(&scores, &ex.gold, 5)
        })
        .sum();
    total / set.validation.len() as f64
}

/// SplitMix64: a small, seedable, portable generator (the shuffles and the initialisation).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let (a, b) = (self.unit().max(1e-12), self.unit());
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    }
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

fn err(e: candle_core::Error) -> AdapterError {
    AdapterError::Train(e.to_string())
}

/// `normalise(x + (x V) Uᵀ)` for a batch of rows.
fn adapt(x: &Tensor, u: &Tensor, v: &Tensor) -> candle_core::Result<Tensor> {
    let y = (x + x.matmul(v)?.matmul(&u.t()?)?)?;
    let norm = y.sqr()?.sum_keepdim(1)?.sqrt()?;
    y.broadcast_div(&norm)
}

/// Trains an adapter for the model `model` (`fingerprint`, `dim`) on `sets`.
pub fn train(
    model: &str,
    fingerprint: [u8; 16],
    dim: usize,
    sets: &[TrainSet],
    config: &TrainConfig,
    progress: &dyn Fn(&EpochReport),
) -> Result<Adapter, AdapterError> {
    if config.rank == 0 || config.rank > dim {
        return Err(AdapterError::Train(format!(
            "rank {} is out of range: use 1..={dim}",
            config.rank
        )));
    }
    if config.batch == 0 || config.temperature <= 0.0 {
        return Err(AdapterError::Train("batch and temperature must be positive".into()));
    }
    for s in sets {
        let tools = s.tools.len() / dim;
        if s.tools.len() % dim != 0 || tools < 2 {
            return Err(AdapterError::Train(format!(
                "set {}: needs at least two tools of dimension {dim}",
                s.name
            )));
        }
        let bad = s.train.iter().chain(&s.validation).find(|e| {
            e.query.len() != dim || e.gold.is_empty() || e.gold.iter().any(|&g| g >= tools)
        });
        if bad.is_some() {
            return Err(AdapterError::Train(format!(
                "set {}: a query has the wrong dimension, no gold tool or a gold tool outside the catalog",
                s.name
            )));
        }
    }
    if sets.iter().all(|s| s.train.is_empty()) {
        return Err(AdapterError::Train("no training queries".into()));
    }
    let device = Device::Cpu;
    let mut rng = SplitMix(config.seed);
    let r = config.rank;
    let scale = 1.0 / (dim as f64).sqrt();
    let v0: Vec<f32> = (0..dim * r).map(|_| (rng.normal() * scale) as f32).collect();
    let u = Var::from_tensor(&Tensor::zeros((dim, r), DType::F32, &device).map_err(err)?)
        .map_err(err)?;
    let v =
        Var::from_tensor(&Tensor::from_vec(v0, (dim, r), &device).map_err(err)?).map_err(err)?;
    let params = ParamsAdamW {
        lr: config.learning_rate,
        weight_decay: config.weight_decay,
        ..ParamsAdamW::default()
    };
    let mut opt = AdamW::new(vec![u.clone(), v.clone()], params).map_err(err)?;
    let tool_tensors: Vec<Tensor> = sets
        .iter()
        .map(|s| Tensor::from_slice(&s.tools, (s.tools.len() / dim, dim), &device))
        .collect::<candle_core::Result<_>>()
        .map_err(err)?;

    let mut info = AdapterInfo {
        model: model.to_string(),
        sets: sets
            .iter()
            .map(|s| SetSummary {
                name: s.name.clone(),
                tools: s.tools.len() / dim,
                train_queries: s.train.len(),
                validation_queries: s.validation.len(),
                validation_recall5_before: validation_recall5(None, s, dim),
                validation_recall5_after: 0.0,
            })
            .collect(),
        rank: r,
        temperature: config.temperature,
        learning_rate: config.learning_rate,
        weight_decay: config.weight_decay,
        batch: config.batch,
        both_sides: config.both_sides,
        epochs_run: 0,
        best_epoch: 0,
        seed: config.seed,
    };
    let has_validation = sets.iter().any(|s| !s.validation.is_empty());
    let score = |per_set: &[f64]| {
        let with: Vec<f64> = sets
            .iter()
            .zip(per_set)
            .filter(|(s, _)| !s.validation.is_empty())
            .map(|(_, r)| *r)
            .collect();
        with.iter().sum::<f64>() / with.len().max(1) as f64
    };
    let before: Vec<f64> = info.sets.iter().map(|s| s.validation_recall5_before).collect();
    let mut best =
        (score(&before), before, Adapter::identity(fingerprint, dim, r, AdapterInfo::default()));
    let mut since_best = 0;
    for epoch in 1..=config.max_epochs {
        let mut batches: Vec<(usize, Vec<usize>)> = Vec::new();
        for (si, s) in sets.iter().enumerate() {
            let mut order: Vec<usize> = (0..s.train.len()).collect();
            rng.shuffle(&mut order);
            order.truncate(config.epoch_queries.max(1));
            batches.extend(order.chunks(config.batch).map(|c| (si, c.to_vec())));
        }
        rng.shuffle(&mut batches);
        let mut loss_sum = 0.0;
        for (si, picks) in &batches {
            let set = &sets[*si];
            let tools = set.tools.len() / dim;
            let mut q = Vec::with_capacity(picks.len() * dim);
            let mut mask = vec![0f32; picks.len() * tools];
            for (b, &i) in picks.iter().enumerate() {
                q.extend_from_slice(&set.train[i].query);
                for &g in &set.train[i].gold {
                    mask[b * tools + g] = 1.0;
                }
            }
            let loss = (|| {
                let q = Tensor::from_vec(q, (picks.len(), dim), &device)?;
                let mask = Tensor::from_vec(mask, (picks.len(), tools), &device)?;
                let qa = adapt(&q, u.as_tensor(), v.as_tensor())?;
                let ta = if config.both_sides {
                    adapt(&tool_tensors[*si], u.as_tensor(), v.as_tensor())?
                } else {
                    tool_tensors[*si].clone()
                };
                let logits = (qa.matmul(&ta.t()?)? / config.temperature)?;
                let logp = candle_nn::ops::log_softmax(&logits, D::Minus1)?;
                let gold_p = (logp.exp()? * mask)?.sum(1)?;
                let loss = (gold_p + 1e-12)?.log()?.mean_all()?.neg()?;
                opt.backward_step(&loss)?;
                loss.to_scalar::<f32>()
            })()
            .map_err(err)?;
            loss_sum += loss as f64;
        }
        let current = Adapter {
            fingerprint,
            dim,
            rank: r,
            u: u.as_tensor().flatten_all().and_then(|t| t.to_vec1()).map_err(err)?,
            v: v.as_tensor().flatten_all().and_then(|t| t.to_vec1()).map_err(err)?,
            info: AdapterInfo { both_sides: config.both_sides, ..AdapterInfo::default() },
        };
        let per_set: Vec<f64> =
            sets.iter().map(|s| validation_recall5(Some(&current), s, dim)).collect();
        progress(&EpochReport {
            epoch,
            loss: loss_sum / batches.len().max(1) as f64,
            validation_recall5: per_set.clone(),
        });
        info.epochs_run = epoch;
        let now = score(&per_set);
        // Without validation queries there is nothing to choose on: the last epoch is kept.
        if now > best.0 || !has_validation {
            best = (now, per_set, current);
            info.best_epoch = epoch;
            since_best = 0;
        } else {
            since_best += 1;
            if since_best >= config.patience {
                break;
            }
        }
    }
    for (s, after) in info.sets.iter_mut().zip(&best.1) {
        s.validation_recall5_after = *after;
    }
    let mut adapter = best.2;
    adapter.info = info;
    Ok(adapter)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: Vec<f32>) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }

    /// Eight tools, each a signal axis plus a nuisance axis of its own. Each query holds its
    /// gold tool's signal and the nuisance of five other tools, louder: the identity ranks the
    /// gold tool sixth, and a map that mutes the nuisance axes (rank 8) ranks it first.
    fn nuisance_set(seed: u64) -> TrainSet {
        let (dim, tools) = (16, 8);
        let tool_rows: Vec<f32> = (0..tools)
            .flat_map(|t| {
                unit((0..dim).map(|i| if i == t || i == 8 + t { 1.0 } else { 0.0 }).collect())
            })
            .collect();
        let mut rng = SplitMix(seed);
        let mut examples = Vec::new();
        for n in 0..400 {
            let gold = n % tools;
            let mut q = vec![0f32; dim];
            q[gold] = 0.5;
            let mut others: Vec<usize> = (0..tools).filter(|&t| t != gold).collect();
            rng.shuffle(&mut others);
            for &w in &others[..5] {
                q[8 + w] = 0.6 + 0.05 * rng.normal() as f32;
            }
            examples.push(Example { query: unit(q), gold: vec![gold] });
        }
        let validation = examples.split_off(300);
        TrainSet { name: "nuisance".into(), tools: tool_rows, train: examples, validation }
    }

    #[test]
    fn training_learns_a_map_the_identity_lacks_and_is_reproducible() {
        let set = nuisance_set(3);
        let config = TrainConfig { rank: 8, batch: 32, max_epochs: 6, ..TrainConfig::default() };
        let a = train("toy", [1; 16], 16, std::slice::from_ref(&set), &config, &|_| {}).unwrap();
        let s = &a.info.sets[0];
        assert!(s.validation_recall5_before < 0.2, "{s:?}");
        assert!(s.validation_recall5_after > 0.9, "{s:?}");
        assert!(a.info.best_epoch >= 1);
        let again = train("toy", [1; 16], 16, &[set], &config, &|_| {}).unwrap();
        assert_eq!(a.to_bytes(), again.to_bytes(), "same inputs, same file");
    }

    #[test]
    fn bad_inputs_are_refused_with_the_set_named() {
        let mut set = nuisance_set(1);
        set.train[0].gold = vec![99];
        let config = TrainConfig { rank: 4, ..TrainConfig::default() };
        let e = train("toy", [1; 16], 16, &[set], &config, &|_| {}).unwrap_err();
        assert!(e.to_string().contains("set nuisance"), "{e}");
        let e = train(
            "toy",
            [1; 16],
            16,
            &[nuisance_set(1)],
            &TrainConfig { rank: 17, ..TrainConfig::default() },
            &|_| {},
        )
        .unwrap_err();
        assert!(e.to_string().contains("rank 17"), "{e}");
    }
}
