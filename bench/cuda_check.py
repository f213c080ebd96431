"""For the GPU comparison scripts: stop before anything heavy where hpcml has no CUDA device.

The message starts with "no CUDA device" and the exit status is 2, which the GPU suite records
as a skip (docs/gpu-suite.md) rather than a failure when it rehearses on a machine without a GPU.
"""

import sys

import hpcml


def require_cuda(program):
    status = hpcml.cuda_status()
    if status["status"] != "ok":
        print(f"{program}: no CUDA device: {status['message']}", file=sys.stderr)
        sys.exit(2)
