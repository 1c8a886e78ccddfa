//! The tensors a transient (or a run of saves) is made of, for the allocator replay.

/// The tensors a transient (or a run of saves) is made of, for the allocator replay: up to two
/// sizes with how many of each, made in that order; what they leave of the bytes is one tensor
/// made before them. The default is no breakdown (one tensor).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pieces(pub [(u64, u64); 2]);

impl Pieces {
    /// `n` tensors of `bytes`.
    pub const fn of(bytes: u64, n: u64) -> Self {
        Self([(bytes, n), (0, 0)])
    }

    /// `n` tensors of `bytes`, then `m` of `then`.
    pub const fn two(bytes: u64, n: u64, then: u64, m: u64) -> Self {
        Self([(bytes, n), (then, m)])
    }

    /// The sizes of the tensors that make up `total` bytes, in the order they are made: the
    /// remainder first (when the listed tensors do not fill it), then the listed ones that fit.
    pub fn sizes(self, total: u64) -> Vec<u64> {
        let mut listed = Vec::new();
        let mut left = total;
        for (b, n) in self.0 {
            if b == 0 {
                continue;
            }
            let fit = n.min(left / b).min(1 << 12);
            listed.extend(std::iter::repeat_n(b, fit as usize));
            left -= fit * b;
        }
        let mut out = Vec::with_capacity(listed.len() + 1);
        if left > 0 {
            out.push(left);
        }
        out.extend(listed);
        out
    }
}

/// The head's and the loss's tensors (pieces of logits, their fp32 copies and log-softmax, the
/// head weight's gradients), as [`Pieces`] of the transients and saves of the step's head events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeadPieces {
    /// The head forward's transient: the logits (a piece a chunk) and one piece's fp32 copy.
    pub forward: Pieces,
    /// What the loss keeps, a tensor a piece (its fp32 log-softmax); 0: no breakdown.
    pub saved: u64,
    /// The loss backward's transient: one piece's nll and log-softmax gradients (fp32), the cast
    /// back.
    pub loss_backward: Pieces,
    /// A chunked head's weight-gradient sum: three weight-sized tensors, then the unrun chunks'
    /// logits gradients.
    pub chunk_sum: Pieces,
}

#[cfg(test)]
mod tests {
    use super::Pieces;

    #[test]
    fn pieces_list_the_named_tensors_after_what_they_leave() {
        // torchtune's chunked loss in bf16: eight chunks of logits, then one chunk's fp32 copy
        let p = Pieces::two(2, 8, 4, 1);
        assert_eq!(p.sizes(20), vec![2, 2, 2, 2, 2, 2, 2, 2, 4]);
        // more bytes than the tensors named: the rest is one tensor, made first
        assert_eq!(Pieces::of(4, 2).sizes(11), vec![3, 4, 4]);
        // fewer: as many whole tensors as fit, in order
        assert_eq!(Pieces::two(4, 3, 1, 2).sizes(9), vec![4, 4, 1]);
        assert_eq!(Pieces::default().sizes(7), vec![7]);
        assert!(Pieces::of(0, 1).sizes(0).is_empty());
    }
}
