"""A small pre-norm transformer encoder (SDPA attention, GELU MLP, dropout) with a token
classifier, for the traced-model tests: dims batch and seq."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(d)
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)
        self.o_proj = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d)
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        b, s, d = x.shape
        h = self.norm1(x)
        q, k, v = (p(h).view(b, s, self.heads, d // self.heads).transpose(1, 2)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.drop(self.o_proj(a.transpose(1, 2).reshape(b, s, d)))
        return x + self.drop(self.down(F.gelu(self.up(self.norm2(x)))))


class Net(nn.Module):
    def __init__(self, vocab=500, d=64, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(layers))
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        x = self.embed(ids)
        for blk in self.blocks:
            x = blk(x)
        return F.cross_entropy(self.head(x).float().flatten(0, 1), ids.flatten())


def model():
    return Net()


def inputs(batch, seq):
    return torch.randint(0, 500, (batch, seq))


def loss(output, inputs):
    return output
