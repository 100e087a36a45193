"""MobileNetV2 (the published 1.0 / 224 configuration) written out here, with
random weights: a MobileNet-sized program for load-time and verification
benchmarks without downloading anything.

    .venv/bin/python bench/models/mobilenet_v2.py --out build/bench/mobilenet_v2.pte
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn
from torch.export import export

from ember import exir

# (expansion t, output channels c, repeats n, first stride s), as published.
SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
            (6, 160, 3, 2), (6, 320, 1, 1)]


def conv_bn(cin: int, cout: int, k: int, stride: int, groups: int = 1, act: bool = True):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    if act:
        layers.append(nn.ReLU6())
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, t: int) -> None:
        super().__init__()
        hidden = cin * t
        layers = [] if t == 1 else [conv_bn(cin, hidden, 1, 1)]
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden),
                   conv_bn(hidden, cout, 1, 1, act=False)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x) if self.residual else self.block(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        layers = [conv_bn(3, 32, 3, 2)]
        cin = 32
        for t, c, n, s in SETTINGS:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(conv_bn(cin, 1280, 1, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(1280, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x).mean((2, 3))
        return self.classifier(x)


def randomize_batch_norms(model: nn.Module) -> None:
    """Trained-looking BN statistics, so activations neither vanish nor explode."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.normal_(0.0, 0.1)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.normal_(0.0, 0.1)
        elif isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/bench/mobilenet_v2.pte")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = MobileNetV2().eval()
    randomize_batch_norms(model)
    x = torch.randn(1, 3, 224, 224)
    t0 = time.perf_counter()
    program = exir.to_edge(export(model, (x,))).to_executorch()
    program.save(args.out)
    params = sum(p.numel() for p in model.parameters())
    print(f"MobileNetV2: {params / 1e6:.2f} M parameters, {len(program.buffer) / 1e6:.1f} MB "
          f".pte, exported in {time.perf_counter() - t0:.1f} s -> {args.out}")
    from ember.runtime import Runtime

    (out,) = Runtime.get().load_program(args.out).load_method().execute([x])
    with torch.no_grad():
        err = (out - model(x)).abs().max().item()
    print(f"max |ember - eager| = {err:.2e} (outputs up to {out.abs().max().item():.2f})")


if __name__ == "__main__":
    main()
