#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""For scripts/gpu-check.sh: a few steps of PyTorch DDP training of
torchvision's ResNet-50 (random weights, generated data) with the NCCL
backend, one process per GPU under torchrun. Prints the loss of every step on
rank 0 (deterministic, so the output can be compared with and without the
recorder) and nothing else on stdout."""
import argparse
import os

import torch
import torch.distributed as dist
import torchvision


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    try:  # device_id (PyTorch >= 2.3) makes the NCCL communicator at once
        dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    except TypeError:
        dist.init_process_group("nccl")
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    model = torchvision.models.resnet50(weights=None).cuda()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    gen = torch.Generator(device="cuda").manual_seed(1 + dist.get_rank())
    for step in range(args.steps):
        x = torch.randn(args.batch, 3, 224, 224, device="cuda", generator=gen)
        y = torch.randint(0, 1000, (args.batch,), device="cuda", generator=gen)
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if dist.get_rank() == 0:
            print(f"step {step} loss {loss.item():.3f}", flush=True)
    torch.cuda.synchronize()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
