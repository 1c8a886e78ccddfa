#!/usr/bin/env python3
"""Ground-truth memory harness: measures, with real PyTorch and real HuggingFace
transformers model code, the memory components of one training step
(params, grads, AdamW states, tensors saved for backward, peak) and of the
inference KV cache.

Three ways of running a case ("backend"):
  cpu-real      real tensors on CPU; what PyTorch-on-CPU actually does.
  cpu-fake      FakeTensorMode, CPU device, no patches. Used only to validate that
                the fake measurement equals the real one (printed as a check).
  cuda-emu-fake FakeTensorMode (nothing allocated) on CPU-device fake tensors, plus
                two small dispatch patches that make PyTorch choose what it would
                choose on a CUDA GPU (see README): dropout -> aten.native_dropout
                (bool mask) and SDPA -> flash / mem-efficient aten kernels.
                MemTracker rounds storages to 512 B as the CUDA caching allocator.
Fake CUDA tensors themselves cannot be used without a GPU: the forward runs, but
autograd's backward raises "hasPrimaryContext expects a valid device index" and SDPA
backend selection on fake CUDA tensors falls back to the math kernel.

Usage:  python measure.py [--group A|B|F|G|H|P|Q|all] [--only SUBSTR] [--out reference.json]
"""
import argparse
import types
import weakref
import collections
import contextlib
import gc
import json
import math
import os
import platform
import re
import signal
import sys
import time
import traceback
import warnings

import torch
import torch.nn.functional as F
import transformers
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode
import torch.distributed._tools.mem_tracker as _mt_mod
from torch.distributed._tools.mem_tracker import MemTracker

from transformers import AutoConfig, CONFIG_MAPPING  # CONFIG_MAPPING["qwen3"] etc.: any family's config class
from transformers import (AutoModelForCausalLM, AutoModelForImageClassification, AutoModelForMaskedLM, AutoModelForSequenceClassification,
                          ViTForImageClassification, BertConfig, BertForMaskedLM,
                          GPT2Config, LlamaConfig, MistralConfig, MixtralConfig)

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG_DIR = os.path.join(HERE, "configs")
MiB = 2 ** 20

# --------------------------------------------------------------------------------------
# Configs. Real-size ones are written from the published architecture numbers.
# --------------------------------------------------------------------------------------
# Any family transformers knows can be added with its config class from CONFIG_MAPPING, e.g.
#   "qwen3_tiny": (CONFIG_MAPPING["qwen3"], dict(architectures=["Qwen3ForCausalLM"], vocab_size=1000,
#                  hidden_size=256, intermediate_size=688, num_hidden_layers=4, num_attention_heads=8,
#                  num_key_value_heads=2, head_dim=32)),
# then a case with C("qwen3_tiny-bf16-sdpa-b2s256", "qwen3_tiny", 2, 256, "bfloat16", "sdpa", backend="cuda-emu-fake").
# Real-size configs: write them from the published architecture numbers.
CONFIG_SPECS = {
    # ---- small, run for real on CPU ----
    "gpt2_tiny": (GPT2Config, dict(architectures=["GPT2LMHeadModel"], n_layer=4, n_embd=256, n_head=4, vocab_size=1000, n_positions=512)),
    "llama_tiny": (LlamaConfig, dict(architectures=["LlamaForCausalLM"], vocab_size=1000, hidden_size=256, intermediate_size=688,
                                     num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=8,
                                     max_position_embeddings=1024)),
    "llama_tiny_gqa": (LlamaConfig, dict(architectures=["LlamaForCausalLM"], vocab_size=1000, hidden_size=256, intermediate_size=688,
                                         num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                                         max_position_embeddings=1024)),
    "bert_tiny": (BertConfig, dict(architectures=["BertForMaskedLM"], vocab_size=1000, hidden_size=256, num_hidden_layers=4,
                                   num_attention_heads=4, intermediate_size=1024, max_position_embeddings=512)),
    "mistral_tiny": (MistralConfig, dict(architectures=["MistralForCausalLM"], vocab_size=1000, hidden_size=256, intermediate_size=688,
                                         num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                                         max_position_embeddings=2048, sliding_window=4096)),
    # ---- real-size architectures, fake tensors only ----
    "gpt2": (GPT2Config, dict(architectures=["GPT2LMHeadModel"], vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12)),
    "bert-large-uncased": (BertConfig, dict(architectures=["BertForMaskedLM"], vocab_size=30522, hidden_size=1024, num_hidden_layers=24,
                                            num_attention_heads=16, intermediate_size=4096,
                                            max_position_embeddings=512, type_vocab_size=2,
                                            pad_token_id=0)),
    "llama2-7b": (LlamaConfig, dict(architectures=["LlamaForCausalLM"], vocab_size=32000, hidden_size=4096, intermediate_size=11008,
                                    num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                                    max_position_embeddings=4096, rms_norm_eps=1e-5, rope_theta=10000.0,
                                    bos_token_id=1, eos_token_id=2)),
    "llama3-8b": (LlamaConfig, dict(architectures=["LlamaForCausalLM"], vocab_size=128256, hidden_size=4096, intermediate_size=14336,
                                    num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                                    max_position_embeddings=8192, rms_norm_eps=1e-5, rope_theta=500000.0,
                                    bos_token_id=128000, eos_token_id=128001)),
    "mistral-7b": (MistralConfig, dict(architectures=["MistralForCausalLM"], vocab_size=32000, hidden_size=4096, intermediate_size=14336,
                                       num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                                       max_position_embeddings=32768, sliding_window=4096,
                                       rms_norm_eps=1e-5, rope_theta=10000.0)),
    "mixtral-8x7b": (MixtralConfig, dict(architectures=["MixtralForCausalLM"], vocab_size=32000, hidden_size=4096, intermediate_size=14336,
                                         num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                                         max_position_embeddings=32768, num_local_experts=8,
                                         num_experts_per_tok=2, sliding_window=None, rms_norm_eps=1e-5,
                                         rope_theta=1e6, router_aux_loss_coef=0.02)),
}


# ---- families added for vramscope (groups F = tiny, G = real size) ----
_G3_ROPE_1B = {"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
               "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}
_G3_ROPE_4B = {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
               "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}
_G3_TINY_TEXT = dict(vocab_size=1000, hidden_size=256, intermediate_size=688, num_hidden_layers=6,
                     num_attention_heads=8, num_key_value_heads=2, head_dim=32, query_pre_attn_scalar=32,
                     sliding_window=64, max_position_embeddings=2048, rope_parameters=_G3_ROPE_1B)
FAMILY_SPECS = {
    # ---------------- tiny (group F) ----------------
    "qwen3_tiny": (CONFIG_MAPPING["qwen3"], dict(architectures=["Qwen3ForCausalLM"], vocab_size=1000, hidden_size=256,
                   intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, head_dim=32,
                   max_position_embeddings=2048)),
    "qwen3_moe_tiny": (CONFIG_MAPPING["qwen3_moe"], dict(architectures=["Qwen3MoeForCausalLM"], vocab_size=1000, hidden_size=256,
                       intermediate_size=688, moe_intermediate_size=128, num_hidden_layers=4, num_attention_heads=8,
                       num_key_value_heads=2, head_dim=32, num_experts=8, num_experts_per_tok=2, norm_topk_prob=True,
                       decoder_sparse_step=1, mlp_only_layers=[], max_position_embeddings=2048)),
    "gemma_tiny": (CONFIG_MAPPING["gemma"], dict(architectures=["GemmaForCausalLM"], vocab_size=1000, hidden_size=256,
                   intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=1, head_dim=32,
                   max_position_embeddings=2048)),
    "gemma2_tiny": (CONFIG_MAPPING["gemma2"], dict(architectures=["Gemma2ForCausalLM"], vocab_size=1000, hidden_size=256,
                    intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, head_dim=32,
                    query_pre_attn_scalar=32, sliding_window=64, max_position_embeddings=2048)),
    "gemma3_text_tiny": (CONFIG_MAPPING["gemma3_text"], dict(architectures=["Gemma3ForCausalLM"], **_G3_TINY_TEXT)),
    "gemma3_tiny": (CONFIG_MAPPING["gemma3"], dict(architectures=["Gemma3ForConditionalGeneration"],
                    text_config=dict(model_type="gemma3_text", **_G3_TINY_TEXT),
                    vision_config=dict(model_type="siglip_vision_model", hidden_size=64, intermediate_size=128,
                                       num_hidden_layers=2, num_attention_heads=2, image_size=64, patch_size=16,
                                       vision_use_head=False),
                    mm_tokens_per_image=4, boi_token_index=997, eoi_token_index=998, image_token_index=999)),
    # Gemma 3 with images (#40): 128-pixel images in 16-pixel patches pooled 2×2 to 16 tokens each
    "gemma3_vlm_tiny": (CONFIG_MAPPING["gemma3"], dict(architectures=["Gemma3ForConditionalGeneration"],
                        text_config=dict(model_type="gemma3_text", **_G3_TINY_TEXT),
                        vision_config=dict(model_type="siglip_vision_model", hidden_size=64, intermediate_size=128,
                                           num_hidden_layers=2, num_attention_heads=2, image_size=128, patch_size=16,
                                           vision_use_head=False),
                        mm_tokens_per_image=16, boi_token_index=997, eoi_token_index=998, image_token_index=999)),
    # Mistral 3 (#40): a Pixtral tower (2-D rotary, block-diagonal attention over each image's
    # patches), the 2x2 patch merger, a Llama-like text model
    "mistral3_tiny": (CONFIG_MAPPING["mistral3"], dict(architectures=["Mistral3ForConditionalGeneration"],
                      text_config=dict(model_type="mistral", vocab_size=1000, hidden_size=256, intermediate_size=688,
                                       num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, head_dim=32,
                                       max_position_embeddings=2048, sliding_window=None),
                      vision_config=dict(model_type="pixtral", hidden_size=64, intermediate_size=128,
                                         num_hidden_layers=2, num_attention_heads=2, head_dim=32, image_size=224,
                                         patch_size=14),
                      spatial_merge_size=2, image_token_index=10, vision_feature_layer=-1,
                      multimodal_projector_bias=False)),
    # Mistral-Small-3.1-24B's widths (the config class's defaults) in 4 text layers, its whole Pixtral tower
    "mistral-small-3.1-4l": (CONFIG_MAPPING["mistral3"], dict(architectures=["Mistral3ForConditionalGeneration"],
                             text_config=dict(model_type="mistral", vocab_size=131072, hidden_size=5120,
                                              intermediate_size=32768, num_hidden_layers=4, num_attention_heads=32,
                                              num_key_value_heads=8, head_dim=128, max_position_embeddings=131072,
                                              rms_norm_eps=1e-05, rope_theta=1000000000.0, sliding_window=None),
                             vision_config=dict(model_type="pixtral", hidden_size=1024, intermediate_size=4096,
                                                num_hidden_layers=24, num_attention_heads=16, head_dim=64,
                                                image_size=1540, patch_size=14, rope_theta=10000.0),
                             spatial_merge_size=2, image_token_index=10, vision_feature_layer=-1,
                             multimodal_projector_bias=False)),
    "phi3_tiny": (CONFIG_MAPPING["phi3"], dict(architectures=["Phi3ForCausalLM"], vocab_size=1000, hidden_size=256,
                  intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                  max_position_embeddings=2048, original_max_position_embeddings=2048, sliding_window=64,
                  bos_token_id=1, eos_token_id=2, pad_token_id=0)),
    # Phi-1/1.5/2 (model_type "phi"): parallel attention + MLP on one LayerNorm, partial rotary,
    # biased q/k/v/dense/fc1/fc2/lm_head, gelu_new; resid_pdrop 0.1 as phi-2 sets it
    "phi_tiny": (CONFIG_MAPPING["phi"], dict(architectures=["PhiForCausalLM"], vocab_size=1000, hidden_size=256,
                 intermediate_size=1024, num_hidden_layers=4, num_attention_heads=8, partial_rotary_factor=0.5,
                 resid_pdrop=0.1, embd_pdrop=0.0, attention_dropout=0.0, max_position_embeddings=2048)),
    "phi_tiny_qkln": (CONFIG_MAPPING["phi"], dict(architectures=["PhiForCausalLM"], vocab_size=1000, hidden_size=256,
                      intermediate_size=1024, num_hidden_layers=4, num_attention_heads=8, partial_rotary_factor=0.5,
                      qk_layernorm=True, resid_pdrop=0.0, embd_pdrop=0.1, attention_dropout=0.0,
                      max_position_embeddings=2048)),
    "olmo2_tiny": (CONFIG_MAPPING["olmo2"], dict(architectures=["Olmo2ForCausalLM"], vocab_size=1000, hidden_size=256,
                   intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                   max_position_embeddings=2048, pad_token_id=1, eos_token_id=2)),
    "gpt_neox_tiny": (CONFIG_MAPPING["gpt_neox"], dict(architectures=["GPTNeoXForCausalLM"], vocab_size=1000, hidden_size=256,
                      intermediate_size=1024, num_hidden_layers=4, num_attention_heads=8, rotary_pct=0.25,
                      use_parallel_residual=True, max_position_embeddings=2048)),
    "falcon_tiny": (CONFIG_MAPPING["falcon"], dict(architectures=["FalconForCausalLM"], vocab_size=1000, hidden_size=256,
                    num_hidden_layers=4, num_attention_heads=8, multi_query=True, parallel_attn=True,
                    new_decoder_architecture=False, bias=False, alibi=False, max_position_embeddings=2048,
                    bos_token_id=1, eos_token_id=2)),
    "falcon_tiny_nda": (CONFIG_MAPPING["falcon"], dict(architectures=["FalconForCausalLM"], vocab_size=1000, hidden_size=256,
                        num_hidden_layers=4, num_attention_heads=8, num_kv_heads=2, new_decoder_architecture=True,
                        parallel_attn=True, bias=False, alibi=False, max_position_embeddings=2048,
                        bos_token_id=1, eos_token_id=2)),
    "starcoder2_tiny": (CONFIG_MAPPING["starcoder2"], dict(architectures=["Starcoder2ForCausalLM"], vocab_size=1000, hidden_size=256,
                        intermediate_size=1024, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                        max_position_embeddings=2048, sliding_window=64, use_bias=True, residual_dropout=0.1,
                        embedding_dropout=0.1, attention_dropout=0.1, bos_token_id=1, eos_token_id=2)),
    "granite_tiny": (CONFIG_MAPPING["granite"], dict(architectures=["GraniteForCausalLM"], vocab_size=1000, hidden_size=256,
                     intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                     max_position_embeddings=2048, embedding_multiplier=12.0, logits_scaling=8.0,
                     residual_multiplier=0.22, attention_multiplier=0.015625, attention_dropout=0.1,
                     tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, pad_token_id=0)),
    "smollm3_tiny": (CONFIG_MAPPING["smollm3"], dict(architectures=["SmolLM3ForCausalLM"], vocab_size=1000, hidden_size=256,
                     intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                     max_position_embeddings=2048, no_rope_layer_interval=2, bos_token_id=1, eos_token_id=2,
                     pad_token_id=0)),
    "deepseek_v3_tiny": (CONFIG_MAPPING["deepseek_v3"], dict(architectures=["DeepseekV3ForCausalLM"], vocab_size=1000,
                         hidden_size=256, intermediate_size=688, moe_intermediate_size=128, num_hidden_layers=3,
                         num_attention_heads=8, num_key_value_heads=8, n_shared_experts=1, n_routed_experts=8,
                         num_experts_per_tok=2, n_group=4, topk_group=2, first_k_dense_replace=1,
                         q_lora_rank=64, kv_lora_rank=32, qk_rope_head_dim=16, qk_nope_head_dim=32, v_head_dim=32,
                         routed_scaling_factor=2.5, norm_topk_prob=True, max_position_embeddings=2048)),
    "deepseek_v2_tiny": (CONFIG_MAPPING["deepseek_v2"], dict(architectures=["DeepseekV2ForCausalLM"], vocab_size=1000,
                         hidden_size=256, intermediate_size=688, moe_intermediate_size=128, num_hidden_layers=3,
                         num_attention_heads=8, num_key_value_heads=8, n_shared_experts=2, n_routed_experts=8,
                         num_experts_per_tok=2, n_group=1, topk_group=1, topk_method="greedy", first_k_dense_replace=1,
                         q_lora_rank=None, kv_lora_rank=32, qk_rope_head_dim=16, qk_nope_head_dim=32, v_head_dim=32,
                         routed_scaling_factor=1.0, norm_topk_prob=False, max_position_embeddings=2048)),
    "gpt_oss_tiny": (CONFIG_MAPPING["gpt_oss"], dict(architectures=["GptOssForCausalLM"], vocab_size=1000, hidden_size=256,
                     intermediate_size=256, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, head_dim=32,
                     num_local_experts=8, num_experts_per_tok=2, sliding_window=64, max_position_embeddings=4096,
                     rope_parameters={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                      "truncate": False, "original_max_position_embeddings": 4096, "rope_theta": 150000.0})),
    "vit_tiny": (CONFIG_MAPPING["vit"], dict(architectures=["ViTForImageClassification"], hidden_size=256, num_hidden_layers=4,
                 num_attention_heads=8, intermediate_size=1024, image_size=64, patch_size=16, num_labels=10)),
    "dinov2_tiny": (CONFIG_MAPPING["dinov2"], dict(architectures=["Dinov2ForImageClassification"], hidden_size=256,
                    num_hidden_layers=4, num_attention_heads=8, mlp_ratio=4, image_size=56, patch_size=14,
                    num_labels=10, layerscale_value=1e-5)),
    "dinov2_tiny_swiglu": (CONFIG_MAPPING["dinov2"], dict(architectures=["Dinov2ForImageClassification"], hidden_size=256,
                           num_hidden_layers=4, num_attention_heads=8, mlp_ratio=4, image_size=56, patch_size=14,
                           num_labels=10, layerscale_value=1e-5, use_swiglu_ffn=True)),
    "dinov2-large": (CONFIG_MAPPING["dinov2"], dict(architectures=["Dinov2ForImageClassification"], hidden_size=1024,
                     num_hidden_layers=24, num_attention_heads=16, mlp_ratio=4, image_size=518, patch_size=14,
                     num_labels=1000, layerscale_value=1.0, layer_norm_eps=1e-6, qkv_bias=True)),
    "siglip_tiny": (CONFIG_MAPPING["siglip"], dict(architectures=["SiglipForImageClassification"], num_labels=10,
                    vision_config=dict(hidden_size=256, intermediate_size=1024, num_hidden_layers=4,
                                       num_attention_heads=8, image_size=64, patch_size=16),
                    text_config=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                                     num_attention_heads=2, vocab_size=1000))),
    "siglip-so400m": (CONFIG_MAPPING["siglip"], dict(architectures=["SiglipForImageClassification"], num_labels=1000,
                      vision_config=dict(hidden_size=1152, intermediate_size=4304, num_hidden_layers=27,
                                         num_attention_heads=16, image_size=384, patch_size=14))),
    # ---------------- real size (group G), from the published config.json values ----------------
    "qwen3-0.6b": (CONFIG_MAPPING["qwen3"], dict(architectures=["Qwen3ForCausalLM"], vocab_size=151936, hidden_size=1024,
                   intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                   max_position_embeddings=40960, rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
                   attention_bias=False, use_sliding_window=False, max_window_layers=28,
                   bos_token_id=151643, eos_token_id=151645)),
    "qwen3-30b-a3b": (CONFIG_MAPPING["qwen3_moe"], dict(architectures=["Qwen3MoeForCausalLM"], vocab_size=151936, hidden_size=2048,
                      intermediate_size=6144, moe_intermediate_size=768, num_hidden_layers=48, num_attention_heads=32,
                      num_key_value_heads=4, head_dim=128, num_experts=128, num_experts_per_tok=8, norm_topk_prob=True,
                      decoder_sparse_step=1, mlp_only_layers=[], max_position_embeddings=40960, rms_norm_eps=1e-6,
                      rope_theta=1000000.0, tie_word_embeddings=False, router_aux_loss_coef=0.001,
                      use_sliding_window=False, max_window_layers=48, bos_token_id=151643, eos_token_id=151645)),
    "gemma-2b": (CONFIG_MAPPING["gemma"], dict(architectures=["GemmaForCausalLM"], vocab_size=256000, hidden_size=2048,
                 intermediate_size=16384, num_hidden_layers=18, num_attention_heads=8, num_key_value_heads=1, head_dim=256,
                 hidden_act="gelu_pytorch_tanh", max_position_embeddings=8192, rms_norm_eps=1e-6, rope_theta=10000.0,
                 tie_word_embeddings=True, pad_token_id=0, bos_token_id=2, eos_token_id=1)),
    "gemma-2-2b": (CONFIG_MAPPING["gemma2"], dict(architectures=["Gemma2ForCausalLM"], vocab_size=256000, hidden_size=2304,
                   intermediate_size=9216, num_hidden_layers=26, num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                   hidden_activation="gelu_pytorch_tanh", max_position_embeddings=8192, rms_norm_eps=1e-6,
                   rope_theta=10000.0, query_pre_attn_scalar=256, sliding_window=4096, attn_logit_softcapping=50.0,
                   final_logit_softcapping=30.0, tie_word_embeddings=True, pad_token_id=0, bos_token_id=2, eos_token_id=1)),
    "gemma-3-1b": (CONFIG_MAPPING["gemma3_text"], dict(architectures=["Gemma3ForCausalLM"], vocab_size=262144, hidden_size=1152,
                   intermediate_size=6912, num_hidden_layers=26, num_attention_heads=4, num_key_value_heads=1, head_dim=256,
                   query_pre_attn_scalar=256, sliding_window=512, sliding_window_pattern=6, max_position_embeddings=32768,
                   rms_norm_eps=1e-6, rope_parameters=_G3_ROPE_1B, attn_logit_softcapping=None,
                   final_logit_softcapping=None, tie_word_embeddings=True, pad_token_id=0, bos_token_id=2, eos_token_id=1)),
    # Gemma-3-4B's widths in 6 text layers (five local, one global), its whole 896-pixel tower
    "gemma-3-4b-6l": (CONFIG_MAPPING["gemma3"], dict(architectures=["Gemma3ForConditionalGeneration"],
                      text_config=dict(model_type="gemma3_text", vocab_size=262208, hidden_size=2560, intermediate_size=10240,
                                       num_hidden_layers=6, num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                                       query_pre_attn_scalar=256, sliding_window=1024, sliding_window_pattern=6,
                                       max_position_embeddings=131072, rms_norm_eps=1e-6, rope_parameters=_G3_ROPE_4B),
                      vision_config=dict(model_type="siglip_vision_model", hidden_size=1152, intermediate_size=4304,
                                         num_hidden_layers=27, num_attention_heads=16, image_size=896, patch_size=14,
                                         vision_use_head=False, layer_norm_eps=1e-6),
                      mm_tokens_per_image=256, boi_token_index=255999, eoi_token_index=256000, image_token_index=262144)),
    "gemma-3-4b": (CONFIG_MAPPING["gemma3"], dict(architectures=["Gemma3ForConditionalGeneration"],
                   text_config=dict(model_type="gemma3_text", vocab_size=262208, hidden_size=2560, intermediate_size=10240,
                                    num_hidden_layers=34, num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                                    query_pre_attn_scalar=256, sliding_window=1024, sliding_window_pattern=6,
                                    max_position_embeddings=131072, rms_norm_eps=1e-6, rope_parameters=_G3_ROPE_4B),
                   vision_config=dict(model_type="siglip_vision_model", hidden_size=1152, intermediate_size=4304,
                                      num_hidden_layers=27, num_attention_heads=16, image_size=896, patch_size=14,
                                      vision_use_head=False, layer_norm_eps=1e-6),
                   mm_tokens_per_image=256, boi_token_index=255999, eoi_token_index=256000, image_token_index=262144)),
    "phi-3-mini-4k": (CONFIG_MAPPING["phi3"], dict(architectures=["Phi3ForCausalLM"], vocab_size=32064, hidden_size=3072,
                      intermediate_size=8192, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                      max_position_embeddings=4096, original_max_position_embeddings=4096, rope_theta=10000.0,
                      rms_norm_eps=1e-5, sliding_window=2047, tie_word_embeddings=False, bos_token_id=1,
                      eos_token_id=32000, pad_token_id=32000)),
    "olmo-2-1b": (CONFIG_MAPPING["olmo2"], dict(architectures=["Olmo2ForCausalLM"], vocab_size=100352, hidden_size=2048,
                  intermediate_size=8192, num_hidden_layers=16, num_attention_heads=16, num_key_value_heads=16,
                  max_position_embeddings=4096, rope_theta=500000.0, rms_norm_eps=1e-6, tie_word_embeddings=False,
                  pad_token_id=100277, eos_token_id=100257, bos_token_id=None)),
    "phi-1.5": (CONFIG_MAPPING["phi"], dict(architectures=["PhiForCausalLM"], vocab_size=51200, hidden_size=2048,
                intermediate_size=8192, num_hidden_layers=24, num_attention_heads=32, partial_rotary_factor=0.5,
                max_position_embeddings=2048, layer_norm_eps=1e-5, hidden_act="gelu_new", resid_pdrop=0.0,
                embd_pdrop=0.0, attention_dropout=0.0, rope_theta=10000.0, tie_word_embeddings=False)),
    "phi-2": (CONFIG_MAPPING["phi"], dict(architectures=["PhiForCausalLM"], vocab_size=51200, hidden_size=2560,
              intermediate_size=10240, num_hidden_layers=32, num_attention_heads=32, partial_rotary_factor=0.4,
              max_position_embeddings=2048, layer_norm_eps=1e-5, hidden_act="gelu_new", resid_pdrop=0.1,
              embd_pdrop=0.0, attention_dropout=0.0, rope_theta=10000.0, tie_word_embeddings=False)),
    "pythia-1.4b": (CONFIG_MAPPING["gpt_neox"], dict(architectures=["GPTNeoXForCausalLM"], vocab_size=50304, hidden_size=2048,
                    intermediate_size=8192, num_hidden_layers=24, num_attention_heads=16, rotary_pct=0.25,
                    rotary_emb_base=10000, max_position_embeddings=2048, use_parallel_residual=True,
                    tie_word_embeddings=False, layer_norm_eps=1e-5, hidden_act="gelu", bos_token_id=0, eos_token_id=0)),
    "falcon-7b": (CONFIG_MAPPING["falcon"], dict(architectures=["FalconForCausalLM"], vocab_size=65024, hidden_size=4544,
                  num_hidden_layers=32, num_attention_heads=71, multi_query=True, parallel_attn=True,
                  new_decoder_architecture=False, alibi=False, bias=False, layer_norm_epsilon=1e-5,
                  max_position_embeddings=2048, rope_theta=10000.0, bos_token_id=11, eos_token_id=11)),
    "starcoder2-3b": (CONFIG_MAPPING["starcoder2"], dict(architectures=["Starcoder2ForCausalLM"], vocab_size=49152, hidden_size=3072,
                      intermediate_size=12288, num_hidden_layers=30, num_attention_heads=24, num_key_value_heads=2,
                      max_position_embeddings=16384, sliding_window=4096, rope_theta=999999.4420358813,
                      norm_epsilon=1e-5, use_bias=True, hidden_act="gelu_pytorch_tanh", residual_dropout=0.1,
                      embedding_dropout=0.1, attention_dropout=0.1, initializer_range=0.018042,
                      tie_word_embeddings=True, bos_token_id=0, eos_token_id=0)),
    "granite-3.0-2b": (CONFIG_MAPPING["granite"], dict(architectures=["GraniteForCausalLM"], vocab_size=49155, hidden_size=2048,
                       intermediate_size=8192, num_hidden_layers=40, num_attention_heads=32, num_key_value_heads=8,
                       max_position_embeddings=4096, rope_theta=10000.0, rms_norm_eps=1e-5, attention_dropout=0.1,
                       embedding_multiplier=12.0, logits_scaling=8.0, residual_multiplier=0.22,
                       attention_multiplier=0.015625, tie_word_embeddings=True, bos_token_id=0, eos_token_id=0,
                       pad_token_id=0)),
    "smollm3-3b": (CONFIG_MAPPING["smollm3"], dict(architectures=["SmolLM3ForCausalLM"], vocab_size=128256, hidden_size=2048,
                   intermediate_size=11008, num_hidden_layers=36, num_attention_heads=16, num_key_value_heads=4,
                   max_position_embeddings=65536, rope_theta=5000000.0, rms_norm_eps=1e-6, no_rope_layer_interval=4,
                   use_sliding_window=False, tie_word_embeddings=True, bos_token_id=128000, eos_token_id=128012,
                   pad_token_id=128004)),
    "deepseek-v2-lite": (CONFIG_MAPPING["deepseek_v2"], dict(architectures=["DeepseekV2ForCausalLM"], vocab_size=102400,
                         hidden_size=2048, intermediate_size=10944, moe_intermediate_size=1408, num_hidden_layers=27,
                         num_attention_heads=16, num_key_value_heads=16, n_routed_experts=64, n_shared_experts=2,
                         num_experts_per_tok=6, first_k_dense_replace=1, kv_lora_rank=512, q_lora_rank=None,
                         qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, topk_method="greedy",
                         n_group=1, topk_group=1, norm_topk_prob=False, routed_scaling_factor=1.0,
                         max_position_embeddings=163840, rms_norm_eps=1e-6, tie_word_embeddings=False,
                         rope_parameters={"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096,
                                          "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 0.707, "mscale_all_dim": 0.707,
                                          "rope_theta": 10000.0},
                         bos_token_id=100000, eos_token_id=100001)),
    "deepseek-v3": (CONFIG_MAPPING["deepseek_v3"], dict(architectures=["DeepseekV3ForCausalLM"], vocab_size=129280,
                    hidden_size=7168, intermediate_size=18432, moe_intermediate_size=2048, num_hidden_layers=61,
                    num_attention_heads=128, num_key_value_heads=128, n_routed_experts=256, n_shared_experts=1,
                    num_experts_per_tok=8, n_group=8, topk_group=4, first_k_dense_replace=3, q_lora_rank=1536,
                    kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
                    routed_scaling_factor=2.5, norm_topk_prob=True, max_position_embeddings=163840, rms_norm_eps=1e-6,
                    tie_word_embeddings=False,
                    rope_parameters={"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096,
                                     "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                                     "rope_theta": 10000.0},
                    bos_token_id=0, eos_token_id=1)),
    "gpt-oss-20b": (CONFIG_MAPPING["gpt_oss"], dict(architectures=["GptOssForCausalLM"], vocab_size=201088, hidden_size=2880,
                    intermediate_size=2880, num_hidden_layers=24, num_attention_heads=64, num_key_value_heads=8, head_dim=64,
                    num_local_experts=32, num_experts_per_tok=4, sliding_window=128, max_position_embeddings=131072,
                    rms_norm_eps=1e-5, attention_bias=True, swiglu_limit=7.0, router_aux_loss_coef=0.9,
                    output_router_logits=False, tie_word_embeddings=False, eos_token_id=200002, pad_token_id=199999,
                    rope_parameters={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                     "truncate": False, "original_max_position_embeddings": 4096, "rope_theta": 150000.0})),
    # ---------------- real size, added for group H (published config.json numbers) ----------------
    "gemma-2-9b": (CONFIG_MAPPING["gemma2"], dict(architectures=["Gemma2ForCausalLM"], vocab_size=256000, hidden_size=3584,
                   intermediate_size=14336, num_hidden_layers=42, num_attention_heads=16, num_key_value_heads=8, head_dim=256,
                   hidden_activation="gelu_pytorch_tanh", max_position_embeddings=8192, rms_norm_eps=1e-6,
                   rope_theta=10000.0, query_pre_attn_scalar=256, sliding_window=4096, attn_logit_softcapping=50.0,
                   final_logit_softcapping=30.0, tie_word_embeddings=True, pad_token_id=0, bos_token_id=2, eos_token_id=1)),
    "olmo-2-7b": (CONFIG_MAPPING["olmo2"], dict(architectures=["Olmo2ForCausalLM"], vocab_size=100352, hidden_size=4096,
                  intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                  max_position_embeddings=4096, rope_theta=500000.0, rms_norm_eps=1e-6, tie_word_embeddings=False,
                  pad_token_id=100277, eos_token_id=100257, bos_token_id=None)),
    "falcon-40b": (CONFIG_MAPPING["falcon"], dict(architectures=["FalconForCausalLM"], vocab_size=65024, hidden_size=8192,
                   num_hidden_layers=60, num_attention_heads=128, num_kv_heads=8, new_decoder_architecture=True,
                   multi_query=True, parallel_attn=True, alibi=False, bias=False, layer_norm_epsilon=1e-5,
                   max_position_embeddings=2048, rope_theta=10000.0, bos_token_id=11, eos_token_id=11)),
    "vit-base-patch16-224": (CONFIG_MAPPING["vit"], dict(architectures=["ViTForImageClassification"], hidden_size=768,
                             num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072, image_size=224,
                             patch_size=16, num_labels=1000, qkv_bias=True, hidden_dropout_prob=0.0,
                             attention_probs_dropout_prob=0.0, layer_norm_eps=1e-12)),
    # ---------------- 2025 MoE decoders (group M, issue #39) ----------------
    "olmoe_tiny": (CONFIG_MAPPING["olmoe"], dict(architectures=["OlmoeForCausalLM"], vocab_size=1000, hidden_size=256,
                   intermediate_size=128, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
                   num_experts=8, num_experts_per_tok=2, norm_topk_prob=False, max_position_embeddings=2048)),
    "glm4_tiny": (CONFIG_MAPPING["glm4"], dict(architectures=["Glm4ForCausalLM"], vocab_size=1000, hidden_size=256,
                  intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, head_dim=32,
                  attention_bias=True, pad_token_id=0, max_position_embeddings=2048)),
    "glm4_moe_tiny": (CONFIG_MAPPING["glm4_moe"], dict(architectures=["Glm4MoeForCausalLM"], vocab_size=1000, hidden_size=256,
                      intermediate_size=688, moe_intermediate_size=128, num_hidden_layers=4, num_attention_heads=8,
                      num_key_value_heads=2, head_dim=32, n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=1,
                      first_k_dense_replace=1, use_qk_norm=True, n_group=1, topk_group=1, attention_bias=True,
                      max_position_embeddings=2048)),
    "minimax_m2_tiny": (CONFIG_MAPPING["minimax_m2"], dict(architectures=["MiniMaxM2ForCausalLM"], vocab_size=1000,
                        hidden_size=256, intermediate_size=128, num_hidden_layers=4, num_attention_heads=8,
                        num_key_value_heads=2, head_dim=32, num_local_experts=8, num_experts_per_tok=2,
                        max_position_embeddings=2048)),
    "ernie4_5_tiny": (CONFIG_MAPPING["ernie4_5"], dict(architectures=["Ernie4_5ForCausalLM"], vocab_size=1000, hidden_size=256,
                      intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, head_dim=32,
                      use_bias=True, max_position_embeddings=2048)),
    "ernie4_5_moe_tiny": (CONFIG_MAPPING["ernie4_5_moe"], dict(architectures=["Ernie4_5_MoeForCausalLM"], vocab_size=1000,
                          hidden_size=256, intermediate_size=688, moe_intermediate_size=128, num_hidden_layers=4,
                          num_attention_heads=8, num_key_value_heads=2, moe_num_experts=8, moe_k=2,
                          moe_num_shared_experts=1, moe_layer_start_index=1, moe_layer_end_index=3,
                          max_position_embeddings=2048)),
    "phimoe_tiny": (CONFIG_MAPPING["phimoe"], dict(architectures=["PhimoeForCausalLM"], vocab_size=1000, hidden_size=256,
                    intermediate_size=128, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                    num_local_experts=4, num_experts_per_tok=2, attention_bias=True, lm_head_bias=True,
                    max_position_embeddings=2048)),
    # Phi-3.5-MoE's own jitter: the tokens multiplied in place by a uniform draw, twice, in training
    "phimoe_tiny_jitter": (CONFIG_MAPPING["phimoe"], dict(architectures=["PhimoeForCausalLM"], vocab_size=1000,
                           hidden_size=256, intermediate_size=128, num_hidden_layers=4, num_attention_heads=8,
                           num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, attention_bias=True,
                           lm_head_bias=True, input_jitter_noise=0.01, max_position_embeddings=2048)),
    "granitemoe_tiny": (CONFIG_MAPPING["granitemoe"], dict(architectures=["GraniteMoeForCausalLM"], vocab_size=1000,
                        hidden_size=256, intermediate_size=128, num_hidden_layers=4, num_attention_heads=8,
                        num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, embedding_multiplier=12.0,
                        residual_multiplier=0.22, attention_multiplier=0.0078125, logits_scaling=8.0,
                        max_position_embeddings=2048)),
    # ---------------- 2025 MoE decoders at real widths (group M, checks) ----------------
    "olmoe-1b-7b": (CONFIG_MAPPING["olmoe"], dict(architectures=["OlmoeForCausalLM"], vocab_size=50304, hidden_size=2048,
                    intermediate_size=1024, num_hidden_layers=16, num_attention_heads=16, num_key_value_heads=16,
                    num_experts=64, num_experts_per_tok=8, norm_topk_prob=False, max_position_embeddings=4096,
                    rope_theta=10000.0, rms_norm_eps=1e-5, pad_token_id=1, eos_token_id=50279, tie_word_embeddings=False)),
    "glm-4-9b": (CONFIG_MAPPING["glm4"], dict(architectures=["Glm4ForCausalLM"], vocab_size=151552, hidden_size=4096,
                 intermediate_size=13696, num_hidden_layers=40, num_attention_heads=32, num_key_value_heads=2, head_dim=128,
                 attention_bias=True, partial_rotary_factor=0.5, max_position_embeddings=32768, rms_norm_eps=1e-5,
                 pad_token_id=151329, eos_token_id=151329, tie_word_embeddings=False)),
    "glm-4.5-air": (CONFIG_MAPPING["glm4_moe"], dict(architectures=["Glm4MoeForCausalLM"], vocab_size=151552, hidden_size=4096,
                    intermediate_size=10944, moe_intermediate_size=1408, num_hidden_layers=46, num_attention_heads=96,
                    num_key_value_heads=8, head_dim=128, n_routed_experts=128, num_experts_per_tok=8, n_shared_experts=1,
                    first_k_dense_replace=1, use_qk_norm=False, n_group=1, topk_group=1, attention_bias=True,
                    partial_rotary_factor=0.5, routed_scaling_factor=1.0, norm_topk_prob=True,
                    max_position_embeddings=131072, pad_token_id=151329, tie_word_embeddings=False)),
    "minimax-m2-8l": (CONFIG_MAPPING["minimax_m2"], dict(architectures=["MiniMaxM2ForCausalLM"], vocab_size=200064,
                      hidden_size=3072, intermediate_size=1536, num_hidden_layers=8, num_attention_heads=48,
                      num_key_value_heads=8, head_dim=128, num_local_experts=256, num_experts_per_tok=8, rotary_dim=64,
                      max_position_embeddings=196608, rope_theta=5000000.0, tie_word_embeddings=False)),
    "ernie-4.5-21b-a3b": (CONFIG_MAPPING["ernie4_5_moe"], dict(architectures=["Ernie4_5_MoeForCausalLM"], vocab_size=103424,
                          hidden_size=2560, intermediate_size=12288, moe_intermediate_size=1536, num_hidden_layers=28,
                          num_attention_heads=20, num_key_value_heads=4, moe_num_experts=64, moe_k=6,
                          moe_num_shared_experts=2, moe_layer_start_index=1, moe_layer_end_index=27, moe_layer_interval=1,
                          max_position_embeddings=131072, rope_theta=500000.0, tie_word_embeddings=True, use_bias=False)),
    "granite-3.0-1b-a400m": (CONFIG_MAPPING["granitemoe"], dict(architectures=["GraniteMoeForCausalLM"], vocab_size=49155,
                             hidden_size=1024, intermediate_size=512, num_hidden_layers=24, num_attention_heads=16,
                             num_key_value_heads=8, num_local_experts=32, num_experts_per_tok=8, embedding_multiplier=12.0,
                             residual_multiplier=0.22, attention_multiplier=0.015625, logits_scaling=6.0,
                             max_position_embeddings=4096, rope_theta=10000.0, tie_word_embeddings=True, pad_token_id=0)),
    # Phi-3.5-MoE's widths in 8 of its 32 blocks (its own jitter and biases; default rotary)
    "phi-3.5-moe-8l": (CONFIG_MAPPING["phimoe"], dict(architectures=["PhimoeForCausalLM"], vocab_size=32064,
                       hidden_size=4096, intermediate_size=6400, num_hidden_layers=8, num_attention_heads=32,
                       num_key_value_heads=8, num_local_experts=16, num_experts_per_tok=2, attention_bias=True,
                       lm_head_bias=True, input_jitter_noise=0.01, router_jitter_noise=0.01,
                       max_position_embeddings=131072, tie_word_embeddings=False)),
    # ---------------- 2025 dense decoders (group N, issue #39) ----------------
    "seed_oss_tiny": (CONFIG_MAPPING["seed_oss"], dict(architectures=["SeedOssForCausalLM"], vocab_size=1000, hidden_size=256,
                      intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, head_dim=32,
                      max_position_embeddings=2048)),
    "exaone4_tiny": (CONFIG_MAPPING["exaone4"], dict(architectures=["Exaone4ForCausalLM"], vocab_size=1000, hidden_size=256,
                     intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, head_dim=32,
                     sliding_window=64, sliding_window_pattern=2, max_position_embeddings=2048)),
    "olmo3_tiny": (CONFIG_MAPPING["olmo3"], dict(architectures=["Olmo3ForCausalLM"], vocab_size=1000, hidden_size=256,
                   intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                   sliding_window=64, layer_types=["sliding_attention", "full_attention"] * 2, max_position_embeddings=2048)),
    "arcee_tiny": (CONFIG_MAPPING["arcee"], dict(architectures=["ArceeForCausalLM"], vocab_size=1000, hidden_size=256,
                   intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, head_dim=32,
                   max_position_embeddings=2048)),
    "apertus_tiny": (CONFIG_MAPPING["apertus"], dict(architectures=["ApertusForCausalLM"], vocab_size=1000, hidden_size=256,
                     intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                     max_position_embeddings=2048)),
    # Command R7B / Command A: attention and MLP in parallel on one fp32 LayerNorm, rotary in fp32
    # on the sliding layers only, every 4th layer global, logits scaled
    "cohere2_tiny": (CONFIG_MAPPING["cohere2"], dict(architectures=["Cohere2ForCausalLM"], vocab_size=1000, hidden_size=256,
                     intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                     sliding_window=64, max_position_embeddings=2048)),
    # Command R (rotary on every layer) and Command R+'s per-head q/k LayerNorm (a weight row per head)
    # LFM2: short-convolution blocks (in_proj to B, C, x; B·x; a depthwise causal conv; C·y) beside GQA blocks
    # Mamba2 (SSD): in_proj to gate, x·B·C and dt; a depthwise causal conv1d; the chunked scan
    # (transformers' PyTorch path); the gated RMSNorm; residuals kept in fp32
    "mamba2_tiny": (CONFIG_MAPPING["mamba2"], dict(architectures=["Mamba2ForCausalLM"], vocab_size=1000, hidden_size=256,
                    num_heads=8, head_dim=64, state_size=16, n_groups=2, num_hidden_layers=4, chunk_size=64)),
    "mamba2_tiny_nb": (CONFIG_MAPPING["mamba2"], dict(architectures=["Mamba2ForCausalLM"], vocab_size=1000, hidden_size=256,
                    num_heads=8, head_dim=64, state_size=16, n_groups=1, num_hidden_layers=3, chunk_size=64,
                    use_conv_bias=False, residual_in_fp32=False)),
    "bamba_tiny": (CONFIG_MAPPING["bamba"], dict(architectures=["BambaForCausalLM"], vocab_size=1000, hidden_size=256,
                   intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                   mamba_n_heads=8, mamba_d_head=64, mamba_d_state=16, mamba_n_groups=2, mamba_chunk_size=64,
                   attn_layer_indices=[2], max_position_embeddings=2048)),
    # Bamba-9B's widths (mamba_d_state 128, one group, chunk 256), its first 8 blocks, attention at 4
    "bamba-9b-8l": (CONFIG_MAPPING["bamba"], dict(architectures=["BambaForCausalLM"], vocab_size=128256, hidden_size=4096,
                    intermediate_size=14336, num_hidden_layers=8, num_attention_heads=32, num_key_value_heads=8,
                    mamba_n_heads=128, mamba_d_head=64, mamba_d_state=128, mamba_n_groups=1, mamba_chunk_size=256,
                    attn_layer_indices=[4], max_position_embeddings=4096)),
    # Mamba-Codestral-7B's widths, 8 of its 64 blocks
    "mamba2-7b-8l": (CONFIG_MAPPING["mamba2"], dict(architectures=["Mamba2ForCausalLM"], vocab_size=32768, hidden_size=4096,
                     num_heads=128, head_dim=64, state_size=128, n_groups=8, num_hidden_layers=8, chunk_size=256)),
    "granitemoehybrid_tiny": (CONFIG_MAPPING["granitemoehybrid"], dict(architectures=["GraniteMoeHybridForCausalLM"],
                   vocab_size=1000, hidden_size=256, intermediate_size=128, num_hidden_layers=4, num_attention_heads=8,
                   num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, shared_intermediate_size=256,
                   mamba_n_heads=8, mamba_d_head=64, mamba_d_state=16, mamba_n_groups=2, mamba_chunk_size=64,
                   layer_types=["mamba", "mamba", "attention", "mamba"], embedding_multiplier=12.0,
                   residual_multiplier=0.22, logits_scaling=8.0, max_position_embeddings=2048)),
    "nemotron_h_tiny": (CONFIG_MAPPING["nemotron_h"], dict(architectures=["NemotronHForCausalLM"], vocab_size=1000,
                   hidden_size=256, layers_block_type=["mamba", "attention", "mamba", "mlp", "moe"],
                   num_attention_heads=8, num_key_value_heads=2, head_dim=32, intermediate_size=512,
                   mamba_num_heads=8, mamba_head_dim=64, ssm_state_size=16, n_groups=2, chunk_size=64,
                   n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=128,
                   moe_shared_expert_intermediate_size=256, n_group=1, topk_group=1, max_position_embeddings=2048)),
    "nemotron_h_tiny_fp32res": (CONFIG_MAPPING["nemotron_h"], dict(architectures=["NemotronHForCausalLM"], vocab_size=1000,
                   hidden_size=256, layers_block_type=["mamba", "attention", "mlp", "moe"],
                   num_attention_heads=8, num_key_value_heads=2, head_dim=32, intermediate_size=512,
                   mamba_num_heads=8, mamba_head_dim=64, ssm_state_size=16, n_groups=2, chunk_size=64,
                   n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=128, residual_in_fp32=True,
                   moe_shared_expert_intermediate_size=256, n_group=2, topk_group=1, max_position_embeddings=2048)),
    "m2x_a": (CONFIG_MAPPING["mamba2"], dict(architectures=["Mamba2ForCausalLM"], vocab_size=64, hidden_size=1024,
                    num_heads=32, head_dim=64, state_size=64, n_groups=1, num_hidden_layers=1, chunk_size=128)),
    "m2x_b": (CONFIG_MAPPING["mamba2"], dict(architectures=["Mamba2ForCausalLM"], vocab_size=64, hidden_size=1024,
                    num_heads=32, head_dim=64, state_size=64, n_groups=1, num_hidden_layers=1, chunk_size=256)),
    "m2x_c": (CONFIG_MAPPING["mamba2"], dict(architectures=["Mamba2ForCausalLM"], vocab_size=64, hidden_size=1024,
                    num_heads=16, head_dim=128, state_size=32, n_groups=2, num_hidden_layers=1, chunk_size=128)),
    "falcon_h1_tiny": (CONFIG_MAPPING["falcon_h1"], dict(architectures=["FalconH1ForCausalLM"], vocab_size=1000,
                   hidden_size=256, intermediate_size=688, num_hidden_layers=3, num_attention_heads=8,
                   num_key_value_heads=2, mamba_d_ssm=512, mamba_n_heads=8, mamba_d_head=64, mamba_d_state=16,
                   mamba_n_groups=2, mamba_chunk_size=64, key_multiplier=0.5, attention_in_multiplier=0.7,
                   ssm_in_multiplier=1.3, ssm_out_multiplier=0.8, attention_out_multiplier=0.9,
                   mlp_multipliers=[0.6, 1.1], embedding_multiplier=5.0, lm_head_multiplier=0.2,
                   max_position_embeddings=2048)),
    "falcon_h1_tiny_norm": (CONFIG_MAPPING["falcon_h1"], dict(architectures=["FalconH1ForCausalLM"], vocab_size=1000,
                   hidden_size=256, intermediate_size=688, num_hidden_layers=3, num_attention_heads=8,
                   num_key_value_heads=2, mamba_d_ssm=512, mamba_n_heads=8, mamba_d_head=64, mamba_d_state=16,
                   mamba_n_groups=2, mamba_chunk_size=64, mamba_rms_norm=True, mamba_norm_before_gate=False,
                   max_position_embeddings=2048)),
    "mamba_tiny": (CONFIG_MAPPING["mamba"], dict(architectures=["MambaForCausalLM"], vocab_size=1000, hidden_size=256,
                   intermediate_size=512, state_size=16, num_hidden_layers=3)),
    "jamba_tiny": (CONFIG_MAPPING["jamba"], dict(architectures=["JambaForCausalLM"], vocab_size=1000, hidden_size=256,
                   intermediate_size=512, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                   num_experts=4, num_experts_per_tok=2, expert_layer_period=2, expert_layer_offset=1,
                   attn_layer_period=4, attn_layer_offset=2, mamba_d_state=16, max_position_embeddings=2048)),
    "qwen3_next_tiny": (CONFIG_MAPPING["qwen3_next"], dict(architectures=["Qwen3NextForCausalLM"], vocab_size=1000,
                   hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=32, linear_num_key_heads=2, linear_num_value_heads=4,
                   linear_key_head_dim=16, linear_value_head_dim=24, num_experts=4, num_experts_per_tok=2,
                   moe_intermediate_size=64, shared_expert_intermediate_size=64, max_position_embeddings=2048)),
    "lfm2_tiny": (CONFIG_MAPPING["lfm2"], dict(architectures=["Lfm2ForCausalLM"], vocab_size=1000, hidden_size=256,
                  intermediate_size=1024, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                  layer_types=["conv", "conv", "full_attention", "conv"], max_position_embeddings=2048)),
    # LFM2-1.2B's widths, its first 8 blocks (attention at 2 and 5)
    "lfm2-1.2b-8l": (CONFIG_MAPPING["lfm2"], dict(architectures=["Lfm2ForCausalLM"], vocab_size=65536, hidden_size=2048,
                     intermediate_size=12288, num_hidden_layers=8, num_attention_heads=32, num_key_value_heads=8,
                     layer_types=["conv", "conv", "full_attention", "conv", "conv", "full_attention", "conv", "conv"],
                     max_position_embeddings=128000)),
    # BLOOM: ALiBi, LayerNorms, fused biased query_key_value, 4h GELU MLP; bloom-560m's widths in 8 blocks
    "bloom_tiny": (CONFIG_MAPPING["bloom"], dict(architectures=["BloomForCausalLM"], vocab_size=1000, hidden_size=256,
                   n_layer=4, n_head=8)),
    "bloom-560m-8l": (CONFIG_MAPPING["bloom"], dict(architectures=["BloomForCausalLM"], vocab_size=250880,
                      hidden_size=1024, n_layer=8, n_head=16)),
    # Zamba2: Mamba2 blocks, a shared transformer block (two copies taken in turn, adapters per
    # hybrid layer) at hybrid_layer_ids; and the class's widths (Zamba2-2.7B) in 8 blocks
    "zamba2_tiny": (CONFIG_MAPPING["zamba2"], dict(architectures=["Zamba2ForCausalLM"], vocab_size=1000, hidden_size=256,
                    intermediate_size=512, num_hidden_layers=6, num_attention_heads=8, num_key_value_heads=8,
                    n_mamba_heads=8, mamba_headdim=64, mamba_d_state=32, mamba_ngroups=1, chunk_size=64,
                    num_mem_blocks=2, adapter_rank=16, use_shared_attention_adapter=True,
                    layers_block_type=["mamba", "hybrid"] * 3, max_position_embeddings=2048)),
    "zamba2-2.7b-8l": (CONFIG_MAPPING["zamba2"], dict(architectures=["Zamba2ForCausalLM"], num_hidden_layers=8,
                       layers_block_type=["mamba"] * 3 + ["hybrid"] + ["mamba"] * 2 + ["hybrid", "mamba"],
                       max_position_embeddings=4096)),
    "cohere_tiny": (CONFIG_MAPPING["cohere"], dict(architectures=["CohereForCausalLM"], vocab_size=1000, hidden_size=256,
                    intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                    max_position_embeddings=2048)),
    "cohere_tiny_qkn": (CONFIG_MAPPING["cohere"], dict(architectures=["CohereForCausalLM"], vocab_size=1000,
                        hidden_size=256, intermediate_size=688, num_hidden_layers=4, num_attention_heads=8,
                        num_key_value_heads=2, use_qk_norm=True, max_position_embeddings=2048)),
}
for _t in ["seed_oss", "exaone4", "olmo3", "arcee", "apertus", "cohere2", "cohere"]:
    # the config class's defaults (the flagship widths transformers carries), 8 blocks
    FAMILY_SPECS[_t + "-8l"] = (CONFIG_MAPPING[_t], dict(architectures=[type(CONFIG_MAPPING[_t]()).__name__.replace("Config", "ForCausalLM")],
                                                         num_hidden_layers=8))
FAMILY_SPECS.update({
    "gpt_bigcode_tiny": (CONFIG_MAPPING["gpt_bigcode"], dict(architectures=["GPTBigCodeForCausalLM"], vocab_size=1000, n_embd=256,
                         n_layer=4, n_head=8, n_positions=512)),
    "gpt_bigcode-default": (CONFIG_MAPPING["gpt_bigcode"], dict(architectures=["GPTBigCodeForCausalLM"])),
    "opt_tiny": (CONFIG_MAPPING["opt"], dict(architectures=["OPTForCausalLM"], vocab_size=1000, hidden_size=256, ffn_dim=1024,
                 num_hidden_layers=4, num_attention_heads=8, max_position_embeddings=512, pad_token_id=1, bos_token_id=2,
                 eos_token_id=2)),
    "opt_tiny_post": (CONFIG_MAPPING["opt"], dict(architectures=["OPTForCausalLM"], vocab_size=1000, hidden_size=256, ffn_dim=1024,
                      num_hidden_layers=4, num_attention_heads=8, max_position_embeddings=512, do_layer_norm_before=False,
                      word_embed_proj_dim=128, pad_token_id=1, bos_token_id=2, eos_token_id=2)),
    "opt-default": (CONFIG_MAPPING["opt"], dict(architectures=["OPTForCausalLM"])),
    "llama4_text_tiny": (CONFIG_MAPPING["llama4_text"], dict(architectures=["Llama4ForCausalLM"], vocab_size=1000, hidden_size=256,
                         intermediate_size=128, intermediate_size_mlp=512, num_hidden_layers=4, num_attention_heads=8,
                         num_key_value_heads=2, head_dim=32, num_local_experts=4, num_experts_per_tok=1,
                         interleave_moe_layer_step=2, attention_chunk_size=64, max_position_embeddings=2048,
                         pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    "llama4_text_tiny_nochunk": (CONFIG_MAPPING["llama4_text"], dict(architectures=["Llama4ForCausalLM"], vocab_size=1000,
                                 hidden_size=256, intermediate_size=128, intermediate_size_mlp=512, num_hidden_layers=4,
                                 num_attention_heads=8, num_key_value_heads=2, head_dim=32, num_local_experts=4,
                                 num_experts_per_tok=1, interleave_moe_layer_step=1, attention_chunk_size=8192,
                                 max_position_embeddings=2048, pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    "llama4-scout-8l": (CONFIG_MAPPING["llama4_text"], dict(architectures=["Llama4ForCausalLM"], num_hidden_layers=8)),
})
FAMILY_SPECS.update({
    # Kimi-Linear: KDA (per-channel-decay gated delta rule) blocks, NoPE MLA at full_attention,
    # DeepSeek-style MoE after a first dense layer; and the class widths (Kimi-Linear-48B-A3B) in 8 blocks
    "roberta_tiny": (CONFIG_MAPPING["roberta"], dict(architectures=["RobertaForMaskedLM"], vocab_size=1000, hidden_size=256,
                     num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024, max_position_embeddings=514,
                     type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2)),
    "roberta_tiny_cls": (CONFIG_MAPPING["roberta"], dict(architectures=["RobertaForSequenceClassification"], vocab_size=1000,
                         hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
                         max_position_embeddings=514, type_vocab_size=1, pad_token_id=1, num_labels=3)),
    "xlm_roberta_tiny": (CONFIG_MAPPING["xlm-roberta"], dict(architectures=["XLMRobertaForMaskedLM"], vocab_size=1200,
                         hidden_size=192, num_hidden_layers=3, num_attention_heads=3, intermediate_size=768,
                         max_position_embeddings=514, type_vocab_size=1, pad_token_id=1)),
    "roberta-base": (CONFIG_MAPPING["roberta"], dict(architectures=["RobertaForMaskedLM"], vocab_size=50265,
                     max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-05, pad_token_id=1,
                     bos_token_id=0, eos_token_id=2)),
    "xlm-roberta-large": (CONFIG_MAPPING["xlm-roberta"], dict(architectures=["XLMRobertaForMaskedLM"], vocab_size=250002,
                          hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
                          max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-05, pad_token_id=1,
                          bos_token_id=0, eos_token_id=2)),
    "modernbert_tiny": (CONFIG_MAPPING["modernbert"], dict(architectures=["ModernBertForMaskedLM"], vocab_size=1000,
                        hidden_size=256, intermediate_size=384, num_hidden_layers=4, num_attention_heads=4,
                        local_attention=64, max_position_embeddings=1024, pad_token_id=0, bos_token_id=1,
                        eos_token_id=2, cls_token_id=1, sep_token_id=2)),
    "modernbert_tiny_cls": (CONFIG_MAPPING["modernbert"], dict(architectures=["ModernBertForSequenceClassification"],
                            vocab_size=1000, hidden_size=256, intermediate_size=384, num_hidden_layers=4,
                            num_attention_heads=4, local_attention=64, max_position_embeddings=1024, pad_token_id=0,
                            bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2, num_labels=3)),
    "modernbert-base": (CONFIG_MAPPING["modernbert"], dict(architectures=["ModernBertForMaskedLM"])),
    # DeBERTa-v2/v3 (#40): disentangled attention (content-to-position and position-to-content through
    # log-bucketed relative positions), v3's layout (shared keys, no absolute positions), v2's (a
    # convolution beside the first layer), and separate position projections with c2p only
    "deberta_v2_tiny": (CONFIG_MAPPING["deberta-v2"], dict(architectures=["DebertaV2ForMaskedLM"], vocab_size=1000,
                        hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
                        max_position_embeddings=512, relative_attention=True, position_buckets=32,
                        norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type="p2c|c2p",
                        position_biased_input=False, type_vocab_size=0, max_relative_positions=-1)),
    "deberta_v2_tiny_cls": (CONFIG_MAPPING["deberta-v2"], dict(architectures=["DebertaV2ForSequenceClassification"],
                            vocab_size=1000, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                            intermediate_size=1024, max_position_embeddings=512, relative_attention=True,
                            position_buckets=32, norm_rel_ebd="layer_norm", share_att_key=True,
                            pos_att_type="p2c|c2p", position_biased_input=False, type_vocab_size=0,
                            num_labels=3, problem_type="single_label_classification")),
    "deberta_v2_tiny_conv": (CONFIG_MAPPING["deberta-v2"], dict(architectures=["DebertaV2ForMaskedLM"], vocab_size=1000,
                             hidden_size=256, num_hidden_layers=3, num_attention_heads=4, intermediate_size=1024,
                             max_position_embeddings=512, relative_attention=True, position_buckets=32,
                             norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type="p2c|c2p",
                             position_biased_input=False, type_vocab_size=0, conv_kernel_size=3, conv_act="gelu")),
    "deberta_v2_tiny_c2p": (CONFIG_MAPPING["deberta-v2"], dict(architectures=["DebertaV2ForMaskedLM"], vocab_size=1000,
                            hidden_size=192, num_hidden_layers=3, num_attention_heads=3, intermediate_size=768,
                            max_position_embeddings=128, relative_attention=True, share_att_key=False,
                            pos_att_type="c2p", position_biased_input=True, type_vocab_size=2)),
    "deberta-v3-base": (CONFIG_MAPPING["deberta-v2"], dict(architectures=["DebertaV2ForMaskedLM"], vocab_size=128100,
                        hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                        max_position_embeddings=512, relative_attention=True, position_buckets=256,
                        norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type="p2c|c2p", layer_norm_eps=1e-7,
                        max_relative_positions=-1, position_biased_input=False, type_vocab_size=0)),
    "deberta-v3-large-cls": (CONFIG_MAPPING["deberta-v2"], dict(architectures=["DebertaV2ForSequenceClassification"],
                             vocab_size=128100, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                             intermediate_size=4096, max_position_embeddings=512, relative_attention=True,
                             position_buckets=256, norm_rel_ebd="layer_norm", share_att_key=True,
                             pos_att_type="p2c|c2p", layer_norm_eps=1e-7, max_relative_positions=-1,
                             position_biased_input=False, type_vocab_size=0, num_labels=2,
                             problem_type="single_label_classification")),
    "kimi_linear_tiny": (CONFIG_MAPPING["kimi_linear"], dict(architectures=["KimiLinearForCausalLM"], vocab_size=1000,
                         hidden_size=256, intermediate_size=512, moe_intermediate_size=64, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=64, qk_rope_head_dim=16,
                         qk_nope_head_dim=32, v_head_dim=32, num_local_experts=4, num_experts_per_tok=2,
                         linear_head_dim=32, linear_num_heads=4, linear_conv_kernel_dim=4,
                         layer_types=["linear_attention", "linear_attention", "full_attention", "linear_attention"],
                         max_position_embeddings=2048, pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    "kimi_linear-8l": (CONFIG_MAPPING["kimi_linear"], dict(architectures=["KimiLinearForCausalLM"], num_hidden_layers=8,
                       layer_types=["linear_attention"] * 3 + ["full_attention"] + ["linear_attention"] * 3 + ["full_attention"])),
    # LongCat-Flash: two MLA + two dense MLP sublayers per layer, a shortcut MoE with zero experts;
    # the class widths in 4 layers (8 sublayers)
    "longcat_flash_tiny": (CONFIG_MAPPING["longcat_flash"], dict(architectures=["LongcatFlashForCausalLM"], vocab_size=1000,
                           hidden_size=256, num_layers=2, num_attention_heads=4, ffn_hidden_size=512, q_lora_rank=64,
                           kv_lora_rank=32, qk_nope_head_dim=32, qk_rope_head_dim=16, head_dim=16, v_head_dim=32,
                           moe_topk=2, n_routed_experts=4, zero_expert_num=2, expert_ffn_hidden_size=64,
                           max_position_embeddings=2048, pad_token_id=0)),
    "longcat_flash-4l": (CONFIG_MAPPING["longcat_flash"], dict(architectures=["LongcatFlashForCausalLM"], num_layers=4)),
    # DeepSeek-V3.2: MLA with the DSA indexer (a no-grad top-k of index scores turned into a mask)
    "deepseek_v32_tiny": (CONFIG_MAPPING["deepseek_v32"], dict(architectures=["DeepseekV32ForCausalLM"], vocab_size=1000,
                          hidden_size=256, intermediate_size=512, moe_intermediate_size=64, num_hidden_layers=4,
                          num_attention_heads=4, num_key_value_heads=4, q_lora_rank=64, kv_lora_rank=32, qk_nope_head_dim=32,
                          qk_rope_head_dim=16, v_head_dim=32, n_routed_experts=4, num_experts_per_tok=2,
                          n_shared_experts=1, first_k_dense_replace=1, n_group=1, topk_group=1, index_n_heads=4,
                          index_head_dim=32, index_topk=64, max_position_embeddings=2048,
                          pad_token_id=0, bos_token_id=1, eos_token_id=2)),
    "deepseek_v32-4l": (CONFIG_MAPPING["deepseek_v32"], dict(architectures=["DeepseekV32ForCausalLM"], num_hidden_layers=4)),
    # convolutional backbones (group W, #40): ResNet (bottleneck / basic, stride in the 1x1 or the 3x3)
    # and ConvNeXt, the HF classes' own code, classification heads
    "resnet_tiny": (CONFIG_MAPPING["resnet"], dict(architectures=["ResNetForImageClassification"], embedding_size=16,
                    hidden_sizes=[32, 64, 128, 256], depths=[2, 1, 2, 1], layer_type="bottleneck", num_labels=10)),
    "resnet_tiny_basic": (CONFIG_MAPPING["resnet"], dict(architectures=["ResNetForImageClassification"], embedding_size=16,
                          hidden_sizes=[16, 32, 64, 128], depths=[2, 2, 1, 1], layer_type="basic", num_labels=10,
                          downsample_in_first_stage=True)),
    "resnet_tiny_v1": (CONFIG_MAPPING["resnet"], dict(architectures=["ResNetForImageClassification"], embedding_size=16,
                       hidden_sizes=[32, 64, 128, 256], depths=[1, 2, 1, 1], layer_type="bottleneck", num_labels=10,
                       downsample_in_bottleneck=True)),
    "resnet-50": (CONFIG_MAPPING["resnet"], dict(architectures=["ResNetForImageClassification"], embedding_size=64,
                  hidden_sizes=[256, 512, 1024, 2048], depths=[3, 4, 6, 3], layer_type="bottleneck", num_labels=1000)),
    "convnext_tiny": (CONFIG_MAPPING["convnext"], dict(architectures=["ConvNextForImageClassification"],
                      hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 2, 1], num_labels=10)),
    "convnext_tiny_noscale": (CONFIG_MAPPING["convnext"], dict(architectures=["ConvNextForImageClassification"],
                              hidden_sizes=[16, 32, 64, 128], depths=[1, 2, 1, 1], num_labels=10,
                              layer_scale_init_value=0.0, hidden_act="relu")),
    "convnext-base-224": (CONFIG_MAPPING["convnext"], dict(architectures=["ConvNextForImageClassification"],
                          hidden_sizes=[128, 256, 512, 1024], depths=[3, 3, 27, 3], num_labels=1000)),
    # Swin (group X, #40): windowed attention with a relative position bias (SDPA's memory-efficient
    # kernel, the bias padded as CUDA's front end pads it), shifted windows, padding, patch merging
    "swin_tiny": (CONFIG_MAPPING["swin"], dict(architectures=["SwinForImageClassification"], embed_dim=16,
                  depths=[2, 2, 2, 2], num_heads=[2, 2, 4, 4], window_size=4, num_labels=10)),
    "swin_tiny_w7": (CONFIG_MAPPING["swin"], dict(architectures=["SwinForImageClassification"], embed_dim=16,
                     depths=[2, 3, 2], num_heads=[2, 4, 4], window_size=7, image_size=112, num_labels=10,
                     drop_path_rate=0.0, use_absolute_embeddings=True, qkv_bias=False)),
    "swin-base-224": (CONFIG_MAPPING["swin"], dict(architectures=["SwinForImageClassification"], embed_dim=128,
                      depths=[2, 2, 18, 2], num_heads=[4, 8, 16, 32], window_size=7, num_labels=1000)),
    "swin-base-384": (CONFIG_MAPPING["swin"], dict(architectures=["SwinForImageClassification"], embed_dim=128,
                      depths=[2, 2, 18, 2], num_heads=[4, 8, 16, 32], window_size=12, image_size=384,
                      num_labels=1000)),
})
# ---- vision-language models (group Q, issue #40): AutoModelForImageTextToText ----
_QVL_TEXT = dict(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=8,
                 num_key_value_heads=4, max_position_embeddings=4096, bos_token_id=1, eos_token_id=2)
FAMILY_SPECS.update({
    # Qwen2.5-VL: window attention in the vision tower (window 112 px = 4x4 merged tokens), block 1 full
    "qwen2_5_vl_tiny": (CONFIG_MAPPING["qwen2_5_vl"], dict(
        architectures=["Qwen2_5_VLForConditionalGeneration"],
        text_config=dict(model_type="qwen2_5_vl_text", **_QVL_TEXT,
                         rope_parameters={"rope_type": "default", "mrope_section": [4, 6, 6], "rope_theta": 1000000.0}),
        vision_config=dict(model_type="qwen2_5_vl", depth=4, hidden_size=128, intermediate_size=256, num_heads=4,
                           out_hidden_size=256, patch_size=14, spatial_merge_size=2, temporal_patch_size=2,
                           window_size=112, fullatt_block_indexes=[1], tokens_per_second=2),
        vision_start_token_id=995, vision_end_token_id=996, image_token_id=997, video_token_id=998)),
    # Qwen3-VL: learned position grid (16x16) interpolated, deepstack features of blocks 0 and 1 added to
    # the first two decoder layers' outputs
    "qwen3_vl_tiny": (CONFIG_MAPPING["qwen3_vl"], dict(
        architectures=["Qwen3VLForConditionalGeneration"],
        text_config=dict(model_type="qwen3_vl_text", head_dim=32, **_QVL_TEXT,
                         rope_parameters={"rope_type": "default", "mrope_section": [6, 5, 5], "mrope_interleaved": True,
                                          "rope_theta": 5000000.0}),
        vision_config=dict(model_type="qwen3_vl", depth=3, hidden_size=128, intermediate_size=256, num_heads=4,
                           out_hidden_size=256, patch_size=16, spatial_merge_size=2, temporal_patch_size=2,
                           num_position_embeddings=256, deepstack_visual_indexes=[0, 1]),
        vision_start_token_id=995, vision_end_token_id=996, image_token_id=997, video_token_id=998)),
    # LLaVA: CLIP tower 112 px / 14 = 64 patch tokens (CLS dropped), features of the second-to-last layer
    "llava_tiny": (CONFIG_MAPPING["llava"], dict(
        architectures=["LlavaForConditionalGeneration"],
        text_config=dict(model_type="llama", **_QVL_TEXT, pad_token_id=0),
        vision_config=dict(model_type="clip_vision_model", hidden_size=128, intermediate_size=256, num_hidden_layers=3,
                           num_attention_heads=4, image_size=112, patch_size=14, projection_dim=128),
        image_token_index=999, image_seq_length=64, vision_feature_layer=-2, vision_feature_select_strategy="default")),
    # LLaVA-NeXT: the same CLIP tower (112 px here) cut into anyres tiles of 112 px beside a view of the whole
    "llava_next_tiny": (CONFIG_MAPPING["llava_next"], dict(
        architectures=["LlavaNextForConditionalGeneration"],
        text_config=dict(model_type="llama", **_QVL_TEXT, pad_token_id=0),
        vision_config=dict(model_type="clip_vision_model", hidden_size=128, intermediate_size=256, num_hidden_layers=3,
                           num_attention_heads=4, image_size=112, patch_size=14, projection_dim=128),
        image_grid_pinpoints=[[112, 224], [224, 112], [224, 224], [336, 112], [112, 336]],
        image_token_index=999, vision_feature_layer=-2, vision_feature_select_strategy="default")),
    # Qwen2.5-VL-7B's widths (tests/data/hub/qwen2.5-vl-7b/config.json) in 4 text layers and 4 vision blocks
    # (the last of the 4 attends over the whole image, as blocks 7/15/23/31 of 32 do)
    "qwen2.5-vl-7b-4l": (CONFIG_MAPPING["qwen2_5_vl"], dict(
        architectures=["Qwen2_5_VLForConditionalGeneration"],
        text_config=dict(model_type="qwen2_5_vl_text", vocab_size=152064, hidden_size=3584, intermediate_size=18944,
                         num_hidden_layers=4, num_attention_heads=28, num_key_value_heads=4, max_position_embeddings=128000,
                         rms_norm_eps=1e-06, sliding_window=32768, use_sliding_window=False, max_window_layers=28,
                         bos_token_id=151643, eos_token_id=151645,
                         rope_parameters={"rope_type": "default", "mrope_section": [16, 24, 24], "rope_theta": 1000000.0}),
        vision_config=dict(model_type="qwen2_5_vl", depth=4, hidden_size=1280, intermediate_size=3420, num_heads=16,
                           out_hidden_size=3584, patch_size=14, spatial_merge_size=2, temporal_patch_size=2,
                           window_size=112, fullatt_block_indexes=[3], tokens_per_second=2),
        vision_start_token_id=151652, vision_end_token_id=151653, image_token_id=151655, video_token_id=151656)),
})
CONFIG_SPECS.update(FAMILY_SPECS)


# MemTracker registers a gradient hook on every parameter its modules hold, which PyTorch refuses
# for one that does not require a gradient (ERNIE-4.5-MoE's frozen `e_score_correction_bias`):
# such a parameter never gets a gradient, so the hook is skipped.
def _only_if_grad(register):
    def f(self, hook):
        if not self.requires_grad:
            return types.SimpleNamespace(remove=lambda: None)
        return register(self, hook)
    return f


torch.Tensor.register_hook = _only_if_grad(torch.Tensor.register_hook)
torch.Tensor.register_post_accumulate_grad_hook = _only_if_grad(torch.Tensor.register_post_accumulate_grad_hook)


def write_configs(names=None):
    """Write configs/<name>.json for `names` (all when None); main writes only those its cases use."""
    os.makedirs(CONFIG_DIR, exist_ok=True)
    for name, (cls, kw) in CONFIG_SPECS.items():
        if names is not None and name not in names:
            continue
        txt = cls(**kw).to_json_string()
        path = os.path.join(CONFIG_DIR, name + ".json")
        old = open(path).read() if os.path.exists(path) else None
        if old != txt:
            with open(path, "w") as f:
                f.write(txt)


def load_config(name):
    cls = CONFIG_SPECS[name][0]
    return cls.from_json_file(os.path.join(CONFIG_DIR, name + ".json"))


# --------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------
def C(name, cfg, b, s, dtype, attn, mode="train", ckpt=False, backend="cpu-real", validate_fake=None):
    if validate_fake is None:
        validate_fake = backend == "cpu-real"
    return dict(case=name, config=cfg, batch=b, seq=s, dtype=dtype, attn=attn, mode=mode,
                grad_ckpt=ckpt, backend=backend, validate_fake=validate_fake)


def cases_A():
    A = [
        C("gpt2_tiny-fp32-eager-b2s128", "gpt2_tiny", 2, 128, "float32", "eager"),
        C("gpt2_tiny-fp32-sdpa-b2s128", "gpt2_tiny", 2, 128, "float32", "sdpa"),
        C("gpt2_tiny-bf16-eager-b2s256", "gpt2_tiny", 2, 256, "bfloat16", "eager"),
        C("gpt2_tiny-bf16-sdpa-b2s256", "gpt2_tiny", 2, 256, "bfloat16", "sdpa"),
        C("llama_tiny-fp32-eager-b2s128", "llama_tiny", 2, 128, "float32", "eager"),
        C("llama_tiny-fp32-sdpa-b2s128", "llama_tiny", 2, 128, "float32", "sdpa"),
        C("llama_tiny-bf16-eager-b1s512", "llama_tiny", 1, 512, "bfloat16", "eager"),
        C("llama_tiny-bf16-sdpa-b1s512", "llama_tiny", 1, 512, "bfloat16", "sdpa"),
        C("llama_tiny-bf16-sdpa-b4s64", "llama_tiny", 4, 64, "bfloat16", "sdpa"),
        C("llama_tiny-bf16-sdpa-b2s256-ckpt", "llama_tiny", 2, 256, "bfloat16", "sdpa", ckpt=True),
        C("llama_tiny-fp32-eager-b2s256-ckpt", "llama_tiny", 2, 256, "float32", "eager", ckpt=True),
        C("llama_tiny_gqa-fp32-eager-b2s128", "llama_tiny_gqa", 2, 128, "float32", "eager"),
        C("llama_tiny_gqa-bf16-eager-b2s256", "llama_tiny_gqa", 2, 256, "bfloat16", "eager"),
        C("llama_tiny_gqa-bf16-sdpa-b2s256", "llama_tiny_gqa", 2, 256, "bfloat16", "sdpa"),
        C("bert_tiny-fp32-eager-b2s128", "bert_tiny", 2, 128, "float32", "eager"),
        C("bert_tiny-fp32-sdpa-b2s128", "bert_tiny", 2, 128, "float32", "sdpa"),
        C("bert_tiny-bf16-eager-b4s64", "bert_tiny", 4, 64, "bfloat16", "eager"),
        C("mistral_tiny-bf16-sdpa-b2s256", "mistral_tiny", 2, 256, "bfloat16", "sdpa"),
        C("mistral_tiny-fp32-eager-b1s128", "mistral_tiny", 1, 128, "float32", "eager"),
        C("gpt2_tiny-fp32-sdpa-b2s128-infer", "gpt2_tiny", 2, 128, "float32", "sdpa", mode="infer"),
        C("llama_tiny_gqa-bf16-sdpa-b2s256-infer", "llama_tiny_gqa", 2, 256, "bfloat16", "sdpa", mode="infer"),
        C("llama_tiny-fp32-eager-b1s512-infer", "llama_tiny", 1, 512, "float32", "eager", mode="infer"),
    ]
    # the same small cases under CUDA semantics (fake tensors + CUDA dispatch emulation)
    emu = []
    for c in A:
        d = dict(c)
        d["case"] = c["case"] + "@cuda-emu"
        d["backend"] = "cuda-emu-fake"
        d["validate_fake"] = False
        emu.append(d)
    return A + emu


def cases_B():
    be = "cuda-emu-fake"
    return [
        C("gpt2-124M-fp32-eager-b8s1024", "gpt2", 8, 1024, "float32", "eager", backend=be),
        C("gpt2-124M-bf16-eager-b8s1024", "gpt2", 8, 1024, "bfloat16", "eager", backend=be),
        C("bert-large-fp32-eager-b8s512", "bert-large-uncased", 8, 512, "float32", "eager", backend=be),
        C("bert-large-fp32-sdpa-b8s512", "bert-large-uncased", 8, 512, "float32", "sdpa", backend=be),
        C("llama2-7b-bf16-sdpa-b1s4096", "llama2-7b", 1, 4096, "bfloat16", "sdpa", backend=be),
        C("llama2-7b-bf16-eager-b1s4096", "llama2-7b", 1, 4096, "bfloat16", "eager", backend=be),
        C("llama2-7b-bf16-sdpa-b1s4096-ckpt", "llama2-7b", 1, 4096, "bfloat16", "sdpa", ckpt=True, backend=be),
        C("llama3-8b-bf16-sdpa-b1s8192", "llama3-8b", 1, 8192, "bfloat16", "sdpa", backend=be),
        C("mistral-7b-bf16-sdpa-b2s2048", "mistral-7b", 2, 2048, "bfloat16", "sdpa", backend=be),
        C("mixtral-8x7b-bf16-sdpa-b1s2048", "mixtral-8x7b", 1, 2048, "bfloat16", "sdpa", backend=be),
        C("llama2-7b-bf16-sdpa-b1s4096-infer", "llama2-7b", 1, 4096, "bfloat16", "sdpa", mode="infer", backend=be),
        C("llama3-8b-bf16-sdpa-b1s8192-infer", "llama3-8b", 1, 8192, "bfloat16", "sdpa", mode="infer", backend=be),
        C("mistral-7b-bf16-sdpa-b2s2048-infer", "mistral-7b", 2, 2048, "bfloat16", "sdpa", mode="infer", backend=be),
        # contrast row: same as the llama2-7b sdpa case but with plain CPU dispatch semantics
        C("llama2-7b-bf16-sdpa-b1s4096@cpu-fake", "llama2-7b", 1, 4096, "bfloat16", "sdpa", backend="cpu-fake"),
    ]


def cases_F():
    """Tiny configs of the added families (cuda-emu-fake). Families whose HF code has no SDPA
    path (gemma2: softcapping; gpt_oss: attention sinks) get eager in place of sdpa."""
    be = "cuda-emu-fake"
    fams = ["qwen3_tiny", "qwen3_moe_tiny", "gemma_tiny", "gemma2_tiny", "gemma3_text_tiny", "gemma3_tiny",
            "phi3_tiny", "olmo2_tiny", "gpt_neox_tiny", "falcon_tiny", "falcon_tiny_nda", "starcoder2_tiny",
            "granite_tiny", "smollm3_tiny", "deepseek_v3_tiny", "deepseek_v2_tiny", "gpt_oss_tiny", "vit_tiny"]
    out = []
    for f in fams:
        sd = "eager" if f in NO_SDPA else "sdpa"
        s_bf, s_32 = (64, 64) if f.startswith("vit") else (256, 128)
        out += [C(f"{f}-bf16-{sd}-b2s{s_bf}", f, 2, s_bf, "bfloat16", sd, backend=be),
                C(f"{f}-fp32-eager-b2s{s_32}", f, 2, s_32, "float32", "eager", backend=be),
                C(f"{f}-bf16-{sd}-b2s{s_bf}-infer", f, 2, s_bf, "bfloat16", sd, mode="infer", backend=be)]
    for f in ("qwen3_tiny", "gemma2_tiny"):
        sd = "eager" if f in NO_SDPA else "sdpa"
        out.append(C(f"{f}-bf16-{sd}-b2s256-ckpt", f, 2, 256, "bfloat16", sd, ckpt=True, backend=be))
    return out


NO_SDPA = {"gemma2_tiny", "gpt_oss_tiny", "gemma-2-2b", "gpt-oss-20b", "gemma-2-9b"}


def cases_G():
    """Real-size configs of the added families, cheapest first (cuda-emu-fake)."""
    be = "cuda-emu-fake"
    fams = ["vit-base-patch16-224", "qwen3-0.6b", "pythia-1.4b", "olmo-2-1b", "gemma-3-1b", "gemma-2b",
            "granite-3.0-2b", "gemma-2-2b", "starcoder2-3b", "smollm3-3b", "phi-3-mini-4k", "gemma-3-4b",
            "falcon-7b", "deepseek-v2-lite", "gpt-oss-20b", "qwen3-30b-a3b", "deepseek-v3"]
    out = []
    for f in fams:
        sd = "eager" if f in NO_SDPA else "sdpa"
        if f.startswith("vit"):
            out += [C(f"{f}-bf16-{sd}-b32i224", f, 32, 224, "bfloat16", sd, backend=be),
                    C(f"{f}-bf16-{sd}-b32i224-infer", f, 32, 224, "bfloat16", sd, mode="infer", backend=be)]
            continue
        out += [C(f"{f}-bf16-{sd}-b1s2048", f, 1, 2048, "bfloat16", sd, backend=be),
                C(f"{f}-bf16-{sd}-b1s2048-infer", f, 1, 2048, "bfloat16", sd, mode="infer", backend=be)]
        if f in ("qwen3-0.6b", "gemma-2-2b"):
            out.append(C(f"{f}-bf16-{sd}-b1s2048-ckpt", f, 1, 2048, "bfloat16", sd, ckpt=True, backend=be))
    return out


def cases_H():
    """Real-size cases chosen after the estimator was written, measured to check it (cuda-emu-fake),
    roughly cheapest first; then the three added configs (gemma-2-9b, olmo-2-7b, falcon-40b)."""
    be = "cuda-emu-fake"
    return [
        C("olmo-2-1b-bf16-eager-b1s1024-infer", "olmo-2-1b", 1, 1024, "bfloat16", "eager", mode="infer", backend=be),
        C("qwen3-30b-a3b-bf16-sdpa-b2s512-infer", "qwen3-30b-a3b", 2, 512, "bfloat16", "sdpa", mode="infer", backend=be),
        C("falcon-7b-bf16-eager-b1s1024", "falcon-7b", 1, 1024, "bfloat16", "eager", backend=be),
        C("pythia-1.4b-bf16-sdpa-b4s512-ckpt", "pythia-1.4b", 4, 512, "bfloat16", "sdpa", ckpt=True, backend=be),
        C("qwen3-0.6b-bf16-eager-b1s1024", "qwen3-0.6b", 1, 1024, "bfloat16", "eager", backend=be),
        C("qwen3-0.6b-fp32-sdpa-b2s512", "qwen3-0.6b", 2, 512, "float32", "sdpa", backend=be),
        C("gpt-oss-20b-bf16-eager-b1s512-ckpt", "gpt-oss-20b", 1, 512, "bfloat16", "eager", ckpt=True, backend=be),
        C("phi-3-mini-4k-bf16-sdpa-b1s1024-ckpt", "phi-3-mini-4k", 1, 1024, "bfloat16", "sdpa", ckpt=True, backend=be),
        C("smollm3-3b-fp32-eager-b1s512", "smollm3-3b", 1, 512, "float32", "eager", backend=be),
        C("gemma-2-2b-bf16-eager-b1s1024-ckpt", "gemma-2-2b", 1, 1024, "bfloat16", "eager", ckpt=True, backend=be),
        C("gemma-3-1b-bf16-sdpa-b2s1024", "gemma-3-1b", 2, 1024, "bfloat16", "sdpa", backend=be),
        C("deepseek-v2-lite-bf16-sdpa-b1s1024-ckpt", "deepseek-v2-lite", 1, 1024, "bfloat16", "sdpa", ckpt=True, backend=be),
        # the added configs
        C("olmo-2-7b-bf16-sdpa-b1s1024-infer", "olmo-2-7b", 1, 1024, "bfloat16", "sdpa", mode="infer", backend=be),
        C("gemma-2-9b-bf16-eager-b1s1024-infer", "gemma-2-9b", 1, 1024, "bfloat16", "eager", mode="infer", backend=be),
        C("falcon-40b-bf16-sdpa-b1s1024-infer", "falcon-40b", 1, 1024, "bfloat16", "sdpa", mode="infer", backend=be),
        C("olmo-2-7b-bf16-sdpa-b1s1024", "olmo-2-7b", 1, 1024, "bfloat16", "sdpa", backend=be),
        C("falcon-40b-bf16-sdpa-b1s512", "falcon-40b", 1, 512, "bfloat16", "sdpa", backend=be),
        C("gemma-2-9b-bf16-eager-b1s1024", "gemma-2-9b", 1, 1024, "bfloat16", "eager", backend=be),
    ]


def cases_P():
    """Phi-1/1.5/2 (model_type "phi"), measured after the family's rules were written
    (cuda-emu-fake): tiny configs with residual and embedding dropout and with qk_layernorm,
    then real-size phi-1.5 and phi-2."""
    be = "cuda-emu-fake"
    return [
        C("phi_tiny-bf16-sdpa-b2s256", "phi_tiny", 2, 256, "bfloat16", "sdpa", backend=be),
        C("phi_tiny-fp32-eager-b2s128", "phi_tiny", 2, 128, "float32", "eager", backend=be),
        C("phi_tiny-bf16-sdpa-b2s256-infer", "phi_tiny", 2, 256, "bfloat16", "sdpa", mode="infer", backend=be),
        C("phi_tiny-bf16-sdpa-b2s256-ckpt", "phi_tiny", 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be),
        C("phi_tiny_qkln-bf16-sdpa-b2s256", "phi_tiny_qkln", 2, 256, "bfloat16", "sdpa", backend=be),
        C("phi_tiny_qkln-fp32-eager-b2s128", "phi_tiny_qkln", 2, 128, "float32", "eager", backend=be),
        C("phi-1.5-bf16-sdpa-b1s1024", "phi-1.5", 1, 1024, "bfloat16", "sdpa", backend=be),
        C("phi-1.5-bf16-sdpa-b1s1024-infer", "phi-1.5", 1, 1024, "bfloat16", "sdpa", mode="infer", backend=be),
        C("phi-1.5-fp32-eager-b1s512", "phi-1.5", 1, 512, "float32", "eager", backend=be),
        C("phi-2-bf16-sdpa-b1s1024", "phi-2", 1, 1024, "bfloat16", "sdpa", backend=be),
        C("phi-2-bf16-sdpa-b2s512-ckpt", "phi-2", 2, 512, "bfloat16", "sdpa", ckpt=True, backend=be),
    ]


def cases_O():
    """GPT-BigCode and OPT (#39): multi-query attention in GPT-2's layout; OPT pre- and post-norm, with
    narrower embeddings (`word_embed_proj_dim`); the class defaults' dropouts."""
    be = "cuda-emu-fake"
    t = "gpt_bigcode_tiny"
    return [C(t + "-bf16-sdpa-b2s256", t, 2, 256, "bfloat16", "sdpa", backend=be),
            C(t + "-fp32-eager-b2s128", t, 2, 128, "float32", "eager", backend=be),
            C(t + "-bf16-sdpa-b2s256-infer", t, 2, 256, "bfloat16", "sdpa", mode="infer", backend=be),
            C(t + "-bf16-sdpa-b2s256-ckpt", t, 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be),
            C("gpt_bigcode-default-bf16-sdpa-b1s1024", "gpt_bigcode-default", 1, 1024, "bfloat16", "sdpa", backend=be),
            C("gpt_bigcode-default-bf16-sdpa-b1s1024-infer", "gpt_bigcode-default", 1, 1024, "bfloat16", "sdpa", mode="infer", backend=be)] + [
        C(t + "-bf16-sdpa-b2s256", t, 2, 256, "bfloat16", "sdpa", backend=be) for t in ["opt_tiny", "opt_tiny_post"]] + [
        C(t + "-fp32-eager-b2s128", t, 2, 128, "float32", "eager", backend=be) for t in ["opt_tiny", "opt_tiny_post"]] + [
        C(t + "-bf16-sdpa-b2s256-infer", t, 2, 256, "bfloat16", "sdpa", mode="infer", backend=be) for t in ["opt_tiny", "opt_tiny_post"]] + [
        C("opt_tiny-bf16-sdpa-b2s256-ckpt", "opt_tiny", 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be),
        C("opt-default-bf16-sdpa-b1s1024", "opt-default", 1, 1024, "bfloat16", "sdpa", backend=be),
        C("opt-default-bf16-sdpa-b1s1024-infer", "opt-default", 1, 1024, "bfloat16", "sdpa", mode="infer", backend=be)]


def cases_L():
    """Llama 4 text (#39): tiny configs with chunked attention shorter than the sequence, NoPE
    layers with temperature tuning, the L2 q/k norm and dense-over-all-experts MoE layers, and
    without chunking; the config class's widths (Scout) in 8 blocks."""
    be = "cuda-emu-fake"
    out = []
    for t in ["llama4_text_tiny", "llama4_text_tiny_nochunk"]:
        out += [C(t + "-bf16-sdpa-b2s256", t, 2, 256, "bfloat16", "sdpa", backend=be),
                C(t + "-fp32-eager-b2s128", t, 2, 128, "float32", "eager", backend=be),
                C(t + "-bf16-sdpa-b2s256-infer", t, 2, 256, "bfloat16", "sdpa", mode="infer", backend=be)]
    out += [C("llama4_text_tiny-bf16-sdpa-b2s256-ckpt", "llama4_text_tiny", 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be),
            C("llama4-scout-8l-bf16-sdpa-b1s1024", "llama4-scout-8l", 1, 1024, "bfloat16", "sdpa", backend=be),
            C("llama4-scout-8l-bf16-sdpa-b1s2048-infer", "llama4-scout-8l", 1, 2048, "bfloat16", "sdpa", mode="infer", backend=be)]
    return out


def cases_N():
    """2025 dense decoders (#39), measured after their family files were written (cuda-emu-fake):
    tiny configs (train bf16 SDPA b2 s256, train fp32 eager b2 s128, inference), and the config
    classes' widths in 8 blocks (train bf16 SDPA b1 s1024, inference b1 s2048)."""
    be = "cuda-emu-fake"
    out = []
    for f in ["seed_oss", "exaone4", "olmo3", "arcee", "apertus"]:
        t = f + "_tiny"
        out += [C(t + "-bf16-sdpa-b2s256", t, 2, 256, "bfloat16", "sdpa", backend=be),
                C(t + "-fp32-eager-b2s128", t, 2, 128, "float32", "eager", backend=be),
                C(t + "-bf16-sdpa-b2s256-infer", t, 2, 256, "bfloat16", "sdpa", mode="infer", backend=be),
                C(f + "-8l-bf16-sdpa-b1s1024", f + "-8l", 1, 1024, "bfloat16", "sdpa", backend=be),
                C(f + "-8l-bf16-sdpa-b1s2048-infer", f + "-8l", 1, 2048, "bfloat16", "sdpa", mode="infer", backend=be)]
    for f in ["cohere2", "cohere"]:
        t = f + "_tiny"
        out += [C(t + "-bf16-sdpa-b2s256", t, 2, 256, "bfloat16", "sdpa", backend=be),
                C(t + "-fp32-eager-b2s128", t, 2, 128, "float32", "eager", backend=be),
                C(t + "-bf16-sdpa-b2s256-infer", t, 2, 256, "bfloat16", "sdpa", mode="infer", backend=be),
                C(t + "-bf16-sdpa-b2s256-ckpt", t, 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be),
                C(f + "-8l-bf16-sdpa-b1s1024", f + "-8l", 1, 1024, "bfloat16", "sdpa", backend=be),
                C(f + "-8l-bf16-sdpa-b1s2048-infer", f + "-8l", 1, 2048, "bfloat16", "sdpa", mode="infer", backend=be)]
    out += [C("lfm2_tiny-bf16-sdpa-b2s256", "lfm2_tiny", 2, 256, "bfloat16", "sdpa", backend=be),
            C("lfm2_tiny-fp32-eager-b2s128", "lfm2_tiny", 2, 128, "float32", "eager", backend=be),
            C("lfm2_tiny-bf16-sdpa-b2s256-infer", "lfm2_tiny", 2, 256, "bfloat16", "sdpa", mode="infer", backend=be),
            C("lfm2_tiny-bf16-sdpa-b2s256-ckpt", "lfm2_tiny", 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be),
            C("lfm2-1.2b-8l-bf16-sdpa-b1s1024", "lfm2-1.2b-8l", 1, 1024, "bfloat16", "sdpa", backend=be),
            C("lfm2-1.2b-8l-bf16-sdpa-b1s2048-infer", "lfm2-1.2b-8l", 1, 2048, "bfloat16", "sdpa", mode="infer",
              backend=be)]
    out += [C("cohere_tiny_qkn-bf16-sdpa-b2s256", "cohere_tiny_qkn", 2, 256, "bfloat16", "sdpa", backend=be),
            C("cohere_tiny_qkn-fp32-eager-b2s128", "cohere_tiny_qkn", 2, 128, "float32", "eager", backend=be),
            C("cohere_tiny_qkn-bf16-sdpa-b2s256-infer", "cohere_tiny_qkn", 2, 256, "bfloat16", "sdpa", mode="infer",
              backend=be)]
    out += [C("exaone4_tiny-bf16-sdpa-b2s256-ckpt", "exaone4_tiny", 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be),
            C("arcee_tiny-bf16-sdpa-b2s256-ckpt", "arcee_tiny", 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be)]
    # BLOOM runs its own (eager) attention whatever is asked; b1 reads q/k/v as views of the fused
    # projection, b2 copies them
    t = "bloom_tiny"
    out += [C(t + "-bf16-eager-b2s256", t, 2, 256, "bfloat16", "eager", backend=be),
            C(t + "-fp32-eager-b2s128", t, 2, 128, "float32", "eager", backend=be),
            C(t + "-bf16-eager-b1s256", t, 1, 256, "bfloat16", "eager", backend=be),
            C(t + "-bf16-eager-b2s256-infer", t, 2, 256, "bfloat16", "eager", mode="infer", backend=be),
            C(t + "-bf16-eager-b2s256-ckpt", t, 2, 256, "bfloat16", "eager", ckpt=True, backend=be),
            C("bloom-560m-8l-bf16-eager-b1s1024", "bloom-560m-8l", 1, 1024, "bfloat16", "eager", backend=be),
            C("bloom-560m-8l-bf16-eager-b1s2048-infer", "bloom-560m-8l", 1, 2048, "bfloat16", "eager", mode="infer",
              backend=be)]
    return out


def cases_S():
    """State-space and linear-attention mixers (#39), transformers' PyTorch paths (cuda-emu-fake)."""
    be = "cuda-emu-fake"
    out = []
    for t in ["mamba2_tiny", "mamba2_tiny_nb"]:
        out += [C(t + "-bf16-b2s256", t, 2, 256, "bfloat16", "eager", backend=be),
                C(t + "-bf16-b2s200", t, 2, 200, "bfloat16", "eager", backend=be),
                C(t + "-fp32-b2s128", t, 2, 128, "float32", "eager", backend=be),
                C(t + "-bf16-b2s256-infer", t, 2, 256, "bfloat16", "eager", mode="infer", backend=be),
                C(t + "-bf16-b2s256-ckpt", t, 2, 256, "bfloat16", "eager", ckpt=True, backend=be)]
    t = "bamba_tiny"
    out += [C(t + "-bf16-sdpa-b2s256", t, 2, 256, "bfloat16", "sdpa", backend=be),
            C(t + "-bf16-sdpa-b2s200", t, 2, 200, "bfloat16", "sdpa", backend=be),
            C(t + "-fp32-eager-b2s128", t, 2, 128, "float32", "eager", backend=be),
            C(t + "-bf16-sdpa-b1s64", t, 1, 64, "bfloat16", "sdpa", backend=be),
            C(t + "-bf16-sdpa-b2s256-ckpt", t, 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be)]
    out += [C("bamba-9b-8l-bf16-sdpa-b1s2048", "bamba-9b-8l", 1, 2048, "bfloat16", "sdpa", backend=be),
            C("mamba2-7b-8l-bf16-b1s2048", "mamba2-7b-8l", 1, 2048, "bfloat16", "eager", backend=be),
            C("mamba2-7b-8l-bf16-b2s1000", "mamba2-7b-8l", 2, 1000, "bfloat16", "eager", backend=be)]
    t = "granitemoehybrid_tiny"
    out += [C(t + "-bf16-sdpa-b2s256", t, 2, 256, "bfloat16", "sdpa", backend=be),
            C(t + "-fp32-eager-b2s128", t, 2, 128, "float32", "eager", backend=be),
            C(t + "-bf16-sdpa-b2s256-ckpt", t, 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be)]
    t = "zamba2_tiny"
    out += [C(t + "-bf16-sdpa-b2s256", t, 2, 256, "bfloat16", "sdpa", backend=be),
            C(t + "-fp32-eager-b2s128", t, 2, 128, "float32", "eager", backend=be),
            C(t + "-bf16-sdpa-b2s256-ckpt", t, 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be),
            C(t + "-bf16-sdpa-b2s256-infer", t, 2, 256, "bfloat16", "sdpa", mode="infer", backend=be),
            C("zamba2-2.7b-8l-bf16-sdpa-b1s2048", "zamba2-2.7b-8l", 1, 2048, "bfloat16", "sdpa", backend=be)]
    for t in ["m2x_a", "m2x_b", "m2x_c"]:
        out += [C(t + "-bf16-b1s2048", t, 1, 2048, "bfloat16", "eager", backend=be),
                C(t + "-bf16-b2s1024", t, 2, 1024, "bfloat16", "eager", backend=be),
                C(t + "-fp32-b1s1024", t, 1, 1024, "float32", "eager", backend=be)]
    # inference (the harness hooks no parameter there: recurrent states measured)
    for t, attn in [("bamba_tiny", "sdpa"), ("granitemoehybrid_tiny", "sdpa"), ("nemotron_h_tiny", "sdpa"),
                    ("falcon_h1_tiny", "sdpa"), ("mamba_tiny", "eager"), ("jamba_tiny", "sdpa"),
                    ("qwen3_next_tiny", "sdpa"), ("lfm2_tiny", "sdpa")]:
        out += [C(t + "-bf16-b2s256-infer", t, 2, 256, "bfloat16", attn, mode="infer", backend=be)]
    out += [C("mamba2-7b-8l-bf16-b1s2048-infer", "mamba2-7b-8l", 1, 2048, "bfloat16", "eager", mode="infer", backend=be),
            C("bamba-9b-8l-bf16-sdpa-b1s2048-infer", "bamba-9b-8l", 1, 2048, "bfloat16", "sdpa", mode="infer", backend=be)]
    t = "qwen3_next_tiny"
    out += [C(t + "-bf16-sdpa-b2s256", t, 2, 256, "bfloat16", "sdpa", backend=be),
            C(t + "-bf16-sdpa-b2s200", t, 2, 200, "bfloat16", "sdpa", backend=be),
            C(t + "-fp32-eager-b2s128", t, 2, 128, "float32", "eager", backend=be),
            C(t + "-bf16-sdpa-b2s256-ckpt", t, 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be)]
    out += [C("mamba_tiny-bf16-b2s256", "mamba_tiny", 2, 256, "bfloat16", "eager", backend=be),
            C("mamba_tiny-bf16-b1s128", "mamba_tiny", 1, 128, "bfloat16", "eager", backend=be),
            C("mamba_tiny-fp32-b2s64", "mamba_tiny", 2, 64, "float32", "eager", backend=be),
            C("mamba_tiny-bf16-b2s256-ckpt", "mamba_tiny", 2, 256, "bfloat16", "eager", ckpt=True, backend=be)]
    t = "jamba_tiny"
    out += [C(t + "-bf16-sdpa-b2s256", t, 2, 256, "bfloat16", "sdpa", backend=be),
            C(t + "-bf16-sdpa-b1s128", t, 1, 128, "bfloat16", "sdpa", backend=be),
            C(t + "-fp32-eager-b2s64", t, 2, 64, "float32", "eager", backend=be),
            C(t + "-bf16-sdpa-b2s256-ckpt", t, 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be)]
    for t in ["falcon_h1_tiny", "falcon_h1_tiny_norm"]:
        out += [C(t + "-bf16-sdpa-b2s256", t, 2, 256, "bfloat16", "sdpa", backend=be),
                C(t + "-fp32-eager-b2s128", t, 2, 128, "float32", "eager", backend=be),
                C(t + "-bf16-sdpa-b2s256-ckpt", t, 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be)]
    for t in ["nemotron_h_tiny", "nemotron_h_tiny_fp32res"]:
        out += [C(t + "-bf16-sdpa-b2s256", t, 2, 256, "bfloat16", "sdpa", backend=be),
                C(t + "-fp32-eager-b2s128", t, 2, 128, "float32", "eager", backend=be),
                C(t + "-bf16-sdpa-b2s256-ckpt", t, 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be)]
    return out


def cases_K():
    """Kimi-Linear and LongCat-Flash (#39), transformers' PyTorch paths (cuda-emu-fake)."""
    be = "cuda-emu-fake"
    out = []
    for t in ["kimi_linear_tiny", "longcat_flash_tiny"]:
        out += [C(t + "-bf16-sdpa-b2s256", t, 2, 256, "bfloat16", "sdpa", backend=be),
                C(t + "-bf16-sdpa-b2s200", t, 2, 200, "bfloat16", "sdpa", backend=be),
                C(t + "-fp32-eager-b2s128", t, 2, 128, "float32", "eager", backend=be),
                C(t + "-bf16-sdpa-b2s256-ckpt", t, 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be),
                C(t + "-bf16-sdpa-b2s256-infer", t, 2, 256, "bfloat16", "sdpa", mode="infer", backend=be)]
    t = "deepseek_v32_tiny"
    out += [C(t + "-bf16-sdpa-b2s256", t, 2, 256, "bfloat16", "sdpa", backend=be),
            C(t + "-fp32-eager-b2s128", t, 2, 128, "float32", "eager", backend=be),
            C(t + "-bf16-sdpa-b2s256-ckpt", t, 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be),
            C(t + "-bf16-sdpa-b2s256-infer", t, 2, 256, "bfloat16", "sdpa", mode="infer", backend=be)]
    out += [C("deepseek_v32-4l-bf16-sdpa-b1s1024", "deepseek_v32-4l", 1, 1024, "bfloat16", "sdpa", backend=be),
            C("deepseek_v32-4l-bf16-sdpa-b1s1024-infer", "deepseek_v32-4l", 1, 1024, "bfloat16", "sdpa", mode="infer", backend=be)]
    out += [C("kimi_linear-8l-bf16-sdpa-b1s2048", "kimi_linear-8l", 1, 2048, "bfloat16", "sdpa", backend=be),
            C("kimi_linear-8l-bf16-sdpa-b1s2048-infer", "kimi_linear-8l", 1, 2048, "bfloat16", "sdpa", mode="infer", backend=be),
            C("longcat_flash-4l-bf16-sdpa-b1s1024", "longcat_flash-4l", 1, 1024, "bfloat16", "sdpa", backend=be),
            C("longcat_flash-4l-bf16-sdpa-b1s1024-infer", "longcat_flash-4l", 1, 1024, "bfloat16", "sdpa", mode="infer", backend=be)]
    return out


def cases_R():
    """Encoders (#40): RoBERTa and XLM-R masked LM, a RoBERTa classifier (cuda-emu-fake)."""
    be = "cuda-emu-fake"
    out = []
    for t in ["roberta_tiny", "xlm_roberta_tiny", "roberta_tiny_cls"]:
        out += [C(t + "-bf16-sdpa-b2s256", t, 2, 256, "bfloat16", "sdpa", backend=be),
                C(t + "-fp32-eager-b2s128", t, 2, 128, "float32", "eager", backend=be),
                C(t + "-bf16-sdpa-b2s256-ckpt", t, 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be),
                C(t + "-bf16-sdpa-b2s256-infer", t, 2, 256, "bfloat16", "sdpa", mode="infer", backend=be)]
    out += [C("roberta-base-bf16-sdpa-b8s512", "roberta-base", 8, 512, "bfloat16", "sdpa", backend=be),
            C("roberta-base-fp32-sdpa-b4s256", "roberta-base", 4, 256, "float32", "sdpa", backend=be),
            C("roberta-base-bf16-sdpa-b8s512-infer", "roberta-base", 8, 512, "bfloat16", "sdpa", mode="infer", backend=be),
            C("xlm-roberta-large-bf16-sdpa-b4s512", "xlm-roberta-large", 4, 512, "bfloat16", "sdpa", backend=be),
            C("xlm-roberta-large-bf16-sdpa-b4s512-ckpt", "xlm-roberta-large", 4, 512, "bfloat16", "sdpa", ckpt=True, backend=be),
            C("xlm-roberta-large-bf16-sdpa-b4s512-infer", "xlm-roberta-large", 4, 512, "bfloat16", "sdpa", mode="infer", backend=be)]
    t = "modernbert_tiny"
    out += [C(t + "-bf16-sdpa-b2s256", t, 2, 256, "bfloat16", "sdpa", backend=be),
            C(t + "-fp32-eager-b2s128", t, 2, 128, "float32", "eager", backend=be),
            C(t + "-bf16-sdpa-b2s48", t, 2, 48, "bfloat16", "sdpa", backend=be),
            C(t + "-bf16-sdpa-b2s256-ckpt", t, 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be),
            C(t + "-bf16-sdpa-b2s256-infer", t, 2, 256, "bfloat16", "sdpa", mode="infer", backend=be)]
    t = "modernbert_tiny_cls"
    out += [C(t + "-bf16-sdpa-b2s256", t, 2, 256, "bfloat16", "sdpa", backend=be),
            C(t + "-fp32-eager-b2s128", t, 2, 128, "float32", "eager", backend=be)]
    out += [C("modernbert-base-bf16-sdpa-b4s1024", "modernbert-base", 4, 1024, "bfloat16", "sdpa", backend=be),
            C("modernbert-base-bf16-sdpa-b4s1024-infer", "modernbert-base", 4, 1024, "bfloat16", "sdpa", mode="infer", backend=be)]
    return out


def cases_I():
    """Vision backbones by image size (#40): ViT at its own and an interpolated size, DINOv2
    (layer scale, cls + mean-patch classifier, SwiGLU variant) at two sizes (cuda-emu-fake)."""
    be = "cuda-emu-fake"
    out = []
    for t, sizes in [("vit_tiny", (64, 96)), ("dinov2_tiny", (56, 98)), ("dinov2_tiny_swiglu", (56, 84))]:
        for i in sizes:
            out += [C(f"{t}-bf16-sdpa-b2i{i}", t, 2, i, "bfloat16", "sdpa", backend=be),
                    C(f"{t}-fp32-eager-b2i{i}", t, 2, i, "float32", "eager", backend=be),
                    C(f"{t}-bf16-sdpa-b2i{i}-infer", t, 2, i, "bfloat16", "sdpa", mode="infer", backend=be)]
        out.append(C(f"{t}-bf16-sdpa-b2i{sizes[1]}-ckpt", t, 2, sizes[1], "bfloat16", "sdpa", ckpt=True, backend=be))
    t = "siglip_tiny"
    for i in (64, 96):
        out += [C(f"{t}-bf16-sdpa-b2i{i}", t, 2, i, "bfloat16", "sdpa", backend=be),
                C(f"{t}-fp32-eager-b2i{i}", t, 2, i, "float32", "eager", backend=be),
                C(f"{t}-bf16-sdpa-b2i{i}-infer", t, 2, i, "bfloat16", "sdpa", mode="infer", backend=be)]
    out.append(C(f"{t}-bf16-sdpa-b2i96-ckpt", t, 2, 96, "bfloat16", "sdpa", ckpt=True, backend=be))
    out += [C("siglip-so400m-bf16-sdpa-b8i384", "siglip-so400m", 8, 384, "bfloat16", "sdpa", backend=be),
            C("siglip-so400m-bf16-sdpa-b8i384-infer", "siglip-so400m", 8, 384, "bfloat16", "sdpa", mode="infer", backend=be),
            C("siglip-so400m-bf16-sdpa-b4i512", "siglip-so400m", 4, 512, "bfloat16", "sdpa", backend=be)]
    out += [C("vit-base-patch16-224-bf16-sdpa-b8i384", "vit-base-patch16-224", 8, 384, "bfloat16", "sdpa", backend=be),
            C("dinov2-large-bf16-sdpa-b16i224", "dinov2-large", 16, 224, "bfloat16", "sdpa", backend=be),
            C("dinov2-large-bf16-sdpa-b4i448", "dinov2-large", 4, 448, "bfloat16", "sdpa", backend=be),
            C("dinov2-large-bf16-sdpa-b16i224-infer", "dinov2-large", 16, 224, "bfloat16", "sdpa", mode="infer", backend=be)]
    return out


def cases_M():
    """2025 MoE decoders (#39), measured after their family files were written (cuda-emu-fake):
    per family train bf16 sdpa b2 s256, train fp32 eager b2 s128, inference bf16 sdpa b2 s256,
    and checkpointing on two."""
    be = "cuda-emu-fake"
    out = []
    for f in ["olmoe_tiny", "glm4_tiny", "glm4_moe_tiny", "minimax_m2_tiny", "ernie4_5_tiny", "ernie4_5_moe_tiny",
              "phimoe_tiny", "granitemoe_tiny"]:
        out += [C(f + "-bf16-sdpa-b2s256", f, 2, 256, "bfloat16", "sdpa", backend=be),
                C(f + "-fp32-eager-b2s128", f, 2, 128, "float32", "eager", backend=be),
                C(f + "-bf16-sdpa-b2s256-infer", f, 2, 256, "bfloat16", "sdpa", mode="infer", backend=be)]
    for f in ["olmoe-1b-7b", "glm-4-9b", "glm-4.5-air", "minimax-m2-8l", "ernie-4.5-21b-a3b", "granite-3.0-1b-a400m"]:
        out += [C(f + "-bf16-sdpa-b1s1024", f, 1, 1024, "bfloat16", "sdpa", backend=be),
                C(f + "-bf16-sdpa-b1s2048-infer", f, 1, 2048, "bfloat16", "sdpa", mode="infer", backend=be)]
    out += [C("glm-4.5-air-bf16-sdpa-b1s2048-ckpt", "glm-4.5-air", 1, 2048, "bfloat16", "sdpa", ckpt=True, backend=be)]
    out += [C("phi-3.5-moe-8l-bf16-sdpa-b1s1024", "phi-3.5-moe-8l", 1, 1024, "bfloat16", "sdpa", backend=be),
            C("phi-3.5-moe-8l-bf16-sdpa-b1s2048-infer", "phi-3.5-moe-8l", 1, 2048, "bfloat16", "sdpa", mode="infer",
              backend=be)]
    out += [C("phimoe_tiny_jitter-bf16-sdpa-b2s256", "phimoe_tiny_jitter", 2, 256, "bfloat16", "sdpa", backend=be),
            C("phimoe_tiny-bf16-sdpa-b2s256-ckpt", "phimoe_tiny", 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be)]
    out += [C("glm4_moe_tiny-bf16-sdpa-b2s256-ckpt", "glm4_moe_tiny", 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be),
            C("olmoe_tiny-bf16-sdpa-b2s256-ckpt", "olmoe_tiny", 2, 256, "bfloat16", "sdpa", ckpt=True, backend=be)]
    return out


def VC(name, cfg, b, images, image_hw, text_tokens, dtype, attn, mode="train", ckpt=False, backend="cuda-emu-fake"):
    """A vision-language case: `images` per sample of `image_hw` (h, w) pixels, `text_tokens` per sample
    (the image start/end markers counted as text); the decoder's `seq` follows from the config."""
    c = C(name, cfg, b, None, dtype, attn, mode=mode, ckpt=ckpt, backend=backend, validate_fake=False)
    c.update(vlm=True, images=images, image_hw=list(image_hw), text_tokens=text_tokens)
    return c


def cases_U():
    """DeBERTa-v2/v3 (#40): masked LM and a classifier; DeBERTa runs its own attention (eager, whatever
    `attn_implementation` says). Tiny v3-style, v2-style (the first layer's convolution), c2p-only with
    separate position projections; DeBERTa-v3-base and -large at their class widths (cuda-emu-fake)."""
    be = "cuda-emu-fake"
    out = []
    for t in ["deberta_v2_tiny", "deberta_v2_tiny_cls", "deberta_v2_tiny_conv", "deberta_v2_tiny_c2p"]:
        s = 96 if t == "deberta_v2_tiny_c2p" else 256
        out += [C(f"{t}-bf16-b2s{s}", t, 2, s, "bfloat16", "eager", backend=be),
                C(t + "-fp32-b2s100", t, 2, 100, "float32", "eager", backend=be),
                C(f"{t}-bf16-b2s{s}-ckpt", t, 2, s, "bfloat16", "eager", ckpt=True, backend=be),
                C(f"{t}-bf16-b2s{s}-infer", t, 2, s, "bfloat16", "eager", mode="infer", backend=be)]
    out += [C("deberta-v3-base-bf16-b8s512", "deberta-v3-base", 8, 512, "bfloat16", "eager", backend=be),
            C("deberta-v3-base-fp32-b4s256", "deberta-v3-base", 4, 256, "float32", "eager", backend=be),
            C("deberta-v3-base-bf16-b8s512-infer", "deberta-v3-base", 8, 512, "bfloat16", "eager", mode="infer", backend=be),
            C("deberta-v3-large-cls-bf16-b4s512", "deberta-v3-large-cls", 4, 512, "bfloat16", "eager", backend=be),
            C("deberta-v3-large-cls-bf16-b4s512-ckpt", "deberta-v3-large-cls", 4, 512, "bfloat16", "eager", ckpt=True, backend=be)]
    return out


def cases_W():
    """Convolutional backbones (#40): ResNet (bottleneck, basic, stride in the 1x1) and ConvNeXt (with and
    without layer scale) at two image sizes (one that no stride divides), ResNet-50 and ConvNeXt-B at
    class widths (cuda-emu-fake). No attention: `attn` is eager."""
    be = "cuda-emu-fake"
    out = []
    for t in ["resnet_tiny", "resnet_tiny_basic", "resnet_tiny_v1", "convnext_tiny", "convnext_tiny_noscale"]:
        for i in (64, 100):
            out += [C(f"{t}-bf16-b2i{i}", t, 2, i, "bfloat16", "eager", backend=be),
                    C(f"{t}-fp32-b2i{i}", t, 2, i, "float32", "eager", backend=be),
                    C(f"{t}-bf16-b2i{i}-infer", t, 2, i, "bfloat16", "eager", mode="infer", backend=be)]
    for t in ["resnet-50", "convnext-base-224"]:
        out += [C(f"{t}-bf16-b32i224", t, 32, 224, "bfloat16", "eager", backend=be),
                C(f"{t}-fp32-b16i224", t, 16, 224, "float32", "eager", backend=be),
                C(f"{t}-bf16-b8i384", t, 8, 384, "bfloat16", "eager", backend=be),
                C(f"{t}-bf16-b32i224-infer", t, 32, 224, "bfloat16", "eager", mode="infer", backend=be)]
    return out


def cases_X():
    """Swin (#40): a tiny window-4 Swin at two image sizes (one padded at every stage and merge), a
    window-7 one with absolute position embeddings, no qkv bias and no stochastic depth, and
    Swin-B at its class widths, window 7 at 224 and window 12 at 384 (cuda-emu-fake, SDPA)."""
    be = "cuda-emu-fake"
    out = []
    for t, sizes in [("swin_tiny", (100, 128)), ("swin_tiny_w7", (112,))]:
        for i in sizes:
            out += [C(f"{t}-bf16-b2i{i}", t, 2, i, "bfloat16", "sdpa", backend=be),
                    C(f"{t}-fp32-b2i{i}", t, 2, i, "float32", "sdpa", backend=be),
                    C(f"{t}-bf16-b2i{i}-infer", t, 2, i, "bfloat16", "sdpa", mode="infer", backend=be)]
    out += [C("swin-base-224-bf16-b32i224", "swin-base-224", 32, 224, "bfloat16", "sdpa", backend=be),
            C("swin-base-224-fp32-b16i224", "swin-base-224", 16, 224, "float32", "sdpa", backend=be),
            C("swin-base-224-bf16-b32i224-infer", "swin-base-224", 32, 224, "bfloat16", "sdpa", mode="infer", backend=be),
            C("swin-base-384-bf16-b8i384", "swin-base-384", 8, 384, "bfloat16", "sdpa", backend=be)]
    return out


def cases_Q():
    """Vision-language models (#40), AutoModelForImageTextToText: tiny Qwen2.5-VL (window attention in
    the tower, mrope), Qwen3-VL (deepstack features added to the first decoder layers) and LLaVA (CLIP
    tower, a 2-layer projector), fed what their processors make (pixel patches with image_grid_thw and
    mm_token_type_ids / full images, image placeholder tokens in input_ids). Training freezes the vision
    tower and the projector (AdamW over the language model, embeddings and lm_head only). Per model:
    bf16 SDPA b2 with 2 images and 128 text tokens, fp32 eager b1 with 1 image, inference, checkpointing;
    then Qwen2.5-VL-7B's widths in 4 text layers / 4 vision blocks, b1 with 2 images of 448x448.
    Backend cuda-emu-fake with the index bookkeeping on real CPU tensors (see `vlm_index_ops`)."""
    be = "cuda-emu-fake"
    out = []
    for t, hw in [("qwen2_5_vl_tiny", (224, 224)), ("qwen3_vl_tiny", (224, 224)), ("llava_tiny", (112, 112))]:
        out += [VC(f"{t}-bf16-sdpa-b2-2img-t128", t, 2, 2, hw, 128, "bfloat16", "sdpa", backend=be),
                VC(f"{t}-fp32-eager-b1-1img-t128", t, 1, 1, hw, 128, "float32", "eager", backend=be),
                VC(f"{t}-bf16-sdpa-b2-2img-t128-infer", t, 2, 2, hw, 128, "bfloat16", "sdpa", mode="infer", backend=be),
                VC(f"{t}-bf16-sdpa-b2-2img-t128-ckpt", t, 2, 2, hw, 128, "bfloat16", "sdpa", ckpt=True, backend=be)]
    t = "llava_next_tiny"
    for hw in [(224, 224), (200, 330)]:
        n = f"{hw[0]}x{hw[1]}"
        out += [VC(f"{t}-bf16-sdpa-b2-2img{n}-t128", t, 2, 2, hw, 128, "bfloat16", "sdpa", backend=be),
                VC(f"{t}-fp32-eager-b1-1img{n}-t128", t, 1, 1, hw, 128, "float32", "eager", backend=be),
                VC(f"{t}-bf16-sdpa-b2-2img{n}-t128-infer", t, 2, 2, hw, 128, "bfloat16", "sdpa", mode="infer", backend=be)]
    t = "gemma3_vlm_tiny"
    out += [VC(f"{t}-bf16-sdpa-b2-2img-t128", t, 2, 2, (128, 128), 128, "bfloat16", "sdpa", backend=be),
            VC(f"{t}-fp32-eager-b1-1img-t128", t, 1, 1, (128, 128), 128, "float32", "eager", backend=be),
            VC(f"{t}-bf16-sdpa-b2-2img-t128-infer", t, 2, 2, (128, 128), 128, "bfloat16", "sdpa", mode="infer", backend=be),
            VC(f"{t}-bf16-sdpa-b2-2img-t128-ckpt", t, 2, 2, (128, 128), 128, "bfloat16", "sdpa", ckpt=True, backend=be)]
    t = "mistral3_tiny"
    out += [VC(f"{t}-bf16-sdpa-b2-2img-t128", t, 2, 2, (112, 168), 128, "bfloat16", "sdpa", backend=be),
            VC(f"{t}-fp32-eager-b1-1img-t128", t, 1, 1, (224, 112), 128, "float32", "eager", backend=be),
            VC(f"{t}-bf16-sdpa-b2-2img-t128-infer", t, 2, 2, (112, 168), 128, "bfloat16", "sdpa", mode="infer", backend=be),
            VC(f"{t}-bf16-sdpa-b2-2img-t128-ckpt", t, 2, 2, (112, 168), 128, "bfloat16", "sdpa", ckpt=True, backend=be)]
    t = "mistral-small-3.1-4l"
    out += [VC(f"{t}-bf16-sdpa-b1-2img1008x756-t256", t, 1, 2, (1008, 756), 256, "bfloat16", "sdpa", backend=be),
            VC(f"{t}-bf16-sdpa-b1-2img1008x756-t256-infer", t, 1, 2, (1008, 756), 256, "bfloat16", "sdpa", mode="infer",
               backend=be)]
    t = "gemma-3-4b-6l"
    out += [VC(f"{t}-bf16-sdpa-b1-2img-t256", t, 1, 2, (896, 896), 256, "bfloat16", "sdpa", backend=be),
            VC(f"{t}-bf16-sdpa-b1-2img-t256-infer", t, 1, 2, (896, 896), 256, "bfloat16", "sdpa", mode="infer", backend=be)]
    t = "qwen2.5-vl-7b-4l"
    out += [VC(f"{t}-bf16-sdpa-b1-2img448-t256", t, 1, 2, (448, 448), 256, "bfloat16", "sdpa", backend=be),
            VC(f"{t}-bf16-sdpa-b1-2img448-t256-infer", t, 1, 2, (448, 448), 256, "bfloat16", "sdpa", mode="infer",
               backend=be)]
    return out

# --------------------------------------------------------------------------------------
# CUDA dispatch emulation for fake CPU tensors
# --------------------------------------------------------------------------------------
SDPA_LOG = collections.Counter()


# CUDA's SDPA front end (attention.cpp `preprocess_mask`) pads an additive mask whose strides are not
# multiples of 8 (`pad_bias<8>`: a new storage, 8 - n % 8 more columns, sliced back) and expands it to
# (b, h, s_q, s_k) before the memory-efficient kernel, which keeps it. Groups measured before X
# passed the mask as it was (their masks were aligned or broadcast); X on measure with it.
PREPROCESS_MASK = True


def preprocess_mask(mask, query, key):
    aligned = all(mask.stride(i) % 8 == 0 for i in range(mask.dim() - 1)) and mask.stride(-1) == 1
    if not aligned:
        n = mask.shape[-1]
        mask = F.pad(mask, (0, 8 - n % 8))[..., :n]
    return mask.expand(query.shape[0], query.shape[1], query.shape[2], key.shape[2])


@contextlib.contextmanager
def cuda_dispatch_emulation():
    """Make the two CPU-vs-CUDA dispatch decisions that change saved tensors behave as on
    an sm80+ GPU:
      * F.dropout(train, 0<p<1): CUDA's at::dropout calls at::native_dropout, which saves
        a bool mask. CPU's at::dropout saves a float noise tensor of the input dtype.
      * F.scaled_dot_product_attention: on CUDA the dispatcher picks flash (fp16/bf16,
        no explicit mask, head_dim<=256, %8) or mem-efficient (fp32, or masks; GQA/MQA too),
        else math. On CPU it picks the CPU flash kernel or math (with dropout).
    The aten kernels called here are the real ones with their real autograd formulas."""
    orig_dropout = F.dropout
    orig_sdpa = F.scaled_dot_product_attention

    def dropout(input, p=0.5, training=True, inplace=False):
        if training and 0.0 < p < 1.0 and input.numel() > 0:
            out, _mask = torch.native_dropout(input, p, True)
            if inplace:
                with torch.no_grad():
                    input.copy_(out)
                return input
            return out
        return orig_dropout(input, p, training, inplace)

    def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        hd = query.shape[-1]
        half = query.dtype in (torch.float16, torch.bfloat16)
        needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))
        if (query.dim() == 4 and half and attn_mask is None and hd <= 256 and hd % 8 == 0
                and value.shape[-1] == hd):
            SDPA_LOG["flash"] += 1
            return torch.ops.aten._scaled_dot_product_flash_attention(
                query, key, value, dropout_p, is_causal, False, scale=scale)[0]
        # CUDA's memory-efficient kernel takes grouped/multi-query K/V as they are (supports_gqa and
        # supports_mqa are true off ROCm in sdp_utils.cpp), so GQA does not force the math kernel.
        if query.dim() == 4 and hd % (8 if half else 4) == 0:
            bias = attn_mask
            if bias is not None and bias.dtype == torch.bool:
                bias = torch.zeros(bias.shape, dtype=query.dtype, device=query.device).masked_fill(
                    bias.logical_not(), float("-inf"))
            if bias is not None and PREPROCESS_MASK:
                bias = preprocess_mask(bias, query, key)
            SDPA_LOG["mem_efficient"] += 1
            return torch.ops.aten._scaled_dot_product_efficient_attention(
                query, key, value, bias, needs_grad, dropout_p, is_causal, scale=scale)[0]
        SDPA_LOG["math"] += 1
        return orig_sdpa(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                         is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)

    F.dropout = dropout
    F.scaled_dot_product_attention = sdpa
    orig_calc = _mt_mod._WeakRefInfo._calculate_mem_consumed

    def calc(self):  # CUDA caching allocator granularity for every storage
        mem = self.size * self.element_size
        return math.ceil(mem / 512) * 512

    _mt_mod._WeakRefInfo._calculate_mem_consumed = calc
    try:
        yield
    finally:
        F.dropout = orig_dropout
        F.scaled_dot_product_attention = orig_sdpa
        _mt_mod._WeakRefInfo._calculate_mem_consumed = orig_calc


@contextlib.contextmanager
def hf_not_tracing_under_fake():
    """transformers.masking_utils treats FakeTensors as 'being traced' and then refuses to
    drop the causal mask (it materializes a (b,1,s,s) bool mask instead of passing
    is_causal=True to SDPA). Real tensors never take that path, so under FakeTensorMode we
    make the mask code ask only the non-tensor tracing questions (dynamo/jit/stream capture).
    Likewise the packed-sequence detector (reads position_ids values) is answered with
    "not packed", which is what it returns for the arange position_ids these runs use.
    Validated by the cpu-fake == cpu-real activation check on the small SDPA cases."""
    import transformers.masking_utils as mu
    orig = mu.is_tracing
    orig_packed = mu.find_packed_sequence_indices
    mu.is_tracing = lambda tensor=None: orig(None)
    mu.find_packed_sequence_indices = lambda position_ids: None
    try:
        yield
    finally:
        mu.is_tracing = orig
        mu.find_packed_sequence_indices = orig_packed


# --------------------------------------------------------------------------------------
# Saved-tensor recorder
# --------------------------------------------------------------------------------------
def skey(t):
    """Identity of the storage a tensor views (StorageImpl pointer): works for real,
    meta and fake tensors alike (fake/meta data_ptrs are all 0)."""
    return t.untyped_storage()._cdata


class Producers(TorchDispatchMode):
    """Remembers, for every storage created by an aten op during the forward, which op
    created it and in which module (a view's output shares its input's storage and is
    not a producer)."""

    def __init__(self, where):
        super().__init__()
        self.where = where      # callable -> current module label
        self.by_storage = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        ins = set()
        for a in list(args) + list((kwargs or {}).values()):
            if isinstance(a, torch.Tensor):
                ins.add(skey(a))
            elif isinstance(a, (list, tuple)):
                ins.update(skey(x) for x in a if isinstance(x, torch.Tensor))
        outs = out if isinstance(out, (list, tuple)) else (out,)
        for o in outs:
            if isinstance(o, torch.Tensor):
                k = skey(o)
                if k not in ins:
                    self.by_storage[k] = (func.overloadpacket.__name__, self.where())
        return out


class SavedRecorder:
    def __init__(self, model, inputs):
        self.excl = {}
        for p in model.parameters():
            self.excl[skey(p)] = "param"
        for bname, bf in model.named_buffers():
            self.excl.setdefault(skey(bf), "buffer")
        self.inputs = {skey(t) for t in inputs}
        self.records = {}
        self.keep = []           # strong refs so storage pointers cannot be reused
        self.excluded = {}
        self.stack = []
        self.names = {m: n for n, m in model.named_modules()}
        self.phase = "pre"
        self.producers = Producers(self.where)
        self.n_pack = 0
        self._handles = []
        base = model.base_model

        def pre(mod, args):
            self.stack.append(mod)

        def post(mod, args, out):
            while self.stack and self.stack.pop() is not mod:
                pass

        def base_pre(mod, args):
            self.phase = "body"

        def base_post(mod, args, out):
            self.phase = "head_loss"

        self._handles += [torch.nn.modules.module.register_module_forward_pre_hook(pre),
                          torch.nn.modules.module.register_module_forward_hook(post),
                          base.register_forward_pre_hook(base_pre),
                          base.register_forward_hook(base_post)]

    def pack(self, t):
        self.n_pack += 1
        st = t.untyped_storage()
        k = st._cdata
        if k in self.excl:
            if k not in self.excluded:
                self.excluded[k] = (self.excl[k], st.nbytes())
            return t
        if k not in self.records:
            op, pmod = self.producers.by_storage.get(k, ("<external>", "<external>"))
            self.records[k] = dict(nbytes=st.nbytes(), dtype=str(t.dtype).replace("torch.", ""),
                                   module=pmod, saver=self.where(), op=op, phase=self.phase,
                                   shape=list(t.shape), is_input=k in self.inputs)
            self.keep.append(st)
        return t

    def where(self):
        mod = self.stack[-1] if self.stack else None
        if mod is None:
            return "<top>"
        name = self.names.get(mod)
        if name is None:  # a module built inside forward (e.g. BERT's CrossEntropyLoss())
            return f"<{type(mod).__name__}>"
        return re.sub(r"\.\d+(\.|$)", r".*\1", name) or "<top>"

    @staticmethod
    def unpack(t):
        return t

    @contextlib.contextmanager
    def active(self):
        with torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack), self.producers:
            yield

    def close(self):
        for h in self._handles:
            h.remove()
        self.keep = []
        self.producers.by_storage = {}

    def summary(self, n_layers):
        recs = list(self.records.values())
        tot = sum(r["nbytes"] for r in recs)
        by_dtype = collections.Counter()
        by_phase = collections.Counter()
        by_module = collections.Counter()
        by_op = collections.Counter()
        by_mod_op = collections.Counter()
        for r in recs:
            by_mod_op[f"{r['module']} :: {r['op']} :: {r['dtype']}"] += r["nbytes"]
            by_dtype[r["dtype"]] += r["nbytes"]
            by_phase[r["phase"]] += r["nbytes"]
            by_module[r["module"]] += r["nbytes"]
            by_op[r["op"]] += r["nbytes"]
        top = sorted(recs, key=lambda r: -r["nbytes"])[:int(os.environ.get("VRAM_TOP", "8"))]
        return dict(
            activation_saved_bytes=tot,
            activation_by_dtype=dict(by_dtype),
            activation_by_phase=dict(by_phase),
            activation_head_loss_bytes=by_phase.get("head_loss", 0),
            activation_input_ids_bytes=sum(r["nbytes"] for r in recs if r["is_input"]),
            activation_by_module=dict(sorted(by_module.items(), key=lambda kv: -kv[1])),
            activation_by_op=dict(sorted(by_op.items(), key=lambda kv: -kv[1])),
            activation_by_module_op=dict(sorted(by_mod_op.items(), key=lambda kv: -kv[1])),
            activation_n_storages=len(recs),
            saved_param_bytes_excluded=sum(v[1] for v in self.excluded.values() if v[0] == "param"),
            saved_buffer_bytes_excluded=sum(v[1] for v in self.excluded.values() if v[0] == "buffer"),
            top_saved=[dict(nbytes=r["nbytes"], dtype=r["dtype"], shape=r["shape"], module=r["module"],
                            op=r["op"], saver=r["saver"]) for r in top],
        )


# --------------------------------------------------------------------------------------
# One case
# --------------------------------------------------------------------------------------
def uniq_storage_bytes(tensors):
    seen = {}
    for t in tensors:
        if t is None:
            continue
        seen[skey(t)] = t.untyped_storage().nbytes()
    return sum(seen.values())


def kv_cache_bytes(pkv):
    ts = []
    if pkv is None:
        return None
    if hasattr(pkv, "layers"):
        for layer in pkv.layers:
            for attr in ("keys", "values"):
                v = getattr(layer, attr, None)
                if isinstance(v, torch.Tensor):
                    ts.append(v)
            # the recurrent layers' states (transformers 5's LinearAttentionLayer)
            for attr in ("conv_states", "recurrent_states"):
                d = getattr(layer, attr, None)
                if isinstance(d, dict):
                    ts += [v for v in d.values() if isinstance(v, torch.Tensor)]
    else:
        for kv in pkv:
            ts += [x for x in kv if isinstance(x, torch.Tensor)]
    return uniq_storage_bytes(ts)


def _kv_tensors(pkv):
    ts = []
    if pkv is None:
        return ts
    if hasattr(pkv, "layers"):
        for layer in pkv.layers:
            for attr in ("keys", "values"):
                v = getattr(layer, attr, None)
                if isinstance(v, torch.Tensor):
                    ts.append(v)
    else:
        for kv in pkv:
            ts += [x for x in kv if isinstance(x, torch.Tensor)]
    return ts


def kv_cache_logical_bytes(pkv):
    """numel*itemsize of the cached key/value views (a sliding layer's cache is a view of the last
    window-1 positions of the full prefill K/V, whose storage kv_cache_bytes counts)."""
    return sum(t.numel() * t.element_size() for t in _kv_tensors(pkv))


def kv_cache_shapes(pkv):
    shapes = [list(t.shape) for t in _kv_tensors(pkv)]
    uniq = []
    for sh in shapes:
        if sh not in uniq:
            uniq.append(sh)
    return uniq


@contextlib.contextmanager
def no_trunc_normal_init():
    """torch.nn.init.trunc_normal_ loops on `mask.any()` (data dependent: fails on fake tensors);
    used by e.g. SigLIP's init. Init values do not change any byte count, so under fake
    tensors it is made a no-op."""
    import torch.nn.init as tinit
    orig = tinit._no_grad_trunc_normal_
    tinit._no_grad_trunc_normal_ = lambda tensor, *a, **k: tensor
    try:
        yield
    finally:
        tinit._no_grad_trunc_normal_ = orig


ENCODERS = ("bert", "roberta", "xlm-roberta", "modernbert", "deberta-v2")
VISION = ("vit", "dinov2", "siglip")
CNNS = ("resnet", "convnext")
WINDOWED = ("swin",)  # no class token, tokens per stage: no "vit_tokens"
VISION = VISION + CNNS + WINDOWED


def is_classifier(cfg):
    return any(a.endswith("ForSequenceClassification") for a in (getattr(cfg, "architectures", None) or []))


def build(case, cfg):
    if case["backend"] != "cpu-real":
        with no_trunc_normal_init(), real_linspace():
            return _build(case, cfg)
    return _build(case, cfg)


@contextlib.contextmanager
def real_linspace():
    """ConvNeXt's `__init__` turns `torch.linspace(...)` into Python floats (its drop-path rates):
    under fake tensors that is data dependent, so the schedule is computed as a real tensor."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    orig = torch.linspace

    class Floats(list):  # what `.split(depths)` and `.tolist()` give, computed for real
        def split(self, sizes):
            out, i = [], 0
            for n in sizes:
                out.append(Floats(self[i:i + n]))
                i += n
            return out

        def tolist(self):
            return list(self)

    def lin(*a, **k):
        with unset_fake_temporarily():
            return Floats(orig(*a, **k).tolist())
    torch.linspace = lin
    try:
        yield
    finally:
        torch.linspace = orig


def _build(case, cfg):
    dtype = getattr(torch, case["dtype"])
    if cfg.model_type == "bert":
        model = BertForMaskedLM._from_config(cfg, attn_implementation=case["attn"], dtype=dtype)
    elif cfg.model_type == "vit":
        model = ViTForImageClassification._from_config(cfg, attn_implementation=case["attn"], dtype=dtype)
    elif cfg.model_type in VISION:
        model = AutoModelForImageClassification.from_config(cfg, attn_implementation=case["attn"], dtype=dtype)
    elif cfg.model_type in ENCODERS and is_classifier(cfg):
        model = AutoModelForSequenceClassification.from_config(cfg, attn_implementation=case["attn"], dtype=dtype)
    elif cfg.model_type in ENCODERS:
        model = AutoModelForMaskedLM.from_config(cfg, attn_implementation=case["attn"], dtype=dtype)
    else:
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation=case["attn"], dtype=dtype)
    keep32 = set(getattr(model, "_keep_in_fp32_modules", None) or []) | set(getattr(model, "_keep_in_fp32_modules_strict", None) or [])
    for n, p in model.named_parameters():
        assert p.dtype == dtype or any(k in n for k in keep32), (n, p.dtype, dtype)
    return model


def mem_snapshot_peak(mt):
    snap = mt.get_tracker_snapshot("peak")
    total = 0
    breakdown = collections.Counter()
    for dev, d in snap.items():
        for k, v in d.items():
            if k == "Total":
                total += v
            else:
                breakdown[str(k).split(".")[-1]] += v
    return total, dict(breakdown)


def run_case(case):
    if case.get("vlm"):
        return run_case_vlm(case)
    cfg = load_config(case["config"])
    backend = case["backend"]
    fake = backend != "cpu-real"
    b, s = case["batch"], case["seq"]
    tcfg = cfg.get_text_config()
    is_vit = cfg.model_type in VISION
    vocab = None if is_vit else tcfg.vocab_size
    L = getattr(tcfg, "num_hidden_layers", None) or sum(getattr(tcfg, "depths", None) or [0])
    out = dict(case=case["case"], config_file=f"configs/{case['config']}.json", batch=b, seq=s,
               dtype=case["dtype"], attn=case["attn"], mode=case["mode"], grad_ckpt=case["grad_ckpt"],
               backend=backend)
    vis = getattr(cfg, "vision_config", None) or cfg  # SigLIP's numbers sit in its vision_config
    if is_vit:  # "seq" is the image side; tokens = (image/patch)^2 (+ 1 CLS but SigLIP's)
        out["image_size"] = s
        out["num_labels"] = cfg.num_labels
        if cfg.model_type not in CNNS + WINDOWED:
            out["patch_size"] = vis.patch_size
            out["vit_tokens"] = (s // vis.patch_size) ** 2 + (0 if cfg.model_type == "siglip" else 1)
    # ViT refuses another size unless asked to interpolate its positions (DINOv2 always does)
    interp = (dict(interpolate_pos_encoding=True)
              if cfg.model_type in ("vit", "siglip") and s != vis.image_size else {})
    if interp:
        out["interpolate_pos_encoding"] = True
    torch.manual_seed(0)
    SDPA_LOG.clear()
    fmode = FakeTensorMode() if fake else contextlib.nullcontext()
    emu = cuda_dispatch_emulation() if backend == "cuda-emu-fake" else contextlib.nullcontext()
    notrace = hf_not_tracing_under_fake() if fake else contextlib.nullcontext()
    t0 = time.time()
    with fmode, emu, notrace:
        model = build(case, cfg)
        params = list(model.parameters())
        out["n_params"] = sum(p.numel() for p in params)
        out["param_bytes"] = uniq_storage_bytes(params)
        _pbd = collections.Counter()
        for p in params:
            _pbd[str(p.dtype).replace("torch.", "")] += p.numel() * p.element_size()
        out["param_bytes_by_dtype"] = dict(_pbd)
        out["n_param_tensors"] = len(params)
        out["buffer_bytes"] = uniq_storage_bytes(list(model.buffers()))
        if is_vit:
            ids = torch.randn(b, vis.num_channels, s, s, dtype=getattr(torch, case["dtype"]))
        else:
            ids = torch.randint(0, vocab, (b, s))
        is_clm = cfg.model_type not in VISION + ENCODERS
        if case["mode"] == "infer":
            model.eval()
            # nothing trains: torch's ModTracker hooks a kernel-layer module whose inputs include
            # a parameter, which under no_grad has no gradient function to hook (its assertion)
            for p_ in model.parameters():
                p_.requires_grad_(False)
            with torch.no_grad():
                mt = MemTracker()
                mt.track_external(model, ids)
                with mt:
                    if is_vit:
                        o = model(pixel_values=ids, **interp)
                        out["kv_cache_bytes"] = None
                    elif not is_clm:
                        o = model(input_ids=ids)
                        out["kv_cache_bytes"] = None
                    else:
                        o = model(input_ids=ids, use_cache=True)
                        out["kv_cache_bytes"] = kv_cache_bytes(o.past_key_values)
                        out["kv_cache_logical_bytes"] = kv_cache_logical_bytes(o.past_key_values)
                        out["kv_cache_layer_shapes"] = kv_cache_shapes(o.past_key_values)
                out["peak_bytes"], out["peak_breakdown"] = mem_snapshot_peak(mt)
                out["peak_note"] = "forward only, no_grad, full logits kept"
                del o
            for k in ("grad_bytes", "optimizer_state_bytes", "optimizer_step_tensor_bytes",
                      "activation_saved_bytes", "activation_by_dtype"):
                out[k] = None
        else:
            model.train()
            if case["grad_ckpt"]:
                model.gradient_checkpointing_enable()
            if is_vit:
                labels = torch.randint(0, cfg.num_labels, (b,))
                kw = dict(pixel_values=ids, labels=labels, **interp)
            elif is_classifier(cfg):
                labels = torch.randint(0, cfg.num_labels, (b,))
                kw = dict(input_ids=ids, labels=labels)
            else:
                labels = ids.clone()
                kw = dict(input_ids=ids, labels=labels)
            if is_clm:
                kw["use_cache"] = False
            opt = torch.optim.AdamW(params, lr=1e-4,
                                    foreach=True if backend == "cuda-emu-fake" else None)
            rec = SavedRecorder(model, [ids, labels])
            mt1 = MemTracker()
            mt1.track_external(model, opt, ids, labels)
            with mt1:
                with rec.active():
                    res = model(**kw)
                loss = res.loss
                rec_sum = rec.summary(L)
                rec.close()
                out.update(rec_sum)
                if cfg.model_type == "siglip":
                    # SiglipForImageClassification reads the tokens' mean; the pooling head still runs,
                    # but nothing reads its output, so what it saved is freed when the forward returns
                    out["activation_freed_in_forward_bytes"] = sum(
                        v for k, v in rec_sum["activation_by_module"].items() if k.startswith("vision_model.head"))
                out["logits_bytes_returned"] = res.logits.untyped_storage().nbytes()
                del res
                loss.backward()
                del loss
                out["grad_bytes"] = uniq_storage_bytes([p.grad for p in params])
                # parameters that get no gradient (e.g. Gemma3's vision tower on a text-only batch):
                # AdamW skips them, so they have no optimizer state either
                nog = [p for p in params if p.grad is None]
                out["params_without_grad"] = sum(p.numel() for p in nog)
                out["params_without_grad_bytes"] = uniq_storage_bytes(nog)
                opt.step()
                st = opt.state
                out["optimizer_state_bytes"] = uniq_storage_bytes(
                    [st[p][k] for p in params if p in st for k in ("exp_avg", "exp_avg_sq")])
                out["optimizer_step_tensor_bytes"] = uniq_storage_bytes([st[p]["step"] for p in params if p in st])
                out["n_param_tensors_with_state"] = sum(1 for p in params if p in st)
                opt.zero_grad(set_to_none=True)
            out["peak_bytes_first_step"], _ = mem_snapshot_peak(mt1)
            del mt1
            # steady-state step: optimizer states already exist
            mt2 = MemTracker()
            mt2.track_external(model, opt, ids, labels)
            with mt2:
                res = model(**kw)
                loss = res.loss
                del res
                loss.backward()
                del loss
                opt.step()
                opt.zero_grad(set_to_none=True)
            out["peak_bytes"], out["peak_breakdown"] = mem_snapshot_peak(mt2)
            out["peak_note"] = ("MemTracker peak over a 2nd full step (fwd+bwd+AdamW.step+zero_grad), "
                                "optimizer states pre-existing; model outputs freed before backward")
            out["kv_cache_bytes"] = None
            del mt2, opt
        out["sdpa_kernels"] = dict(SDPA_LOG) if backend == "cuda-emu-fake" else None
        del model, params
    out["seconds"] = round(time.time() - t0, 2)
    out["torch_version"] = torch.__version__
    out["transformers_version"] = transformers.__version__
    gc.collect()
    return out


# --------------------------------------------------------------------------------------
# Vision-language models (group Q)
# --------------------------------------------------------------------------------------
VLM_TYPES = ("qwen2_5_vl", "qwen3_vl", "llava", "llava_next")


class RealIndexOps(TorchDispatchMode):
    """Under FakeTensorMode, lets the VLMs' index bookkeeping run on real CPU tensors.

    The Qwen-VL vision towers and the placeholder logic read values: cu_seqlens / window lengths
    (`.tolist()` to split q/k/v per image or window), per-image token counts from image_grid_thw,
    `torch.unique_consecutive` of the window boundaries, the placeholder-count check, and boolean-mask
    indexing (Qwen3-VL's deepstack `hidden_states[visual_pos_masks, :]`, masked_scatter's backward).
    Fake tensors refuse all of these. So input_ids, mm_token_type_ids and image_grid_thw are real
    (small integer) tensors; an op whose tensor inputs are all real runs for real (fake mode unset);
    a real bool mask indexing a fake tensor is expanded to its nonzero() long indices, as ATen does
    itself before the index kernel (autograd, above this mode, still saves the bool mask it was given).
    Everything else (weights, activations, pixel_values) stays fake: no byte count changes, and the
    real tensors are seen by MemTracker like any other (they are tiny)."""

    BOOL_INDEX_OPS = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily
        import torch.utils._pytree as pytree
        kwargs = kwargs or {}
        aten = torch.ops.aten
        ts = [a for a in pytree.tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
        if ts and not any(isinstance(t, FakeTensor) for t in ts):
            with unset_fake_temporarily():
                return func(*args, **kwargs)

        def real_mask(i):
            return isinstance(i, torch.Tensor) and not isinstance(i, FakeTensor) and i.dtype in (torch.bool, torch.uint8)

        if func in (aten.index.Tensor, aten.index_put.default, aten.index_put_.default, aten._index_put_impl_.default,
                    aten._unsafe_index_put.default):
            idx = args[1]
            if any(real_mask(i) for i in idx):
                new = []
                with unset_fake_temporarily():
                    for i in idx:
                        new += list(i.nonzero(as_tuple=True)) if real_mask(i) else [i]
                args = (args[0], new) + tuple(args[2:])
                VLM_LOG[f"bool-index->nonzero {func.overloadpacket.__name__}"] += 1
        elif func is aten.masked_select.default and real_mask(args[1]):
            x, m = args[0], args[1]
            shape = torch.broadcast_shapes(x.shape, m.shape)
            with unset_fake_temporarily():
                idx = m.expand(shape).nonzero(as_tuple=True)
            VLM_LOG["masked_select->index"] += 1
            return aten.index.Tensor(x.expand(shape), list(idx))
        return func(*args, **kwargs)


VLM_LOG = collections.Counter()


@contextlib.contextmanager
def vlm_real_index_helpers():
    """Two groups of the Qwen-VL models' functions compute index tensors from values by Python loops
    (`tolist`, `item`, `torch.tensor(...)`, `unique_consecutive`, boolean indexing of aranges) and run here
    on real tensors, their inputs being real:
      * transformers.vision_utils' `get_vision_*` helpers (window index and window boundaries,
        cu_seqlens, rotary position ids, Qwen3-VL's position-grid interpolation taps and weights), which
        take only image_grid_thw and config scalars: transformers made them standalone so that they can
        be precomputed before graph capture;
      * `compute_3d_position_ids` -> `get_rope_index`: the (3, b, seq) mrope positions from input_ids,
        mm_token_type_ids and image_grid_thw.
    Their results are small real int/fp32 tensors that the fake model reads."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as q25
    from transformers.models.qwen3_vl import modeling_qwen3_vl as q3

    def real(f):
        def g(*a, **k):
            with unset_fake_temporarily():
                return f(*a, **k)
        return g
    saved = []
    for cls in (q25.Qwen2_5_VLModel, q3.Qwen3VLModel):
        saved.append((cls, "compute_3d_position_ids", cls.compute_3d_position_ids))
        cls.compute_3d_position_ids = real(cls.compute_3d_position_ids)
    for mod in (q25, q3):
        for name in [n for n in vars(mod) if n.startswith("get_vision_") and callable(getattr(mod, n))]:
            saved.append((mod, name, getattr(mod, name)))
            setattr(mod, name, real(getattr(mod, name)))
    try:
        yield
    finally:
        for obj, name, orig in reversed(saved):
            setattr(obj, name, orig)


def vlm_inputs(cfg, case):
    """Real-looking processor outputs, built as real tensors (pixel_values separately, as fake).
    Returns dict(kw=model kwargs without pixel_values, pixel_shape, info=row fields)."""
    b, n_img, (h, w), n_text = case["batch"], case["images"], case["image_hw"], case["text_tokens"]
    g = torch.Generator().manual_seed(0)
    mt = cfg.model_type
    vis = cfg.vision_config
    kw = {}
    if mt in ("qwen2_5_vl", "qwen3_vl"):
        p, m, tp = vis.patch_size, vis.spatial_merge_size, vis.temporal_patch_size
        assert h % (p * m) == 0 and w % (p * m) == 0, (h, w, p * m)
        gh, gw = h // p, w // p
        per_img = gh * gw // (m * m)
        img_tok, vs, ve = cfg.image_token_id, cfg.vision_start_token_id, cfg.vision_end_token_id
        specials = {img_tok, vs, ve, cfg.video_token_id}
        n_markers = 2 * n_img
        pixel_shape = (b * n_img * gh * gw, vis.in_channels * tp * p * p)
        kw["image_grid_thw"] = torch.tensor([[1, gh, gw]] * (b * n_img), dtype=torch.long)
    elif mt == "gemma3":
        # Gemma3Processor: "\n\n" <start_of_image> mm_tokens_per_image × <image_soft_token>
        # <end_of_image> "\n\n" per image (the newlines are text here); token_type_ids mark the
        # image tokens (the bidirectional mask over each image)
        img_tok, vs, ve = cfg.image_token_index, cfg.boi_token_index, cfg.eoi_token_index
        specials = {img_tok, vs, ve}
        per_img = cfg.mm_tokens_per_image
        assert (h, w) == (vis.image_size, vis.image_size), "Gemma 3's SigLIP tower takes its own size"
        n_markers = 2 * n_img
        pixel_shape = (b * n_img, vis.num_channels, h, w)
    elif mt == "mistral3":
        # PixtralProcessor: the image resized to multiples of patch·merge (28 px); a row of
        # `cols` [IMG] tokens then [IMG_BREAK], the last break replaced by [IMG_END] (ids 12, 13
        # here: ordinary tokens to the model); image_sizes per image
        p, m = vis.patch_size, cfg.spatial_merge_size
        p = p[0] if isinstance(p, (list, tuple)) else p
        assert h % (p * m) == 0 and w % (p * m) == 0, (h, w, p * m)
        grid_rows, grid_cols = h // (p * m), w // (p * m)
        img_tok, brk, end = cfg.image_token_index, 12, 13
        specials = {img_tok, brk, end}
        per_img = grid_rows * grid_cols
        n_markers = grid_rows * n_img
        vs = ve = None
        pixel_shape = (b * n_img, vis.num_channels, h, w)
        kw["image_sizes"] = torch.tensor([[h, w]] * (b * n_img), dtype=torch.long)
    elif mt == "llava_next":
        # LlavaNextProcessor: anyres tiles of the tower's side beside a view of the whole, the
        # tiles' features unpadded to the image's shape and a newline a row (its own counting)
        from transformers.models.llava_next.processing_llava_next import LlavaNextProcessor
        from transformers.image_processing_utils import select_best_resolution
        proc = LlavaNextProcessor.__new__(LlavaNextProcessor)
        proc.patch_size, proc.num_additional_image_tokens = vis.patch_size, 1
        proc.image_processor = type("IP", (), dict(image_grid_pinpoints=cfg.image_grid_pinpoints))()
        side = vis.image_size
        per_img = proc._get_number_of_features(h, w, side, side) - (cfg.vision_feature_select_strategy == "default")
        bh, bw = select_best_resolution((h, w), cfg.image_grid_pinpoints)
        img_tok = cfg.image_token_index
        specials = {img_tok}
        n_markers = 0
        vs = ve = None
        pixel_shape = (b * n_img, 1 + (bh // side) * (bw // side), vis.num_channels, side, side)
        kw["image_sizes"] = torch.tensor([[h, w]] * (b * n_img), dtype=torch.long)
    else:  # llava
        img_tok = cfg.image_token_index
        specials = {img_tok}
        per_img = (vis.image_size // vis.patch_size) ** 2 + (0 if cfg.vision_feature_select_strategy == "default" else 1)
        assert (h, w) == (vis.image_size, vis.image_size), "LLaVA's CLIP tower takes its own size"
        n_markers = 0
        vs = ve = None
        pixel_shape = (b * n_img, vis.num_channels, h, w)
    vocab = cfg.get_text_config().vocab_size
    n_plain = n_text - n_markers
    assert n_plain >= 8

    def text(n):
        t = torch.randint(3, vocab, (n,), generator=g)
        for sp in specials:  # never a special id by chance
            t[t == sp] = 3
        return t

    rows, types_ = [], []
    for _ in range(b):
        seq, ty = [text(4)], [torch.zeros(4, dtype=torch.long)]
        for _ in range(n_img):
            if vs is not None:
                seq.append(torch.tensor([vs])); ty.append(torch.zeros(1, dtype=torch.long))
            if mt == "mistral3":
                grid = torch.full((grid_rows, grid_cols + 1), img_tok)
                grid[:, -1] = brk
                grid[-1, -1] = end
                seq.append(grid.flatten()); ty.append((grid.flatten() == img_tok).long())
            else:
                seq.append(torch.full((per_img,), img_tok)); ty.append(torch.ones(per_img, dtype=torch.long))
            if ve is not None:
                seq.append(torch.tensor([ve])); ty.append(torch.zeros(1, dtype=torch.long))
        seq.append(text(n_plain - 4)); ty.append(torch.zeros(n_plain - 4, dtype=torch.long))
        rows.append(torch.cat(seq)); types_.append(torch.cat(ty))
    ids = torch.stack(rows)
    kw["input_ids"] = ids
    if mt in ("qwen2_5_vl", "qwen3_vl"):
        kw["mm_token_type_ids"] = torch.stack(types_).to(torch.int32)
    if mt == "gemma3":
        kw["token_type_ids"] = torch.stack(types_)
    labels = ids.clone()
    labels[ids == img_tok] = -100
    info = dict(images=n_img, image_size=[h, w], image_tokens_per_image=per_img, text_tokens=n_text,
                image_tokens=n_img * per_img, seq=ids.shape[1], vision_frozen=True, vlm=True,
                pixel_values_shape=list(pixel_shape))
    return kw, labels, pixel_shape, info


def vlm_frozen_modules(model):
    mm = model.model
    if hasattr(mm, "visual"):  # Qwen: the tower holds the merger (and Qwen3-VL's deepstack mergers)
        return {"model.visual": mm.visual}
    out = {"model.vision_tower": mm.vision_tower, "model.multi_modal_projector": mm.multi_modal_projector}
    if getattr(mm, "image_newline", None) is not None:  # LLaVA-NeXT's learned row separator
        holder = torch.nn.Module()
        holder.image_newline = mm.image_newline
        out["model.image_newline"] = holder
    return out


def run_case_vlm(case):
    from transformers import AutoModelForImageTextToText
    cfg = load_config(case["config"])
    backend = case["backend"]
    fake = backend != "cpu-real"
    dtype = getattr(torch, case["dtype"])
    b = case["batch"]
    tcfg = cfg.get_text_config()
    L = getattr(tcfg, "num_hidden_layers", None) or sum(getattr(tcfg, "depths", None) or [0])
    torch.manual_seed(0)
    kw_real, labels, pixel_shape, info = vlm_inputs(cfg, case)
    out = dict(case=case["case"], config_file=f"configs/{case['config']}.json", batch=b, seq=info["seq"],
               dtype=case["dtype"], attn=case["attn"], mode=case["mode"], grad_ckpt=case["grad_ckpt"],
               backend=backend)
    out.update(info)
    out["text_tokens"] = info["seq"] - info["image_tokens"]
    if fake:
        out["vlm_index_ops"] = ("real CPU tensors: input_ids, mm_token_type_ids, image_grid_thw and what is computed "
                                "from them alone (cu_seqlens, window index, mrope position ids, placeholder masks); "
                                "a real bool mask indexing a fake tensor expanded to nonzero() indices")
    SDPA_LOG.clear()
    VLM_LOG.clear()
    fmode = FakeTensorMode(allow_non_fake_inputs=True) if fake else contextlib.nullcontext()
    emu = cuda_dispatch_emulation() if backend == "cuda-emu-fake" else contextlib.nullcontext()
    notrace = hf_not_tracing_under_fake() if fake else contextlib.nullcontext()
    realidx = RealIndexOps() if fake else contextlib.nullcontext()
    realpos = vlm_real_index_helpers() if fake else contextlib.nullcontext()
    t0 = time.time()
    with fmode, emu, notrace, realpos, realidx:
        ctx = no_trunc_normal_init() if fake else contextlib.nullcontext()
        with ctx:
            model = AutoModelForImageTextToText.from_config(cfg, attn_implementation=case["attn"], dtype=dtype)
        params = list(model.parameters())
        out["model_class"] = type(model).__name__
        out["n_params"] = sum(p.numel() for p in params)
        out["param_bytes"] = uniq_storage_bytes(params)
        _pbd = collections.Counter()
        for p in params:
            _pbd[str(p.dtype).replace("torch.", "")] += p.numel() * p.element_size()
        out["param_bytes_by_dtype"] = dict(_pbd)
        out["n_param_tensors"] = len(params)
        out["buffer_bytes"] = uniq_storage_bytes(list(model.buffers()))
        frozen = vlm_frozen_modules(model)
        out["frozen_modules"] = {k: sum(p.numel() for p in m.parameters()) for k, m in frozen.items()}
        lm = model.model.language_model
        out["n_params_language_model"] = sum(p.numel() for p in lm.parameters())
        out["n_params_lm_head"] = sum(p.numel() for p in model.lm_head.parameters())
        pixel_values = torch.randn(*pixel_shape, dtype=torch.float32)  # the processors' fp32 pixels
        kw = dict(kw_real, pixel_values=pixel_values)
        ids = kw["input_ids"]
        if case["mode"] == "infer":
            model.eval()
            for p_ in model.parameters():
                p_.requires_grad_(False)
            with torch.no_grad():
                mt = MemTracker()
                mt.track_external(model, *kw.values())
                with mt:
                    o = model(**kw, use_cache=True)
                    out["kv_cache_bytes"] = kv_cache_bytes(o.past_key_values)
                    out["kv_cache_logical_bytes"] = kv_cache_logical_bytes(o.past_key_values)
                    out["kv_cache_layer_shapes"] = kv_cache_shapes(o.past_key_values)
                    out["logits_bytes_returned"] = o.logits.untyped_storage().nbytes()
                out["peak_bytes"], out["peak_breakdown"] = mem_snapshot_peak(mt)
                out["peak_note"] = "forward only, no_grad, full logits kept"
                del o
            for k in ("grad_bytes", "optimizer_state_bytes", "optimizer_step_tensor_bytes",
                      "activation_saved_bytes", "activation_by_dtype"):
                out[k] = None
        else:
            model.train()
            for m in frozen.values():
                m.requires_grad_(False)
            trainable = [p for p in params if p.requires_grad]
            out["n_params_trainable"] = sum(p.numel() for p in trainable)
            out["n_params_frozen"] = out["n_params"] - out["n_params_trainable"]
            if case["grad_ckpt"]:
                model.gradient_checkpointing_enable()
            kw.update(labels=labels, use_cache=False)
            opt = torch.optim.AdamW(trainable, lr=1e-4, foreach=True if backend == "cuda-emu-fake" else None)
            rec = SavedRecorder(model, [ids, labels, pixel_values])
            # which packed tensors are still held once the forward has returned: a non-reentrant
            # checkpoint packs its inputs (NoopSaveInputs) even where nothing in the region needs a
            # gradient (a frozen tower), and that record dies with the region when nothing else holds it
            packed_refs = collections.defaultdict(list)
            _orig_pack = rec.pack

            def _pack(t, _orig=_orig_pack):
                packed_refs[t.untyped_storage()._cdata].append(weakref.ref(t))
                return _orig(t)
            rec.pack = _pack
            mt1 = MemTracker()
            mt1.track_external(model, opt, ids, labels, pixel_values)
            with mt1:
                with rec.active():
                    res = model(**kw)
                loss = res.loss
                out["logits_bytes_returned"] = res.logits.untyped_storage().nbytes()
                del res
                gc.collect()
                # held by the graph of the loss once the model's outputs are dropped (as before backward)
                held = collections.Counter()
                for k, r_ in rec.records.items():
                    if any(w() is not None for w in packed_refs.get(k, ())):
                        held[r_["module"]] += r_["nbytes"]
                rec_sum = rec.summary(L)
                rec.close()
                out.update(rec_sum)
                out["activation_held_after_forward_bytes"] = sum(held.values())
                out["activation_not_held_by_module"] = {
                    m_: v - held.get(m_, 0) for m_, v in rec_sum["activation_by_module"].items() if held.get(m_, 0) != v}
                del packed_refs
                loss.backward()
                del loss
                out["grad_bytes"] = uniq_storage_bytes([p.grad for p in params])
                nog = [p for p in params if p.grad is None]
                out["params_without_grad"] = sum(p.numel() for p in nog)
                out["params_without_grad_bytes"] = uniq_storage_bytes(nog)
                opt.step()
                st = opt.state
                out["optimizer_state_bytes"] = uniq_storage_bytes(
                    [st[p][k] for p in params if p in st for k in ("exp_avg", "exp_avg_sq")])
                out["optimizer_step_tensor_bytes"] = uniq_storage_bytes([st[p]["step"] for p in params if p in st])
                out["n_param_tensors_with_state"] = sum(1 for p in params if p in st)
                opt.zero_grad(set_to_none=True)
            out["peak_bytes_first_step"], _ = mem_snapshot_peak(mt1)
            del mt1
            mt2 = MemTracker()
            mt2.track_external(model, opt, ids, labels, pixel_values)
            with mt2:
                res = model(**kw)
                loss = res.loss
                del res
                loss.backward()
                del loss
                opt.step()
                opt.zero_grad(set_to_none=True)
            out["peak_bytes"], out["peak_breakdown"] = mem_snapshot_peak(mt2)
            out["peak_note"] = ("MemTracker peak over a 2nd full step (fwd+bwd+AdamW.step+zero_grad), "
                                "optimizer states pre-existing; model outputs freed before backward; "
                                "vision tower and projector frozen")
            out["kv_cache_bytes"] = None
            del mt2, opt
        out["sdpa_kernels"] = dict(SDPA_LOG) if backend == "cuda-emu-fake" else None
        out["vlm_shim_log"] = dict(VLM_LOG)
        del model, params
    out["seconds"] = round(time.time() - t0, 2)
    out["torch_version"] = torch.__version__
    out["transformers_version"] = transformers.__version__
    gc.collect()
    return out

# --------------------------------------------------------------------------------------
# Sanity checks
# --------------------------------------------------------------------------------------
PUBLISHED_FAMILY = {"qwen3-0.6b": 596049920, "qwen3-30b-a3b": 30532122624, "gemma-2b": 2506172416,
                    "gemma-2-2b": 2614341888, "gemma-3-1b": 999885952, "gemma-3-4b": 4300079472,
                    "phi-3-mini-4k": 3821079552, "olmo-2-1b": 1484916736, "pythia-1.4b": 1414647808,
                    "falcon-7b": 6921720704, "starcoder2-3b": 3030371328, "granite-3.0-2b": 2533531648,
                    "smollm3-3b": 3075098624, "deepseek-v2-lite": 15706484224, "deepseek-v3": 671026419200,
                    "gpt-oss-20b": 20914757184, "vit-base-patch16-224": 86567656,
                    "gemma-2-9b": 9241705984, "olmo-2-7b": 7298617344,
                    "phi-1.5": 1418270720, "phi-2": 2779683840}


def checks(rows, cfgs):
    lines = []

    def ok(cond, msg):
        lines.append(("PASS " if cond else "FAIL ") + msg)

    published = {"gpt2": 124439808, "llama2-7b": 6738415616, "llama3-8b": 8030261248,
                 "mistral-7b": 7241732096, "mixtral-8x7b": 46702792704}
    for r in rows:
        name = r["case"]
        cfgname = os.path.basename(r["config_file"])[:-5]
        cfg = cfgs[cfgname]
        bpe = 4 if r["dtype"] == "float32" else 2
        if "error" in r:
            lines.append(f"SKIP {name}: error {r['error'][:120]}")
            continue
        if r.get("param_bytes_by_dtype") and len(r["param_bytes_by_dtype"]) > 1:  # _keep_in_fp32_modules
            lines.append(f"INFO {name}: mixed parameter dtypes {r['param_bytes_by_dtype']}")
        else:
            ok(r["param_bytes"] == bpe * r["n_params"], f"{name}: param_bytes == {bpe}*n_params")
        if cfgname in PUBLISHED_FAMILY:  # informational: commonly quoted totals (HF safetensors metadata)
            pub = PUBLISHED_FAMILY[cfgname]
            lines.append(f"INFO {name}: n_params {r['n_params']:,} vs quoted {pub:,} (diff {r['n_params'] - pub:+,})")
        if cfgname in published:
            ok(r["n_params"] == published[cfgname],
               f"{name}: n_params {r['n_params']:,} == published {published[cfgname]:,}")
        if r["mode"] == "train":
            trained = r["param_bytes"] - r.get("params_without_grad_bytes", 0)
            ntens = r.get("n_param_tensors_with_state", r["n_param_tensors"])
            ok(r["grad_bytes"] == trained, f"{name}: grad_bytes == bytes of params that get a grad ({trained})")
            ok(r["optimizer_state_bytes"] == 2 * trained, f"{name}: AdamW states == 2*trained param bytes")
            ok(r["optimizer_step_tensor_bytes"] == 4 * ntens,
               f"{name}: step tensors == 4 B * {ntens} param tensors")
        if r["mode"] == "infer" and cfg.model_type not in VISION + ENCODERS:
            t = cfg.get_text_config()
            if any(x != "full_attention" for x in (getattr(t, "layer_types", None) or [])) or not hasattr(t, "num_key_value_heads"):
                # recurrent layers hold a state, not K/V: no closed form checked here
                continue
            if cfg.model_type == "gpt2":
                kvh, hd = cfg.n_head, cfg.n_embd // cfg.n_head
                per_tok = 2 * kvh * hd
            elif t.model_type in ("deepseek_v2", "deepseek_v3"):  # HF 5.24 caches the MLA latent: (kv_lora_rank) + k_pe (rope dim), 1 head
                per_tok = t.kv_lora_rank + t.qk_rope_head_dim
            elif t.model_type == "falcon":
                hd = t.hidden_size // t.num_attention_heads
                # HF 5.24 new_decoder_architecture broadcasts K/V to all heads before caching
                kvh = (t.num_attention_heads if t.new_decoder_architecture else (1 if t.multi_query else t.num_attention_heads))
                per_tok = 2 * kvh * hd
            elif t.model_type == "gpt_neox":
                per_tok = 2 * t.hidden_size
            else:
                kvh = t.num_key_value_heads
                hd = getattr(t, "head_dim", None) or t.hidden_size // t.num_attention_heads
                per_tok = 2 * kvh * hd
            exp = t.num_hidden_layers * r["batch"] * r["seq"] * per_tok * bpe
            ok(r["kv_cache_bytes"] == exp, f"{name}: kv_cache {r['kv_cache_bytes']} == L*b*s*(K+V per token)*B = {exp}"
               f" (logical {r.get('kv_cache_logical_bytes')})")
    # fake-vs-real validation
    for r in rows:
        if "fake_cpu_activation_saved_bytes" in r:
            ok(r["fake_cpu_activation_saved_bytes"] == r["activation_saved_bytes"],
               f"{r['case']}: cpu-fake activations {r['fake_cpu_activation_saved_bytes']} == cpu-real "
               f"{r['activation_saved_bytes']}")
    # Korthikanti et al. 2022, per layer, 16-bit: s*b*h*(34 + 5*a*s/h) bytes
    for r in rows:
        cfgname = os.path.basename(r["config_file"])[:-5]
        cfg = cfgs[cfgname]
        if cfg.model_type != "gpt2" or r["mode"] != "train" or r["attn"] != "eager" or "error" in r:
            continue
        s, b, h, a, L = r["seq"], r["batch"], cfg.n_embd, cfg.n_head, cfg.n_layer
        layer_bytes = sum(v for k, v in r["activation_by_module"].items() if k.startswith("transformer.h."))
        per_layer = layer_bytes / L
        k16 = s * b * h * (34 + 5 * a * s / h)
        k32 = s * b * h * (66 + 9 * a * s / h)  # same accounting, 4-byte elements, 1-byte masks
        msg = (f"INFO {r['case']}: per-layer saved {per_layer / MiB:.2f} MiB; Korthikanti 16-bit "
               f"{k16 / MiB:.2f} MiB ratio {per_layer / k16:.3f}")
        if r["dtype"] == "float32":
            msg += f"; fp32-adapted (66+9as/h) {k32 / MiB:.2f} MiB ratio {per_layer / k32:.3f}"
        lines.append(msg)
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--group", default="all", choices=["A", "B", "F", "G", "H", "L", "M", "N", "O", "P", "Q", "S", "K", "R", "I", "U", "W", "X", "all"])
    ap.add_argument("--only", default=None, help="substring filter on case names")
    ap.add_argument("--out", default=os.path.join(HERE, "reference.json"))
    ap.add_argument("--details", default=None,
                    help="also write per-case breakdowns (by module/op, top tensors) here")
    ap.add_argument("--partial", action="store_true", help="rewrite the output files after every case")
    ap.add_argument("--case-timeout", type=int, default=0,
                    help="seconds; a case running longer is abandoned and recorded as an error (0: no limit)")
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    cases = (cases_A() if args.group in ("A", "all") else []) + (cases_B() if args.group in ("B", "all") else [])
    cases += (cases_F() if args.group == "F" else []) + (cases_G() if args.group == "G" else [])
    cases += cases_H() if args.group == "H" else []
    cases += cases_P() if args.group == "P" else []
    cases += cases_M() if args.group == "M" else []
    cases += cases_N() if args.group == "N" else []
    cases += cases_L() if args.group == "L" else []
    cases += cases_O() if args.group == "O" else []
    cases += cases_S() if args.group == "S" else []
    cases += cases_K() if args.group == "K" else []
    cases += cases_R() if args.group == "R" else []
    cases += cases_I() if args.group == "I" else []
    cases += cases_Q() if args.group == "Q" else []
    cases += cases_U() if args.group == "U" else []
    cases += cases_W() if args.group == "W" else []
    cases += cases_X() if args.group == "X" else []
    if args.only:
        cases = [c for c in cases if args.only in c["case"]]
    write_configs({c["config"] for c in cases})
    rows = []
    for c in cases:
        print(f"=== {c['case']} [{c['backend']}]", flush=True)
        try:
            if args.case_timeout:
                signal.signal(signal.SIGALRM, _case_timeout)
                signal.alarm(args.case_timeout)
            r = run_case(c)
            if args.case_timeout:
                signal.alarm(0)
            if c["validate_fake"] and c["mode"] == "train":
                v = run_case(dict(c, backend="cpu-fake"))
                r["fake_cpu_activation_saved_bytes"] = v["activation_saved_bytes"]
                r["fake_cpu_peak_bytes"] = v["peak_bytes"]
        except Exception as e:  # record and keep going
            if args.case_timeout:
                signal.alarm(0)
            traceback.print_exc()
            r = dict(case=c["case"], config_file=f"configs/{c['config']}.json", batch=c["batch"],
                     seq=c["seq"], dtype=c["dtype"], attn=c["attn"], mode=c["mode"],
                     grad_ckpt=c["grad_ckpt"], backend=c["backend"],
                     error=f"{type(e).__name__}: {e}", torch_version=torch.__version__,
                     transformers_version=transformers.__version__)
        rows.append(r)
        if args.partial:
            _write(args, rows, ["(partial: checks not run yet)"])
        if "error" not in r:
            act = r.get("activation_saved_bytes")
            print(f"    n_params={r['n_params']:,} act={act / MiB if act is not None else float('nan'):.2f} MiB "
                  f"kv={r.get('kv_cache_bytes')} peak={r.get('peak_bytes', 0) / MiB:.1f} MiB "
                  f"({r['seconds']}s) sdpa={r.get('sdpa_kernels')}", flush=True)
    cfgs = {n: load_config(n) for n in {os.path.basename(r["config_file"])[:-5] for r in rows}}
    lines = checks(rows, cfgs)
    print("\n".join(lines))
    details = _write(args, rows, lines)
    print(f"wrote {args.out} and {details}")


class CaseTimeout(Exception):
    pass


def _case_timeout(signum, frame):
    raise CaseTimeout("skipped: ran longer than --case-timeout")


def _write(args, rows, lines):
    detail_keys = ("activation_by_module", "activation_by_op", "activation_by_module_op", "top_saved",
                   "peak_breakdown")
    slim = [{k: v for k, v in r.items() if k not in detail_keys} for r in rows]
    with open(args.out, "w") as f:
        json.dump(slim, f, indent=1)
    details = args.details or os.path.splitext(args.out)[0] + "_details.json"
    with open(details, "w") as f:
        json.dump(dict(rows=rows, checks=lines, python=platform.python_version()), f, indent=1)
    return details


if __name__ == "__main__":
    main()
