#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A data-parallel training loop in Python, as Horovod runs one: every rank
trains the same numpy MLP on its own shard of a generated, seeded data set
and averages its gradients with mpi4py's Allreduce, one call per gradient
bucket (the layers in reverse order, as the backward pass produces them).

Per run (L layers, S steps) every rank calls MPI_Bcast L times (the initial
weights from rank 0), then per step L MPI_Allreduce of the layers'
gradients (float32, in place) and one of the loss (1 double). stdout carries
no timing.

  mpirun -np 4 python3 tests/mpi/dp_train.py --steps 20 --hidden 1024
"""
import argparse
import sys

import numpy as np
from mpi4py import MPI


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--inputs", type=int, default=512)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--batch", type=int, default=64, help="samples per rank per step")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()

    rng = np.random.default_rng(a.seed)
    sizes = [a.inputs, a.hidden, a.hidden, a.classes]
    weights = [(rng.standard_normal((n, m)) / np.sqrt(n)).astype(np.float32) for n, m in zip(sizes, sizes[1:])]
    for w in weights:
        comm.Bcast(w, root=0)
    # This rank's shard: a fixed linear teacher labels random inputs.
    data = np.random.default_rng(a.seed * 1000 + rank)
    teacher = np.random.default_rng(a.seed + 7).standard_normal((a.inputs, a.classes)).astype(np.float32)

    loss_sum = np.zeros(1)
    for step in range(a.steps):
        x = data.standard_normal((a.batch, a.inputs)).astype(np.float32)
        y = np.argmax(x @ teacher, axis=1)
        # Forward.
        acts = [x]
        for w in weights[:-1]:
            acts.append(np.maximum(acts[-1] @ w, 0))
        logits = acts[-1] @ weights[-1]
        logits -= logits.max(axis=1, keepdims=True)
        prob = np.exp(logits)
        prob /= prob.sum(axis=1, keepdims=True)
        loss = -np.log(prob[np.arange(a.batch), y] + 1e-9).mean()
        # Backward, averaging each layer's gradient as soon as it exists.
        d = prob
        d[np.arange(a.batch), y] -= 1
        d /= a.batch
        for layer in range(len(weights) - 1, -1, -1):
            grad = acts[layer].T @ d
            if layer:
                d = (d @ weights[layer].T) * (acts[layer] > 0)
            comm.Allreduce(MPI.IN_PLACE, grad, op=MPI.SUM)
            weights[layer] -= a.lr * grad / size
        loss_sum[0] = loss
        comm.Allreduce(MPI.IN_PLACE, loss_sum, op=MPI.SUM)
        if rank == 0 and (step + 1) % 10 == 0:
            print("step %d loss %.4f" % (step + 1, loss_sum[0] / size))
    if rank == 0:
        print("dp_train: %d ranks, %d steps, %d parameters" % (size, a.steps, sum(w.size for w in weights)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
