"""The character LSTM of the Shakespeare next-character task (LEAF; FedEM; PDBO Sec. 6):
an embedding of the V-symbol alphabet into ``embed`` dimensions, a 2-layer LSTM of width
``hidden`` and a linear layer from the last time step's hidden state to the V next-character
logits. Inputs are token ids ``[T]`` stored as floats; V = the dataset's number of classes
(inputs and targets share the alphabet).

All M clients run at once: per layer, the input part of the gate pre-activations
``W_ih x_t + b_ih + b_hh`` for all T steps is one ``baddbmm``, then one ``baddbmm`` per time step
adds ``W_hh h_{t-1}`` (PyTorch's gate order i, f, g, o). Parameter names are those of the
``nn.Embedding`` / ``nn.LSTM`` / ``nn.Linear`` twin, so ``reference`` loads them as they are.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from netsim.models.base import BatchedModel, Params
from netsim.models.zoo import MODELS
from netsim.schema import Field

EMBED = "embed.weight"
LAYERS = 2


class CharLSTM(BatchedModel):
    """Embedding (V x E) -> LSTM (``LAYERS`` layers, width H) -> linear (H -> V) on the last step.

    Init as PyTorch's defaults: the embedding ~ N(0, 1), every other parameter ~
    U(-1/sqrt(H), 1/sqrt(H)) (nn.LSTM's rule; nn.Linear's with fan-in H gives the same bound).
    """

    backend = "bmm"

    def __init__(self, vocab: int, embed: int, hidden: int, seq_len: int):
        self.hidden, self.out_dim = hidden, vocab
        self.shapes = {EMBED: (vocab, embed)}
        for layer in range(LAYERS):
            fan_in = embed if layer == 0 else hidden
            self.shapes |= {f"lstm.weight_ih_l{layer}": (4 * hidden, fan_in),
                            f"lstm.weight_hh_l{layer}": (4 * hidden, hidden),
                            f"lstm.bias_ih_l{layer}": (4 * hidden,),
                            f"lstm.bias_hh_l{layer}": (4 * hidden,)}
        self.shapes |= {"fc.weight": (vocab, hidden), "fc.bias": (vocab,)}
        # U(-sqrt 3, sqrt 3) has the unit variance of N(0, 1): what a wrapper drawing through
        # BatchedModel.init (the PDBO ensemble) gets for the embedding; ``init`` draws N(0, 1).
        self.init_bound = {k: 1.0 / math.sqrt(hidden) for k in self.shapes}
        self.init_bound[EMBED] = math.sqrt(3.0)
        fans = [embed] + [hidden] * (LAYERS - 1)
        recurrent = sum(2 * 4 * hidden * (fan + hidden) for fan in fans)  # gate matmuls per step
        self.flops_per_sample = float(seq_len * recurrent + 2 * hidden * vocab)

    def init(self, n: int, gen: torch.Generator, device: str | torch.device) -> Params:
        """BatchedModel's uniform draws, then the embedding redrawn ~ N(0, 1) (nn.Embedding)."""
        out = super().init(n, gen, device)
        shape = (n, *self.shapes[EMBED])
        out[EMBED] = torch.randn(shape, generator=gen, device=gen.device).to(device)
        return out

    def _layer(self, params: Params, layer: int, seq: Tensor) -> Tensor:
        """One LSTM layer: ``[M, B, T, in]`` -> hidden states ``[M, B, T, H]`` (h_0 = c_0 = 0)."""
        def p(name: str) -> Tensor:
            return params[f"lstm.{name}_l{layer}"]

        m, b, t, _ = seq.shape
        bias = (p("bias_ih") + p("bias_hh")).unsqueeze(1)
        pre = torch.baddbmm(bias, seq.reshape(m, b * t, -1), p("weight_ih").transpose(1, 2))
        pre = pre.view(m, b, t, -1)
        w_hh = p("weight_hh").transpose(1, 2)
        h = c = seq.new_zeros(m, b, self.hidden)
        states = []
        for step in range(t):
            i, f, g, o = torch.baddbmm(pre[:, :, step], h, w_hh).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            states.append(h)
        return torch.stack(states, 2)

    def forward(self, params: Params, x: Tensor) -> Tensor:
        """``x: [M, B, T]`` token ids (floats) -> next-character logits ``[M, B, V]``."""
        emb = params[EMBED]
        seq = emb[torch.arange(emb.shape[0], device=x.device)[:, None, None], x.long()]
        for layer in range(LAYERS):
            seq = self._layer(params, layer, seq)
        return torch.baddbmm(params["fc.bias"].unsqueeze(1), seq[:, :, -1],
                             params["fc.weight"].transpose(1, 2))

    def reference(self, params: Params) -> nn.Module:
        vocab, embed = self.shapes[EMBED]
        net = _CharLSTMModule(vocab, embed, self.hidden)
        net.load_state_dict({k: v.detach().clone() for k, v in params.items()})
        return net


class _CharLSTMModule(nn.Module):
    """Single-client twin (tests): nn.Embedding + nn.LSTM(batch_first) + nn.Linear."""

    def __init__(self, vocab: int, embed: int, hidden: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=LAYERS, batch_first=True)
        self.fc = nn.Linear(hidden, vocab)

    def forward(self, x: Tensor) -> Tensor:
        out, _ = self.lstm(self.embed(x.long()))
        return self.fc(out[:, -1])


@MODELS.register("char_lstm", {
    "embed": Field("int", 8, "embedding dimension of the input characters", lo=1),
    "hidden": Field("int", 256, "LSTM width (both layers)", lo=1),
})
def char_lstm(input_shape: tuple, out_dim: int, backend: str, embed: int,
              hidden: int) -> BatchedModel:
    """Character LSTM (LEAF / FedEM / PDBO Shakespeare): embedding-LSTM x2-linear, last step."""
    if len(input_shape) != 1:
        raise ValueError(f"char_lstm needs token-id sequences (input shape [T], e.g. a "
                         f"character dataset such as shakespeare), got input shape {input_shape}")
    return CharLSTM(out_dim, embed, hidden, input_shape[0])
