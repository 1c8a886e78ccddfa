"""Allocation trace of an HF Trainer step of BERT-large (sequence classification) as the
transformers docs' memory anatomy page ran it (PyTorch 1.x era Trainer, transformers 4.2x BERT
code): every storage the step allocates and frees, in order, on fake tensors.

Usage: python trace_bert.py CONFIG.json BATCH fp32|fp16 adamw|adafactor STEPS OUT.txt [torch1.10]
`torch1.10`: softmax's backward keeps its input as well as its output, as PyTorch's autograd did
before 1.11 (derivatives.yaml's `_softmax_backward_data(grad, result, dim, self)`; pytorch#65242
passes the input's dtype instead). Writes lines 'a ID BYTES' and 'f ID' (and '# phase' marks)."""
import math
import sys

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode
import transformers
from transformers import BertConfig, BertForSequenceClassification
from transformers.models.bert import modeling_bert

from trace_common import Autocast, Trace

cfg_path, batch, prec, optname, steps, out = sys.argv[1:7]
old_softmax = sys.argv[7:8] == ["torch1.10"]
batch, steps = int(batch), int(steps)
amp = prec == "fp16"
SEQ = 512


HALF = {F.linear, torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.bmm, torch.mm,
        torch.addmm, torch.baddbmm}
FP32 = {F.softmax, torch.softmax, torch.Tensor.softmax, F.layer_norm, F.cross_entropy,
        F.log_softmax, F.nll_loss}


EXT_MASK = [None]


class SoftmaxKeepingInput(torch.autograd.Function):
    """softmax whose backward node holds its input too (PyTorch <= 1.10)."""

    @staticmethod
    def forward(ctx, x, dim):
        y = torch.softmax(x, dim)
        ctx.save_for_backward(x, y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return torch._softmax_backward_data(g, y, ctx.dim, x.dtype), None


def softmax(scores, dim):
    if old_softmax:
        # fp32 under autocast either way: the scores are fp32 after the fp32 mask is added
        return SoftmaxKeepingInput.apply(scores.float(), dim)
    return F.softmax(scores, dim=dim)


def old_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kw):
    # transformers 4.2x BertSelfAttention: matmul, / sqrt(d), + extended mask, softmax, dropout
    scores = torch.matmul(query, key.transpose(-1, -2))
    scores = scores / math.sqrt(query.size(-1))
    scores = scores + EXT_MASK[0]
    probs = softmax(scores, -1)
    probs = F.dropout(probs, p=dropout, training=module.training)
    ctx = torch.matmul(probs, value)
    ctx = ctx.permute(0, 2, 1, 3).contiguous()
    return ctx, None


modeling_bert.eager_attention_forward = old_attention
transformers.modeling_utils.ALL_ATTENTION_FUNCTIONS  # noqa


def cuda_dropout(input, p=0.5, training=True, inplace=False):
    if training and 0.0 < p < 1.0:
        out, _ = torch.native_dropout(input, p, True)
        return out
    return input


F.dropout = cuda_dropout
modeling_bert.nn.functional.dropout = cuda_dropout

cfg = BertConfig.from_json_file(cfg_path)
tr = Trace()
with FakeTensorMode():
    model = BertForSequenceClassification._from_config(cfg, attn_implementation="eager")
    model.train()
    params = list(model.parameters())
    with tr:
        tr.mark("load")
        for p in params:
            tr.track(p)
        for b in model.buffers():
            tr.track(b)
        state = {}
        ac = Autocast(torch.float16, HALF, FP32)
        for step in range(steps):
            tr.mark(f"step {step} forward")
            ids = torch.randint(100, 30000, (batch, SEQ))
            labels = torch.randint(0, 1, (batch,))
            # BertModel of 4.2x: attention_mask = ones, extended (1 - m) * -10000 in fp32
            m = torch.ones((batch, SEQ))
            EXT_MASK[0] = (1.0 - m[:, None, None, :]) * -10000.0
            del m
            if amp:
                with ac:
                    out_ = model(input_ids=ids, labels=labels)
                    loss = out_.loss
                    del out_
                ac.cache.clear()
                loss = loss * 65536.0
            else:
                out_ = model(input_ids=ids, labels=labels)
                loss = out_.loss
                del out_
            EXT_MASK[0] = None
            tr.mark(f"step {step} backward")
            loss.backward()
            del loss, ids, labels
            tr.mark(f"step {step} optimizer")
            grads = [p.grad for p in params]
            if amp:
                inv = torch.full((), 1 / 65536.0)
                found = torch.zeros(())
                for g in grads:
                    g.mul_(inv)
                del inv, found
            norms = [torch.linalg.vector_norm(g, 2.0) for g in grads]
            total = torch.linalg.vector_norm(torch.stack(norms), 2.0)
            del norms
            coef = torch.clamp(1.0 / (total + 1e-6), max=1.0)
            for g in grads:
                g.mul_(coef)
            del coef, total, grads
            for p in params:
                g = p.grad
                s = state.get(p)
                if optname == "adamw":
                    if s is None:
                        s = state[p] = dict(m=torch.zeros_like(p), v=torch.zeros_like(p))
                    s["m"].mul_(0.9).add_(g, alpha=0.1)
                    s["v"].mul_(0.999).addcmul_(g, g, value=0.001)
                    denom = s["v"].sqrt().add_(1e-8)
                    p.data.addcdiv_(s["m"], denom, value=-1e-5)
                    del denom
                    p.data.add_(p.data, alpha=-1e-7)
                del g
            # Module.zero_grad() before PyTorch 2.0: in place
            for p in params:
                p.grad.detach_()
                p.grad.zero_()
        tr.mark("end")
with open(out, "w") as f:
    f.write("\n".join(tr.ev) + "\n")
print(out, len(tr.ev), "events")
