//! The pace error of a replay: how far each message's publish was from its
//! due time (its recorded offset divided by the speed), kept in a
//! log-bucketed histogram (fixed memory, about 1.6% resolution) so a replay
//! of any length reports p50/p99/max.

/// Sub-buckets per power of two: a bucket spans 1/64 of its octave.
const SUB: usize = 64;
/// Octaves above the first `SUB` exact values, up to 2^64 ns.
const OCTAVES: usize = 64 - 6;

/// |actual - due| of each paced message, in nanoseconds.
///
/// # Examples
/// ```
/// let mut pace = shmbus::record::PaceError::default();
/// pace.add(1_000);
/// pace.add(3_000);
/// assert_eq!((pace.count(), pace.max_ns()), (2, 3_000));
/// assert_eq!(pace.quantile_ns(0.5), 1_000);
/// ```
#[derive(Debug, Clone)]
pub struct PaceError {
    buckets: Vec<u64>,
    count: u64,
    max_ns: u64,
}

impl Default for PaceError {
    fn default() -> Self {
        PaceError {
            buckets: vec![0; SUB * (OCTAVES + 1)],
            count: 0,
            max_ns: 0,
        }
    }
}

fn bucket(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let top = 63 - v.leading_zeros() as usize; // >= 6
    let mantissa = ((v >> (top - 6)) as usize) & (SUB - 1);
    (top - 5) * SUB + mantissa
}

/// The smallest value of bucket `i`.
fn low(i: usize) -> u64 {
    if i < SUB {
        return i as u64;
    }
    let top = i / SUB + 5;
    let mantissa = (i % SUB) as u64;
    (1u64 << top) | (mantissa << (top - 6))
}

impl PaceError {
    /// Counts one message published `ns` away from its due time.
    ///
    /// # Examples
    /// ```
    /// let mut pace = shmbus::record::PaceError::default();
    /// pace.add(5);
    /// assert_eq!(pace.count(), 1);
    /// ```
    pub fn add(&mut self, ns: u64) {
        self.buckets[bucket(ns)] += 1;
        self.count += 1;
        self.max_ns = self.max_ns.max(ns);
    }

    /// How many messages were paced.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(shmbus::record::PaceError::default().count(), 0);
    /// ```
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The largest error.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(shmbus::record::PaceError::default().max_ns(), 0);
    /// ```
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// The `q` quantile (0..=1), as its bucket's lowest value, or 0 when
    /// nothing was paced.
    ///
    /// # Examples
    /// ```
    /// let mut pace = shmbus::record::PaceError::default();
    /// (1..=100).for_each(|us| pace.add(us * 1_000));
    /// assert!(pace.quantile_ns(0.99) <= 99_000 && pace.quantile_ns(0.99) > 97_000);
    /// ```
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return low(i).min(self.max_ns);
            }
        }
        self.max_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ordered_and_within_a_sixty_fourth_of_their_values() {
        let mut values: Vec<u64> = (0..40u32)
            .flat_map(|e| [1u64 << e, (1u64 << e) + 3, (3u64 << e) / 2, (1u64 << e) - 1])
            .collect();
        values.sort_unstable();
        let mut last = 0;
        for v in values {
            let i = bucket(v);
            assert!(
                low(i) <= v && v - low(i) <= v / 64,
                "{v}: bucket {i} from {}",
                low(i)
            );
            assert!(i >= last, "{v}: bucket {i} below {last}");
            last = i;
        }
        assert!(bucket(u64::MAX) < SUB * (OCTAVES + 1));
    }

    #[test]
    fn quantiles_of_a_known_spread_come_out_within_the_resolution() {
        let mut p = PaceError::default();
        for v in 1..=1000u64 {
            p.add(v * 1000);
        }
        let p50 = p.quantile_ns(0.5) as f64;
        let p99 = p.quantile_ns(0.99) as f64;
        assert!((p50 - 500_000.0).abs() <= 500_000.0 / 64.0, "{p50}");
        assert!((p99 - 990_000.0).abs() <= 990_000.0 / 64.0, "{p99}");
        assert_eq!(p.max_ns(), 1_000_000);
        assert_eq!(PaceError::default().quantile_ns(0.99), 0);
    }
}
