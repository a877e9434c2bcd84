//! L2-penalised logistic regression for the learned screen's heads: dense rows (the
//! embedding) or sparse ones (hashed n-grams), class-balanced row weights, fitted by L-BFGS in
//! f64 in a fixed order, so the same rows give the same bytes on any machine; plus the folds
//! and the ROC AUC the builder measures them with.

/// Folds of the out-of-fold scores.
pub(crate) const FOLDS: usize = 5;
/// L-BFGS iterations at most.
const MAX_ITERATIONS: usize = 500;

pub(crate) fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// Rows of features a logistic model is fitted on: dense (the embedding head) or sparse (the
/// lexical head's hashed n-grams). The last feature is the bias, always 1.
pub(crate) trait Design {
    /// Features per row, the bias included.
    fn width(&self) -> usize;
    /// `w . x_i`.
    fn dot(&self, i: usize, w: &[f64]) -> f64;
    /// `grad += r * x_i`.
    fn add_scaled(&self, i: usize, r: f64, grad: &mut [f64]);
}

impl Design for [Vec<f64>] {
    fn width(&self) -> usize {
        self[0].len()
    }
    fn dot(&self, i: usize, w: &[f64]) -> f64 {
        self[i].iter().zip(w).map(|(a, b)| a * b).sum()
    }
    fn add_scaled(&self, i: usize, r: f64, grad: &mut [f64]) {
        grad.iter_mut().zip(&self[i]).for_each(|(g, a)| *g += r * a);
    }
}

/// Hashed n-gram features of each row's text (`switchyard_lexical::hashed_features`).
pub(crate) struct Sparse {
    pub(crate) rows: Vec<Vec<(u32, f32)>>,
}

pub(crate) const LEXICAL_WIDTH: usize = 2 * switchyard_lexical::HASHED_BUCKETS + 1;

impl Design for Sparse {
    fn width(&self) -> usize {
        LEXICAL_WIDTH
    }
    fn dot(&self, i: usize, w: &[f64]) -> f64 {
        self.rows[i].iter().map(|&(k, v)| w[k as usize] * f64::from(v)).sum::<f64>()
            + w[LEXICAL_WIDTH - 1]
    }
    fn add_scaled(&self, i: usize, r: f64, grad: &mut [f64]) {
        for &(k, v) in &self.rows[i] {
            grad[k as usize] += r * f64::from(v);
        }
        grad[LEXICAL_WIDTH - 1] += r;
    }
}

/// The weighted (each row by `row_weight`), L2-penalised logistic loss and its gradient at `w` over the rows
/// `use_row` selects (the last weight is the bias and is not penalised).
pub(crate) fn loss_and_gradient<X: Design + ?Sized>(
    x: &X,
    y: &[bool],
    use_row: &[bool],
    row_weight: &[f64],
    lambda: f64,
    w: &[f64],
    grad: &mut [f64],
) -> f64 {
    let n = w.len();
    grad.iter_mut().for_each(|g| *g = 0.0);
    let mut loss = 0.0;
    for (i, (&yi, _)) in y.iter().zip(use_row).enumerate().filter(|(_, (_, u))| **u) {
        let z = x.dot(i, w);
        let c = row_weight[i];
        // log(1 + e^-z) for a positive, log(1 + e^z) for a negative, computed stably.
        let m = if yi { -z } else { z };
        loss += c * (m.max(0.0) + (-m.abs()).exp().ln_1p());
        let r = c * (sigmoid(z) - if yi { 1.0 } else { 0.0 });
        x.add_scaled(i, r, grad);
    }
    for k in 0..n - 1 {
        loss += 0.5 * lambda * w[k] * w[k];
        grad[k] += lambda * w[k];
    }
    loss
}

pub(crate) fn dot64(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Each used row's weight in the loss. Each class weighs 1 in total: every row the same, or
/// with `catalog_share` the catalog's rows (source 0) share that part and the other rows the
/// rest (a class with rows from only one side gives them all of it).
pub(crate) fn row_weights(
    y: &[bool],
    source: &[u32],
    use_row: &[bool],
    catalog_share: Option<f64>,
) -> Vec<f64> {
    // Used rows per (class, from the catalog).
    let mut count = [[0usize; 2]; 2];
    for ((&yi, &s), _) in y.iter().zip(source).zip(use_row).filter(|(_, u)| **u) {
        count[usize::from(yi)][usize::from(s == 0)] += 1;
    }
    y.iter()
        .zip(source)
        .map(|(&yi, &s)| {
            let [files, catalog] = count[usize::from(yi)];
            let (mine, others) = if s == 0 { (catalog, files) } else { (files, catalog) };
            let share = match catalog_share {
                Some(c) if others > 0 => {
                    if s == 0 {
                        c
                    } else {
                        1.0 - c
                    }
                }
                Some(_) => 1.0,
                None => mine as f64 / (catalog + files).max(1) as f64,
            };
            share / mine.max(1) as f64
        })
        .collect()
}

/// Fits weights (the last one the bias, unpenalised) on the rows `use_row` selects, by
/// L-BFGS (ten pairs, backtracking line search): a few hundred passes over the rows, in a
/// fixed order, so the result is the same on every machine.
pub(crate) fn fit<X: Design + ?Sized>(
    x: &X,
    y: &[bool],
    source: &[u32],
    use_row: &[bool],
    l2: f64,
    catalog_share: Option<f64>,
) -> Vec<f64> {
    let n = x.width();
    let cw = &row_weights(y, source, use_row, catalog_share)[..];
    let mut w = vec![0.0f64; n];
    let mut g = vec![0.0f64; n];
    let mut f = loss_and_gradient(x, y, use_row, cw, l2, &w, &mut g);
    let mut history: std::collections::VecDeque<(Vec<f64>, Vec<f64>, f64)> =
        std::collections::VecDeque::new();
    let mut g_new = vec![0.0f64; n];
    for _ in 0..MAX_ITERATIONS {
        // Two-loop recursion: d = -H g.
        let mut q = g.clone();
        let mut alphas = Vec::with_capacity(history.len());
        for (s, yv, rho) in history.iter().rev() {
            let a = rho * dot64(s, &q);
            q.iter_mut().zip(yv).for_each(|(qi, yi)| *qi -= a * yi);
            alphas.push(a);
        }
        if let Some((s, yv, _)) = history.back() {
            let gamma = dot64(s, yv) / dot64(yv, yv);
            q.iter_mut().for_each(|qi| *qi *= gamma);
        }
        for ((s, yv, rho), a) in history.iter().zip(alphas.iter().rev()) {
            let b = rho * dot64(yv, &q);
            q.iter_mut().zip(s).for_each(|(qi, si)| *qi += (a - b) * si);
        }
        let d: Vec<f64> = q.iter().map(|v| -v).collect();
        let slope = dot64(&g, &d);
        if slope >= 0.0 {
            history.clear();
            continue;
        }
        let mut step = 1.0;
        let mut w_new = vec![0.0f64; n];
        let mut f_new = f;
        for _ in 0..30 {
            w_new.iter_mut().zip(&w).zip(&d).for_each(|((wn, wi), di)| *wn = wi + step * di);
            f_new = loss_and_gradient(x, y, use_row, cw, l2, &w_new, &mut g_new);
            if f_new <= f + 1e-4 * step * slope {
                break;
            }
            step *= 0.5;
        }
        let s: Vec<f64> = w_new.iter().zip(&w).map(|(a, b)| a - b).collect();
        let yv: Vec<f64> = g_new.iter().zip(&g).map(|(a, b)| a - b).collect();
        let sy = dot64(&s, &yv);
        let improvement = f - f_new;
        w.copy_from_slice(&w_new);
        g.copy_from_slice(&g_new);
        f = f_new;
        if sy > 1e-12 {
            if history.len() == 10 {
                history.pop_front();
            }
            history.push_back((s, yv, 1.0 / sy));
        }
        if improvement.abs() < 1e-10 * f.abs().max(1.0) || dot64(&g, &g).sqrt() < 1e-7 {
            break;
        }
    }
    w
}

pub(crate) fn logit(w: &[f64], x: &[f64]) -> f64 {
    w.iter().zip(x).map(|(a, b)| a * b).sum()
}

/// ROC AUC of scores (ties count half).
pub(crate) fn auc(scores: &[f64], y: &[bool]) -> f64 {
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let (mut rank_sum, mut pos) = (0.0, 0usize);
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && scores[idx[j + 1]] == scores[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            if y[k] {
                rank_sum += avg;
                pos += 1;
            }
        }
        i = j + 1;
    }
    let neg = scores.len() - pos;
    if pos == 0 || neg == 0 {
        return 0.5;
    }
    (rank_sum - (pos * (pos + 1)) as f64 / 2.0) / (pos * neg) as f64
}

/// The fold of row `i`: a fixed pseudo-random permutation, so neighbouring rows (an attack and
/// its translations) spread over folds the same way on every build.
pub(crate) fn fold_of(i: usize) -> usize {
    ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize % FOLDS
}
