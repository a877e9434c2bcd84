//! A perceptron with one hidden layer of rectified units, for the screen's family heads.
//!
//! **Why.** A family head must separate role-played *harmful* requests (a jailbreak) from
//! role-played harmless ones (WildGuard's benign prompts: "Imagine you are a sorcerer who must
//! pour a curse into a potion..."). Both share the framing; what differs is the request inside
//! it, and a single direction through the embedding weighs framing and request together. One
//! hidden layer can read the two apart. On e5-small's whole-text embeddings of the report
//! halves (a measurement outside the pipeline), with the lexical head beside it and 0.1% more
//! benign training rows allowed, a logistic family head caught 0.803 of JailbreakBench and this
//! one 0.864, for the same WildGuard false positives. Through the real pipeline (windows,
//! sentences, the triage) it caught 0.879 against 0.847 but dropped 0.067 of WildGuard's
//! benign prompts against 0.053: the trade a larger budget buys the linear head. So it is an
//! option (`build-index --family-hidden 64`), not the default (`benches/RESULTS.md`, session 42).
//!
//! **Training.** Mini-batch Adam on the logistic loss, L2-penalised weights, Glorot-uniform
//! initial weights; every random draw (initial weights, each epoch's order) comes from a
//! SplitMix64 stream with a fixed seed, and every sum runs in a fixed order, so the same rows
//! give the same bytes on every machine.

use crate::rng::SplitMix64;

/// How a perceptron is trained.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct MlpOptions {
    /// Rectified units in the hidden layer.
    pub hidden: usize,
    /// Passes over the rows.
    pub epochs: usize,
    /// Rows per Adam step.
    pub batch: usize,
    /// Adam's step size.
    pub learning_rate: f32,
    /// L2 penalty on the weights (not the biases), per row of a batch as scikit-learn's `alpha`.
    pub l2: f32,
    /// Seed of the initial weights and the epochs' row order.
    pub seed: u64,
}

impl Default for MlpOptions {
    fn default() -> Self {
        // 64 units and 30 epochs: with 32 units or 15 epochs the head caught 0.03-0.06 fewer
        // jailbreaks in the session-42 measurement outside the pipeline.
        Self { hidden: 64, epochs: 30, batch: 64, learning_rate: 1e-3, l2: 1e-3, seed: 42 }
    }
}

/// A trained perceptron: `logit(x) = w2 . relu(w1 x + b1) + b2`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Mlp {
    /// Inputs per row.
    pub dim: usize,
    /// `hidden x dim`, row-major: unit `j`'s weights are `w1[j * dim..(j + 1) * dim]`.
    pub w1: Vec<f32>,
    /// One bias per unit.
    pub b1: Vec<f32>,
    /// One output weight per unit.
    pub w2: Vec<f32>,
    /// The output's bias.
    pub b2: f32,
}

impl Mlp {
    /// Units in the hidden layer.
    pub fn hidden(&self) -> usize {
        self.b1.len()
    }

    /// The logit of one row of `dim` inputs.
    pub fn logit(&self, x: &[f32]) -> f32 {
        let mut z = self.b2;
        for j in 0..self.hidden() {
            let a = dot(&self.w1[j * self.dim..(j + 1) * self.dim], x) + self.b1[j];
            if a > 0.0 {
                z += self.w2[j] * a;
            }
        }
        z
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Adam's moments of one parameter vector.
struct Adam {
    m: Vec<f32>,
    v: Vec<f32>,
}

impl Adam {
    fn new(n: usize) -> Self {
        Self { m: vec![0.0; n], v: vec![0.0; n] }
    }

    /// One step of `params` against `grad`, the `t`-th step (from 1).
    fn step(&mut self, params: &mut [f32], grad: &[f32], lr: f32, t: i32) {
        const B1: f32 = 0.9;
        const B2: f32 = 0.999;
        const EPS: f32 = 1e-8;
        let c1 = 1.0 - B1.powi(t);
        let c2 = 1.0 - B2.powi(t);
        for ((p, g), (m, v)) in
            params.iter_mut().zip(grad).zip(self.m.iter_mut().zip(self.v.iter_mut()))
        {
            *m = B1 * *m + (1.0 - B1) * g;
            *v = B2 * *v + (1.0 - B2) * g * g;
            *p -= lr * (*m / c1) / ((*v / c2).sqrt() + EPS);
        }
    }
}

/// Fits a perceptron on the rows `use_row` selects: `x[i]` holds a row's inputs (only the
/// first `dim` are read), `y[i]` whether it is an attack.
pub(crate) fn fit(
    x: &[Vec<f64>],
    y: &[bool],
    use_row: &[bool],
    dim: usize,
    options: &MlpOptions,
) -> Mlp {
    let rows: Vec<usize> = (0..x.len()).filter(|&i| use_row[i]).collect();
    let inputs: Vec<Vec<f32>> =
        x.iter().map(|r| r[..dim].iter().map(|&v| v as f32).collect()).collect();
    let h = options.hidden.max(1);
    let mut rng = SplitMix64(options.seed);
    // Glorot-uniform, as scikit-learn's perceptron draws them (biases too).
    let b_in = (6.0 / (dim + h) as f32).sqrt();
    let b_out = (6.0 / (h + 1) as f32).sqrt();
    let mut net = Mlp {
        dim,
        w1: (0..h * dim).map(|_| rng.symmetric(b_in)).collect(),
        b1: (0..h).map(|_| rng.symmetric(b_in)).collect(),
        w2: (0..h).map(|_| rng.symmetric(b_out)).collect(),
        b2: rng.symmetric(b_out),
    };
    if rows.is_empty() {
        return net;
    }
    let (mut a_w1, mut a_b1, mut a_w2, mut a_b2) =
        (Adam::new(h * dim), Adam::new(h), Adam::new(h), Adam::new(1));
    let (mut g_w1, mut g_b1, mut g_w2) = (vec![0.0f32; h * dim], vec![0.0f32; h], vec![0.0f32; h]);
    let mut act = vec![0.0f32; h];
    let mut order = rows.clone();
    let mut t = 0;
    for _ in 0..options.epochs {
        // Fisher-Yates from the fixed stream.
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        for batch in order.chunks(options.batch.max(1)) {
            g_w1.iter_mut().for_each(|g| *g = 0.0);
            g_b1.iter_mut().for_each(|g| *g = 0.0);
            g_w2.iter_mut().for_each(|g| *g = 0.0);
            let mut g_b2 = 0.0f32;
            let n = batch.len() as f32;
            for &i in batch {
                let xi = &inputs[i];
                let mut z = net.b2;
                for (j, (a, (&b, &out))) in
                    act.iter_mut().zip(net.b1.iter().zip(&net.w2)).enumerate()
                {
                    *a = (dot(&net.w1[j * dim..(j + 1) * dim], xi) + b).max(0.0);
                    z += out * *a;
                }
                let p = 1.0 / (1.0 + (-z).exp());
                let dz = (p - if y[i] { 1.0 } else { 0.0 }) / n;
                g_b2 += dz;
                for (j, &a) in act.iter().enumerate() {
                    g_w2[j] += dz * a;
                    if a > 0.0 {
                        let dh = dz * net.w2[j];
                        g_b1[j] += dh;
                        for (g, &xv) in g_w1[j * dim..(j + 1) * dim].iter_mut().zip(xi) {
                            *g += dh * xv;
                        }
                    }
                }
            }
            // The penalty, per row of the batch, on the weights only.
            let l2 = options.l2 / n;
            g_w1.iter_mut().zip(&net.w1).for_each(|(g, w)| *g += l2 * w);
            g_w2.iter_mut().zip(&net.w2).for_each(|(g, w)| *g += l2 * w);
            t += 1;
            a_w1.step(&mut net.w1, &g_w1, options.learning_rate, t);
            a_b1.step(&mut net.b1, &g_b1, options.learning_rate, t);
            a_w2.step(&mut net.w2, &g_w2, options.learning_rate, t);
            a_b2.step(std::slice::from_mut(&mut net.b2), &[g_b2], options.learning_rate, t);
        }
    }
    net
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Points labelled by `x0 * x1 > 0` (an XOR of signs): no single direction separates them.
    fn xor_rows(n: usize) -> (Vec<Vec<f64>>, Vec<bool>) {
        let mut rng = SplitMix64(7);
        let x: Vec<Vec<f64>> = (0..n)
            .map(|_| vec![f64::from(rng.symmetric(1.0)), f64::from(rng.symmetric(1.0)), 1.0])
            .collect();
        let y = x.iter().map(|r| r[0] * r[1] > 0.0).collect();
        (x, y)
    }

    #[test]
    fn it_learns_what_no_single_direction_separates() {
        let (x, y) = xor_rows(800);
        let options = MlpOptions {
            hidden: 16,
            epochs: 200,
            batch: 32,
            learning_rate: 1e-2,
            ..MlpOptions::default()
        };
        let net = fit(&x, &y, &vec![true; x.len()], 2, &options);
        let right = x
            .iter()
            .zip(&y)
            .filter(|(r, a)| (net.logit(&[r[0] as f32, r[1] as f32]) > 0.0) == **a)
            .count();
        assert!(right as f64 / x.len() as f64 > 0.9, "{right} of {} right", x.len());
    }

    #[test]
    fn the_same_rows_and_seed_give_the_same_weights_and_rows_left_out_are_not_read() {
        let (x, y) = xor_rows(200);
        let options = MlpOptions { hidden: 8, epochs: 3, ..MlpOptions::default() };
        let half: Vec<bool> = (0..x.len()).map(|i| i % 2 == 0).collect();
        let a = fit(&x, &y, &half, 2, &options);
        let b = fit(&x, &y, &half, 2, &options);
        assert_eq!(a, b);
        // Rows the fit must not read may hold anything.
        let mut x2 = x.clone();
        for (i, r) in x2.iter_mut().enumerate() {
            if i % 2 == 1 {
                r[0] = 1e9;
            }
        }
        assert_eq!(fit(&x2, &y, &half, 2, &options), a);
        assert_ne!(fit(&x, &y, &half, 2, &MlpOptions { seed: 1, ..options }), a);
    }
}
