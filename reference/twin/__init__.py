"""The PyTorch twin of noeira-bench, as a package; reference/torch_nn_reference.py is its
entry point (reference/README.md). One job per module:

  common      errors (TwinError, Unavailable), the stdout JSON protocol, logging
  cli         argument parsing and main(): exit codes, error / unavailable rows
  recipe      recipe loading and checks, recipe_hash, learning-rate schedules
  data        MNIST / Fashion-MNIST (IDX) and CIFAR-10 (binary) readers, normalisation
  layers      one builder per recipe layer type -> named torch modules
  blocks      the torch modules the builders need beyond torch.nn (ResNet block, Dropout)
  init        Philox initial weights
  checkpoint  parity mode: parameters and buffers from a noeira checkpoint
  optim       optimizer (fused > foreach > for-loop) and loss
  torch_env   device, dtype, TF32 and determinism switches, version tests
  augment     random crop + horizontal flip of an epoch's copy of the training set
  train       the timed training loop and the evaluation
  run         one run: set-up -> train -> the result row; the --dump-augmented path

  the gpt family (language models over a token corpus, step-based):
  text        TinyShakespeare (character level): vocabulary, ids, train/val split
  gpt         nanoGPT's GPT (tied head), its Philox normal init, AdamW parameter groups
  lm_train    the timed loop (Philox batch windows, grad clipping), validation, batch dump
  lm_run      set-up of a gpt run and the --dump-batches path
  dist        data parallelism over N ranks (--ranks, --zero): mp.spawn, DDP, ZeRO-1

  the vit family (Vision Transformer classifiers; run, train and data as above):
  vit         the ViT (gpt's Block, non-causal, MLP mlp_ratio * width), its params and init

common, cli, recipe, run and dist import neither torch nor numpy at import time (nor does text
import torch); the others
are imported by run after it has checked that torch and numpy import, so a missing torch
is a clean error row.
"""
import os
import sys

# philox.py lives beside this package (it is also a CLI of its own).
REFERENCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REFERENCE_DIR not in sys.path:
    sys.path.insert(0, REFERENCE_DIR)
