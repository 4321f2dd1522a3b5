//! A circular window of (x, y) observations with running sums, giving Pearson's R and
//! the least-squares line y = m·x + b without a pass over the window.

/// Running sums Σx, Σy, Σx², Σy², Σxy.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    x: f64,
    y: f64,
    xx: f64,
    yy: f64,
    xy: f64,
}

impl Sums {
    fn add(&mut self, (x, y): (f64, f64), sign: f64) {
        self.x += sign * x;
        self.y += sign * y;
        self.xx += sign * x * x;
        self.yy += sign * y * y;
        self.xy += sign * x * y;
    }
}

/// Below this fraction of nΣx² (resp. nΣy²), nΣx² − (Σx)² is rounding noise, not
/// variance: a constant series must give R = 0, not 0/0 or a random ±1.
const VARIANCE_EPSILON: f64 = 1e-12;

#[derive(Debug, Clone)]
pub(crate) struct CorrelationWindow {
    points: Vec<(f64, f64)>,
    capacity: usize,
    /// The write index: the slot the next observation replaces.
    next: usize,
    sums: Sums,
}

impl CorrelationWindow {
    pub fn new(capacity: usize) -> Self {
        CorrelationWindow {
            points: Vec::with_capacity(capacity),
            capacity,
            next: 0,
            sums: Sums::default(),
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn is_full(&self) -> bool {
        self.points.len() == self.capacity
    }

    /// Inserts an observation over the oldest one; returns the slot it went to.
    pub fn push(&mut self, x: f64, y: f64) -> usize {
        let slot = self.next;
        if self.is_full() {
            let old = self.points[slot];
            self.sums.add(old, -1.0);
            self.points[slot] = (x, y);
        } else {
            self.points.push((x, y));
        }
        self.sums.add((x, y), 1.0);
        self.next = (slot + 1) % self.capacity;
        if self.next == 0 {
            // Adding and subtracting forever lets rounding error build up in the sums;
            // once per lap, recompute them from the window itself.
            self.sums = Sums::default();
            for &point in &self.points {
                self.sums.add(point, 1.0);
            }
        }
        slot
    }

    /// (nΣx² − (Σx)², nΣy² − (Σy)², nΣxy − ΣxΣy), with variances under rounding noise
    /// reported as 0.
    fn moments(&self) -> (f64, f64, f64) {
        let n = self.points.len() as f64;
        let s = &self.sums;
        let noise_free = |spread: f64, scale: f64| {
            if spread <= VARIANCE_EPSILON * scale {
                0.0
            } else {
                spread
            }
        };
        let sxx = noise_free(n * s.xx - s.x * s.x, n * s.xx);
        let syy = noise_free(n * s.yy - s.y * s.y, n * s.yy);
        (sxx, syy, n * s.xy - s.x * s.y)
    }

    /// Pearson's R = (nΣxy − ΣxΣy)/√((nΣx² − (Σx)²)(nΣy² − (Σy)²)); 0 when either
    /// series has no variance (or fewer than two points).
    pub fn correlation(&self) -> f64 {
        let (sxx, syy, sxy) = self.moments();
        if self.points.len() < 2 || sxx == 0.0 || syy == 0.0 {
            return 0.0;
        }
        (sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0)
    }

    /// Least-squares slope m and intercept b of y = m·x + b; `None` when x has no variance.
    pub fn line(&self) -> Option<(f64, f64)> {
        let (sxx, _, sxy) = self.moments();
        if self.points.len() < 2 || sxx == 0.0 {
            return None;
        }
        let n = self.points.len() as f64;
        let m = sxy / sxx;
        Some((m, (self.sums.y - m * self.sums.x) / n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfect_line_gives_r_one_and_the_line() {
        // y = 0.5x + 3 over x = 0..10, then 10 more points replacing them: still exact.
        let mut window = CorrelationWindow::new(10);
        for i in 0..20 {
            let x = (i * 7 % 13) as f64;
            window.push(x, 0.5 * x + 3.0);
        }
        assert!((window.correlation() - 1.0).abs() < 1e-12);
        let (m, b) = window.line().unwrap();
        assert!((m - 0.5).abs() < 1e-12 && (b - 3.0).abs() < 1e-12);
    }

    #[test]
    fn constant_series_gives_zero() {
        let mut window = CorrelationWindow::new(4);
        for x in [1.0, 2.0, 3.0, 4.0] {
            window.push(x, 7.0);
        }
        assert_eq!(window.correlation(), 0.0);
        let mut window = CorrelationWindow::new(4);
        for y in [1.0, 2.0, 3.0, 4.0] {
            window.push(0.1, y);
        }
        assert_eq!(window.correlation(), 0.0);
        assert_eq!(window.line(), None);
    }

    #[test]
    fn anticorrelation_is_negative() {
        let mut window = CorrelationWindow::new(3);
        for x in [1.0, 2.0, 3.0] {
            window.push(x, -x);
        }
        assert!((window.correlation() + 1.0).abs() < 1e-12);
    }

    #[test]
    fn push_reports_the_slot_and_wraps() {
        let mut window = CorrelationWindow::new(3);
        let slots: Vec<usize> = (0..7).map(|i| window.push(i as f64, 0.0)).collect();
        assert_eq!(slots, [0, 1, 2, 0, 1, 2, 0]);
        assert!(window.is_full());
    }
}
