"""Models nobody here wrote: the ``transformers`` package's MobileNetV2,
ResNet-18, ResNet-50, ViT-base/16, BERT-base, GPT-2 and Whisper-base encoder
classes, built from configs of the published sizes with random weights
(nothing is downloaded).

``build(name, size)`` returns ``(module, example_inputs)``; ``size="full"``
is the published architecture at its usual input (224x224 images, BERT and
GPT-2 sequence 128, Whisper's 80 mel bins x 3000 frames, i.e. 30 s of
audio), ``size="small"`` a narrow, shallow variant of the same class for
tests. The module returns one tensor (logits or last hidden state): GPT-2 is
``GPT2Model`` without the LM head (its last hidden state, like BERT's), the
Whisper entry is the encoder alone (``WhisperEncoder``).

Outputs have ordinary magnitudes, as a trained model's do: with transformers'
random initialisation and batch norm's default running statistics (mean 0,
variance 1), MobileNetV2's activations shrink layer by layer to ~1e-21 at
the logits, and a comparison with an absolute tolerance would then check
nothing. So the batch-norm layers' running statistics are calibrated on a few
random batches of the example's shape (cumulative averages, as after
training), and ``check_output_scale`` asserts the result.
"""

from __future__ import annotations

import torch

MODELS = ("mobilenet_v2", "resnet18", "resnet50", "vit_base", "bert_base", "gpt2",
          "whisper_base")


class _FirstOutput(torch.nn.Module):
    """Unwraps a transformers ModelOutput to its main tensor."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        out = self.model(*args)
        return out.logits if hasattr(out, "logits") else out.last_hidden_state


def build(name: str, size: str = "full", seed: int = 0) -> tuple[torch.nn.Module, tuple]:
    import transformers as tf

    torch.manual_seed(seed)
    full = size == "full"
    image = 224 if full else 64
    labels = 1000 if full else 10  # ImageNet classes at the published size
    if name == "mobilenet_v2":
        cfg = tf.MobileNetV2Config(image_size=image, depth_multiplier=1.0 if full else 0.35,
                                   num_labels=labels)
        model = tf.MobileNetV2ForImageClassification(cfg)
        inputs = (torch.randn(1, 3, image, image),)
    elif name in ("resnet18", "resnet50"):
        if name == "resnet18":
            hidden = [64, 128, 256, 512] if full else [16, 32, 32, 64]
            cfg = tf.ResNetConfig(embedding_size=64 if full else 16, hidden_sizes=hidden,
                                  depths=[2, 2, 2, 2] if full else [1, 1, 1, 1], layer_type="basic",
                                  num_labels=labels)
        else:
            hidden = [256, 512, 1024, 2048] if full else [32, 64, 64, 128]
            cfg = tf.ResNetConfig(embedding_size=64 if full else 16, hidden_sizes=hidden,
                                  depths=[3, 4, 6, 3] if full else [1, 1, 1, 1],
                                  layer_type="bottleneck", num_labels=labels)
        model = tf.ResNetForImageClassification(cfg)
        inputs = (torch.randn(1, 3, image, image),)
    elif name == "vit_base":
        cfg = (tf.ViTConfig(num_labels=labels) if full else
               tf.ViTConfig(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2,
                            num_attention_heads=4, intermediate_size=128, num_labels=labels))
        model = tf.ViTForImageClassification(cfg)
        inputs = (torch.randn(1, 3, cfg.image_size, cfg.image_size),)
    elif name == "bert_base":
        cfg = (tf.BertConfig() if full else
               tf.BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2,
                             num_attention_heads=4, intermediate_size=128,
                             max_position_embeddings=64))
        model = tf.BertModel(cfg, add_pooling_layer=False)
        inputs = (torch.randint(0, cfg.vocab_size, (1, 128 if full else 16)),)
    elif name == "gpt2":
        # GPT2Config()'s defaults are the published 124M "gpt2": 12 layers, 768 wide.
        cfg = (tf.GPT2Config(use_cache=False) if full else
               tf.GPT2Config(vocab_size=1000, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                             bos_token_id=0, eos_token_id=0,
                             use_cache=False))
        model = tf.GPT2Model(cfg)
        inputs = (torch.randint(0, cfg.vocab_size, (1, 128 if full else 16)),)
    elif name == "whisper_base":
        from transformers.models.whisper.modeling_whisper import WhisperEncoder

        # whisper-base's encoder: 6 layers, 512 wide, 8 heads; the input is
        # 2 x max_source_positions frames of log-mel features.
        cfg = (tf.WhisperConfig(d_model=512, encoder_layers=6, encoder_attention_heads=8,
                                encoder_ffn_dim=2048, num_mel_bins=80, max_source_positions=1500)
               if full else
               tf.WhisperConfig(d_model=64, encoder_layers=2, encoder_attention_heads=4,
                                encoder_ffn_dim=128, num_mel_bins=16, max_source_positions=32))
        model = WhisperEncoder(cfg)
        inputs = (torch.randn(1, cfg.num_mel_bins, 2 * cfg.max_source_positions),)
    else:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    module = _FirstOutput(model).eval()
    _calibrate_batch_norm(module, inputs, seed)
    return module, inputs


# The range of output standard deviations a model of the zoo must have.
OUTPUT_STD_RANGE = (1e-2, 1e2)


def check_output_scale(name: str, output: torch.Tensor) -> None:
    """Raises when a model's output has collapsed (or exploded)."""
    std = output.double().std().item()
    lo, hi = OUTPUT_STD_RANGE
    if not lo <= std <= hi:
        raise AssertionError(f"{name}: output std {std:.3g} is outside [{lo}, {hi}]")


def _calibrate_batch_norm(module: torch.nn.Module, inputs: tuple, seed: int,
                          batches: int = 4) -> None:
    norms = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    gen = torch.Generator().manual_seed(seed + 1)
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # cumulative average over the calibration batches
        m.train()
    with torch.no_grad():
        for _ in range(batches):
            batch = tuple(torch.randn(x.shape, generator=gen).repeat(8, *[1] * (x.dim() - 1))
                          if x.is_floating_point() else x for x in inputs)
            module(*batch)
    for m in norms:
        m.eval()
